"""The offline claim extractor: which sentences become claims, speaker resolution, stable ids."""

from __future__ import annotations

import pytest

from aclarai.agents import (
    Claim,
    ExtractionInput,
    OfflineClaimExtractor,
    Utterance,
    claim_id,
)


def claims_of(text: str, block_id: str = "blk-1") -> list[Claim]:
    return OfflineClaimExtractor().extract(ExtractionInput(Utterance(block_id, text)))


def texts_of(text: str) -> list[str]:
    return [c.text for c in claims_of(text)]


def test_tier1_utterance_gives_one_claim_per_declarative_sentence() -> None:
    text = "alice: The deploy to staging failed twice on Tuesday.\nIt failed again this morning."
    assert texts_of(text) == [
        "The deploy to staging failed twice on Tuesday.",
        "It failed again this morning.",
    ]


@pytest.mark.parametrize(
    ("utterance", "claim"),
    [
        (
            "bob: I rolled back to v2.3 and it is stable now.",
            "bob rolled back to v2.3 and it is stable now.",
        ),
        ("bob: I'm on call this week.", "bob is on call this week."),
        ("bob: I've restarted the database twice.", "bob has restarted the database twice."),
        (
            "bob: I need two more days for the migration.",
            "bob needs two more days for the migration.",
        ),
        (
            "bob: I don't have access to the Grafana board.",
            "bob doesn't have access to the Grafana board.",
        ),
        (
            "bob: I just fixed the flaky test in auth.py.",
            "bob just fixed the flaky test in auth.py.",
        ),
        ("bob: We're blocked on the infra team.", "bob's team is blocked on the infra team."),
        ("bob: We shipped 9 of the 11 tickets.", "bob's team shipped 9 of the 11 tickets."),
        ("bob: Our velocity dropped in May.", "bob's team's velocity dropped in May."),
        ("bob: The US office called me on Monday.", "The US office called bob on Monday."),
        ("bob: Dana and I moved it (my script).", "Dana and bob moved it (bob's script)."),
        ("bob: The fix was mine-only.", "The fix was bob's-only."),
        ("bob: Some users in Mumbai bought time.", "Some users in Mumbai bought time."),
    ],
)
def test_first_person_resolves_to_the_speaker(utterance: str, claim: str) -> None:
    assert texts_of(utterance) == [claim]


def test_markdown_decoration_and_links_are_removed() -> None:
    text = "- carol: I moved **the cron job** to [[Ops Runbook|the runbook]] and [docs](http://x)."
    assert texts_of(text) == ["carol moved the cron job to the runbook and docs."]


def test_each_line_keeps_its_own_speaker() -> None:
    text = "alice: I deployed v2.4 to staging.\nbob: I rolled it back at 14:00."
    assert texts_of(text) == ["alice deployed v2.4 to staging.", "bob rolled it back at 14:00."]


@pytest.mark.parametrize(
    "utterance",
    [
        "alice: Can you check the logs?",
        "alice: What is the plan for the migration",
        "alice: Is it down again",
        "alice: Thanks, sounds good!",
        "alice: Hi everyone, good morning.",
        "alice: Check the logs before lunch.",
        "alice: Please review the pull request.",
        "alice: Let's roll back now.",
        "alice: That's awesome!",
        "alice: I think it is really great.",
        "alice: Stable now.",
        "alice: Yes, but only for enterprise customers.",
    ],
)
def test_non_claims_are_skipped(utterance: str) -> None:
    assert claims_of(utterance) == []


def test_an_opinion_about_something_checkable_is_kept() -> None:
    assert texts_of("alice: I think v2.3 broke the login page.") == [
        "alice thinks v2.3 broke the login page."
    ]


def test_note_labels_are_not_speakers() -> None:
    assert texts_of("Note: the deploy failed on Tuesday.") == ["The deploy failed on Tuesday."]


def test_without_a_speaker_first_person_is_left_alone() -> None:
    assert texts_of("I rolled back to v2.3 yesterday.") == ["I rolled back to v2.3 yesterday."]


def test_claim_ids_are_deterministic_and_derived_from_block_and_text() -> None:
    text = "bob: I rolled back to v2.3. The cluster runs Postgres 15.4."
    first, second = claims_of(text), claims_of(text)
    assert first == second
    assert [c.id for c in first] == [claim_id("blk-1", c.text) for c in first]
    assert all(c.block_id == "blk-1" for c in first)
    assert len({c.id for c in first}) == 2
    assert claims_of(text, "blk-2")[0].id != first[0].id


def test_whitespace_edits_keep_claim_ids() -> None:
    before = claims_of("bob: I rolled back to v2.3.")
    after = claims_of("bob:   I rolled  back\n to v2.3.")
    assert [c.id for c in before] == [c.id for c in after]


def test_a_repeated_sentence_gives_one_claim() -> None:
    assert len(claims_of("bob: The build is green. The build is green.")) == 1


def test_batch_keeps_input_order() -> None:
    inputs = [
        ExtractionInput(Utterance("a", "alice: The cache hit rate is 93%.")),
        ExtractionInput(Utterance("b", "bob: Thanks!")),
        ExtractionInput(Utterance("c", "carol: The migration took 40 minutes.")),
    ]
    result = OfflineClaimExtractor().extract_batch(inputs)
    assert [[c.block_id for c in claims] for claims in result] == [["a"], [], ["c"]]
