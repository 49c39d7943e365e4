"""A claim belongs to the block that says it (issue 23): a neighbour's fact filed under a block is
not drawn from it; a reference resolved from the context is (``aclarai.agents.llm.grounding``)."""

from __future__ import annotations

from aclarai.agents.llm.grounding import drawn_from


def test_the_checkout_outage_is_not_drawn_from_the_tls_certificate_block() -> None:
    block = "gina: The root cause was an expired TLS certificate on the payments gateway."
    claim = "The checkout service was down for 47 minutes on June 6, from 14:02 to 14:49 UTC."

    assert not drawn_from(claim, block)


def test_a_pronoun_resolved_from_context_is_drawn_from_its_block() -> None:
    assert drawn_from("Ana Lima moved to Porto in 2019.", "She moved there in 2019.")


def test_a_claim_restating_its_block_is_drawn_from_it() -> None:
    block = "gina: The root cause was an expired TLS certificate on the payments gateway."

    assert drawn_from("The root cause was an expired TLS certificate.", block)
    assert drawn_from("The payments gateway had an expired TLS certificate.", block)


def test_a_neighbours_fact_with_one_shared_word_is_not_drawn_from_the_block() -> None:
    block = "She moved there in 2019. I love it! The lab employs 40 people."

    assert not drawn_from("Ana Lima leads the Porto genomics lab.", block)


def test_a_claim_with_no_content_words_is_not_judged_here() -> None:
    assert drawn_from("It is.", "The bridge opened in 1998.")


def test_words_the_context_explains_do_not_count_against_the_claim() -> None:
    # A short chat turn whose "it" the model resolved from the turn before.
    block = "bob: Yes, let's do it on Friday."
    context = ["alice: Can we roll back the payments deploy?"]
    claim = "Bob agreed to roll back the payments deploy on Friday."

    assert not drawn_from(claim, block)
    assert drawn_from(claim, block, context)


def test_a_neighbours_fact_is_dropped_however_well_the_context_explains_it() -> None:
    context = [
        "frank: The checkout service was down for 47 minutes on June 6, from 14:02 to 14:49 UTC."
    ]
    claim = "The checkout service was down for 47 minutes on June 6, from 14:02 to 14:49 UTC."
    block = "gina: The root cause was an expired TLS certificate on the payments gateway."

    assert not drawn_from(claim, block, context)
