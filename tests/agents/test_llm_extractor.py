"""Claimify-style extraction, one call per block, through the real client stack on a scripted
server; the context is the nearest neighbours, and a claim of theirs is never the block's."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from aclarai.agents.base import ExtractionInput, Utterance, claim_id
from aclarai.agents.cache import ResultCache
from aclarai.agents.llm.agents import LLMClaimExtractor
from aclarai.agents.llm.client import LLMClient
from aclarai.agents.llm.fitting import CONTEXT_CHARS, CUT_MARKER, nearest_context
from aclarai.agents.llm.prompts import DATA_RULE
from aclarai.parsers import EvaluatorUnavailable
from tests.helpers.scripted_llm import ScriptedLLMServer, json_reply, status

BLOCK = Utterance("blk-7", "She moved there in 2019. I love it! The lab employs 40 people.")
ITEM = ExtractionInput(
    block=BLOCK,
    before=(
        Utterance("blk-5", "Dr. Ana Lima leads the Porto genomics lab."),
        Utterance("blk-6", "Ana grew up in Lisbon."),
    ),
    after=(Utterance("blk-8", "Next week: the annual review."),),
)
CLAIMS = [
    "Ana Lima moved to Porto in 2019.",
    "The Porto genomics lab employs 40 people.",
    "Ana Lima leads the Porto genomics lab.",
]
"""What a model may reply for BLOCK: its two facts, references resolved, and blk-5's fact."""
DRAWN = CLAIMS[:2]


@pytest.fixture
def make_extractor(make_client: Callable[..., LLMClient]) -> Callable[..., LLMClaimExtractor]:
    def create(client: LLMClient | None = None, **options: Any) -> LLMClaimExtractor:
        return LLMClaimExtractor(client or make_client(), model="claimify-model", **options)

    return create


def test_one_call_gives_claims_with_deterministic_ids(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    llm_server.queue(json_reply({"claims": [*DRAWN, DRAWN[0], "  "]}))

    claims = make_extractor().extract(ITEM)

    assert [c.text for c in claims] == DRAWN
    assert [c.id for c in claims] == [claim_id("blk-7", text) for text in DRAWN]
    assert {c.block_id for c in claims} == {"blk-7"}
    [request] = llm_server.chat_requests
    assert request.body["model"] == "claimify-model"
    assert request.body["response_format"]["json_schema"]["name"] == "ExtractionOut"


def test_a_claim_of_a_context_block_is_dropped_with_a_log_line(
    llm_server: ScriptedLLMServer,
    make_extractor: Callable[..., LLMClaimExtractor],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Blk-5 says "Ana Lima leads the Porto genomics lab.", not blk-7: the model filed a
    neighbour's fact under the target block, and that claim must not reach the graph."""
    llm_server.queue(json_reply({"claims": CLAIMS}))

    with caplog.at_level(logging.INFO, logger="aclarai.agents.llm.agents"):
        claims = make_extractor().extract(ITEM)

    assert [c.text for c in claims] == DRAWN
    assert "Ana Lima leads the Porto genomics lab." not in [c.text for c in claims]
    dropped = [r.getMessage() for r in caplog.records if "not drawn from the block" in r.message]
    assert dropped == [
        "block blk-7: dropped a claim not drawn from the block: "
        "'Ana Lima leads the Porto genomics lab.'"
    ]


def test_window_reaches_the_model_as_delimited_context_after_the_target(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    llm_server.queue(json_reply({"claims": CLAIMS}))
    make_extractor().extract(ITEM)

    [request] = llm_server.chat_requests
    target = f'<untrusted kind="target_block">\n{BLOCK.text}\n</untrusted>'
    before = (
        '<untrusted kind="context">\nDr. Ana Lima leads the Porto genomics lab.\n\n'
        "Ana grew up in Lisbon.\n</untrusted>"
    )
    after = '<untrusted kind="context">\nNext week: the annual review.\n</untrusted>'
    user = request.user_text
    assert user.startswith(f"TARGET block:\n{target}\n"), "what changes with the block first"
    assert user.index(target) < user.index(before) < user.index(after)
    assert request.system_text.endswith(DATA_RULE)


def test_the_system_message_is_the_same_for_every_block_of_every_note(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    llm_server.responder = lambda _request: json_reply({"claims": []})
    other_note = ExtractionInput(
        Utterance("blk-91", "carol: Migration 0042 times out after 300 seconds."),
        after=(Utterance("blk-92", "dana: Sprint 18 ends on June 19."),),
    )

    make_extractor().extract_batch([ITEM, ExtractionInput(BLOCK), other_note])

    systems = {request.messages[0]["content"] for request in llm_server.chat_requests}
    assert len(llm_server.chat_requests) == 3
    assert len(systems) == 1, "a prompt cache serves the instructions of every block"
    assert [m["role"] for m in llm_server.chat_requests[0].messages] == ["system", "user"]


def test_nothing_verifiable_costs_one_call(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    llm_server.queue(json_reply({"claims": []}))

    assert make_extractor().extract(ITEM) == []
    assert len(llm_server.chat_requests) == 1


def test_a_block_whose_every_claim_is_the_contexts_has_none(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    llm_server.queue(
        json_reply({"claims": ["Ana Lima leads the Porto genomics lab.", "Ana grew up in Lisbon."]})
    )

    assert make_extractor().extract(ITEM) == []
    assert len(llm_server.chat_requests) == 1


@pytest.mark.parametrize(
    "text",
    [
        "1. Open **Settings** and click **Restore default settings**.",
        "Edit in GitHub | Copy this note | Download this vault",
        "Does the one-day jump show up in spaced-repetition data?",
        "Documentation: https://help.example.org/guide",
        "「設定」を開きます。",
        "2. Bake for 20 minutes with the lid on.",
        "3. Das Öl in einem großen Topf erwärmen.",
    ],
)
def test_a_block_that_states_nothing_costs_no_call(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor], text: str
) -> None:
    item = ExtractionInput(Utterance("blk-1", text), conversation=False)
    assert make_extractor().extract(item) == []
    assert llm_server.chat_requests == []


def test_a_step_beside_a_statement_is_asked(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    llm_server.queue(json_reply({"claims": ["Sync keeps 12 months of history."]}))
    text = "Open **Settings**. Sync keeps 12 months of history."
    claims = make_extractor().extract(ExtractionInput(Utterance("blk-1", text)))
    assert [c.text for c in claims] == ["Sync keeps 12 months of history."]
    assert len(llm_server.chat_requests) == 1


def test_a_reply_that_copies_a_step_an_opinion_or_a_question_gives_no_claim(
    llm_server: ScriptedLLMServer,
    make_extractor: Callable[..., LLMClaimExtractor],
    caplog: pytest.LogCaptureFixture,
) -> None:
    llm_server.queue(
        json_reply(
            {
                "claims": [
                    "Open Settings.",
                    "Sync keeps 12 months of history.",
                    "Three reviews a week is too many.",
                    "Is the history kept?",
                ]
            }
        )
    )
    text = (
        "Open **Settings**. Sync keeps 12 months of history. Three reviews a week is too many. "
        "Is the history kept?"
    )
    with caplog.at_level(logging.INFO, logger="aclarai.agents.llm.agents"):
        claims = make_extractor().extract(ExtractionInput(Utterance("blk-1", text)))
    assert [c.text for c in claims] == ["Sync keeps 12 months of history."]
    dropped = [r.getMessage() for r in caplog.records if "dropped a reply" in r.getMessage()]
    assert [m.split(": '")[0] for m in dropped] == [
        "block blk-1: dropped a reply read as instruction",
        "block blk-1: dropped a reply read as opinion",
        "block blk-1: dropped a reply read as question",
    ]


def test_a_key_whose_value_states_it_is_asked(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    """The value alone ("AES-256 using GCM") is a label; with its key it states a fact."""
    claim = "Obsidian uses AES-256 with Galois/Counter Mode."
    llm_server.queue(json_reply({"claims": [claim]}))
    text = "- **Encryption algorithm:** AES-256 using [GCM](https://example.org/gcm)"
    claims = make_extractor().extract(ExtractionInput(Utterance("blk-1", text), conversation=False))
    assert [c.text for c in claims] == [claim]
    assert len(llm_server.chat_requests) == 1


def test_blank_block_costs_nothing(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    assert make_extractor().extract(ExtractionInput(Utterance("blk-0", "  \n"))) == []
    assert llm_server.chat_requests == []


def test_unchanged_block_is_not_extracted_twice(
    llm_server: ScriptedLLMServer,
    make_client: Callable[..., LLMClient],
    make_extractor: Callable[..., LLMClaimExtractor],
    make_cache: Callable[..., ResultCache],
) -> None:
    llm_server.queue(json_reply({"claims": CLAIMS}))
    first = make_extractor(cache=make_cache()).extract(ITEM)

    client = make_client()
    second = make_extractor(client, cache=make_cache()).extract(ITEM)

    assert second == first
    assert [c.text for c in second] == DRAWN, "the reply is cached, the check runs again"
    assert len(llm_server.chat_requests) == 1
    usage = client.usage.snapshot()
    assert (usage["calls"], usage["cache_hits"]) == (0, 1)


def test_changed_window_is_extracted_again(
    llm_server: ScriptedLLMServer,
    make_extractor: Callable[..., LLMClaimExtractor],
    make_cache: Callable[..., ResultCache],
) -> None:
    llm_server.responder = lambda _request: json_reply({"claims": []})
    cache = make_cache()
    make_extractor(cache=cache).extract(ITEM)

    moved = ExtractionInput(ITEM.block, before=ITEM.before[:1], after=ITEM.after)
    make_extractor(cache=cache).extract(moved)

    assert len(llm_server.chat_requests) == 2


def test_a_change_beyond_the_nearest_context_costs_nothing(
    llm_server: ScriptedLLMServer,
    make_extractor: Callable[..., LLMClaimExtractor],
    make_cache: Callable[..., ResultCache],
) -> None:
    llm_server.responder = lambda _request: json_reply({"claims": []})
    near = Utterance("blk-6", "Ana grew up in Lisbon and studied there. " * 10)
    assert len(near.text) > CONTEXT_CHARS
    cache = make_cache()
    make_extractor(cache=cache).extract(ExtractionInput(BLOCK, before=(ITEM.before[0], near)))

    far_edited = Utterance("blk-5", "Dr. Ana Lima leads the Lisbon genomics lab.")
    make_extractor(cache=cache).extract(ExtractionInput(BLOCK, before=(far_edited, near)))

    [request] = llm_server.chat_requests
    assert "Porto" not in request.user_text, "the far block never reached the model"


def test_failure_is_raised_after_the_other_blocks_are_done(
    llm_server: ScriptedLLMServer,
    make_client: Callable[..., LLMClient],
    make_cache: Callable[..., ResultCache],
) -> None:
    cache = make_cache()
    extractor = LLMClaimExtractor(make_client(max_concurrency=1), model="m", cache=cache)
    good = ExtractionInput(Utterance("blk-1", "Nothing to check here."))
    llm_server.queue(status(503), status(503), status(503), json_reply({"claims": []}))

    with pytest.raises(EvaluatorUnavailable):
        extractor.extract_batch([ITEM, good])

    assert len(cache) == 1, "the block that worked is cached"
    llm_server.queue(json_reply({"claims": CLAIMS}))
    claims = extractor.extract_batch([ITEM, good])
    assert [len(c) for c in claims] == [len(DRAWN), 0]
    assert len(llm_server.chat_requests) == 4 + 1


def test_nearest_context_takes_the_nearest_first_and_cuts_the_first_that_overflows() -> None:
    before = ["b1 " * 50, "b2 " * 20, "b3 " * 10]
    after = ["a1 " * 10, "a2 " * 30, "a3 " * 5]

    kept_before, kept_after = nearest_context(before, after, 200)

    # b3 (30), a1 (30), b2 (60): 120 kept; a2 (90) is cut to the 80 left; a3, b1 never fit.
    assert kept_before == [before[1].strip(), before[2].strip()]
    assert kept_after[0] == after[0].strip()
    assert len(kept_after) == 2 and kept_after[1].endswith(CUT_MARKER)
    assert kept_after[1].startswith("a2 a2")
    assert sum(map(len, kept_before)) + len(kept_after[0]) + len(kept_after[1]) <= 200 + len(
        CUT_MARKER
    )


def test_nearest_context_keeps_a_small_window_whole_and_leaves_out_blank_blocks() -> None:
    assert nearest_context(["one.", "  ", "two."], ["three."], CONTEXT_CHARS) == (
        ["one.", "two."],
        ["three."],
    )
    assert nearest_context([], [], CONTEXT_CHARS) == ([], [])


def test_nearest_context_leaves_out_a_cut_too_short_to_say_anything() -> None:
    kept_before, kept_after = nearest_context(["x" * 60], ["y " * 100], 100)

    assert kept_before == ["x" * 60]
    assert kept_after == [], "40 characters left: a cut that short says nothing"
