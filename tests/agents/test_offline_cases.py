"""Hand-written cases the offline scorer must keep getting right, whatever a refit does.

Each case is a claim against a short source, the kind a note's utterance gives rise to. They pin
behaviour, not exact scores: the contradiction rules (negation, a changed number, a swapped name)
cap a close restatement at ``CONTRADICTION_CAP``; a paraphrase stays supported; a claim that adds
an unsupported fact to a supported one lands between the two.
"""

from __future__ import annotations

import pytest

from aclarai.agents import EvalItem, OfflineEvaluator, Score
from aclarai.agents.offline.evaluator import CONTRADICTION_CAP

DEPLOY = "The deploy to staging failed on Tuesday because the database migration timed out."
OUTAGE = (
    "The outage lasted 47 minutes and took the checkout service down for every customer in Europe."
)
CONTRACT = "Alice signed the contract with Siemens on Monday."
HIRING = "Siemens hired Alice in 2019 and promoted her to head of research in 2021."


@pytest.fixture(scope="module")
def evaluator() -> OfflineEvaluator:
    return OfflineEvaluator()


def score(evaluator: OfflineEvaluator, claim: str, source: str) -> Score:
    result = evaluator.evaluate(EvalItem(claim, source))
    assert result.status == "ok"
    assert result.entailed_score is not None and 0.0 <= result.entailed_score <= 1.0
    return result


def entailed(evaluator: OfflineEvaluator, claim: str, source: str) -> float:
    value = score(evaluator, claim, source).entailed_score
    assert value is not None
    return value


@pytest.mark.parametrize(
    ("claim", "source"),
    [
        ("The deploy to staging failed on Tuesday.", DEPLOY),
        ("The outage lasted 47 minutes.", OUTAGE),
        ("The outage lasted forty-seven minutes.", OUTAGE),
        ("Alice signed the contract with Siemens.", CONTRACT),
        ("In 2019, Siemens hired Alice.", HIRING),
        ("For 47 minutes, the outage took checkout down for every customer in Europe.", OUTAGE),
    ],
)
def test_restatements_and_paraphrases_are_supported(
    evaluator: OfflineEvaluator, claim: str, source: str
) -> None:
    result = score(evaluator, claim, source)
    assert result.verdict == "supported"
    assert result.entailed_score is not None and result.entailed_score >= 0.55


@pytest.mark.parametrize(
    ("claim", "source", "why"),
    [
        ("The deploy to staging did not fail on Tuesday.", DEPLOY, "negates"),
        ("The deploy to staging never failed.", DEPLOY, "negates"),
        ("The outage lasted 74 minutes.", OUTAGE, "74"),
        ("The outage lasted forty two minutes.", OUTAGE, "42"),
        ("Alice signed the contract with Bosch on Monday.", CONTRACT, "Bosch"),
        (
            "Siemens hired Alice in 2018 and promoted her to head of research in 2021.",
            HIRING,
            "2018",
        ),
    ],
)
def test_contradictions_are_capped_and_say_why(
    evaluator: OfflineEvaluator, claim: str, source: str, why: str
) -> None:
    result = score(evaluator, claim, source)
    assert result.entailed_score is not None and result.entailed_score <= CONTRADICTION_CAP
    assert result.verdict == "unsupported"
    assert result.justification is not None and why in result.justification


def test_a_contradiction_scores_far_below_its_faithful_twin(evaluator: OfflineEvaluator) -> None:
    faithful = entailed(evaluator, "Alice signed the contract with Siemens on Monday.", CONTRACT)
    swapped = entailed(evaluator, "Alice signed the contract with Bosch on Monday.", CONTRACT)
    assert faithful - swapped >= 0.5


def test_partial_support_lands_between_support_and_none(evaluator: OfflineEvaluator) -> None:
    full = entailed(evaluator, "The outage lasted 47 minutes.", OUTAGE)
    partial = entailed(
        evaluator,
        "The outage lasted 47 minutes and was caused by an expired TLS certificate.",
        OUTAGE,
    )
    unsupported = entailed(
        evaluator, "The outage was caused by an expired TLS certificate.", OUTAGE
    )
    assert full - partial >= 0.2
    assert partial - unsupported >= 0.1


def test_an_unrelated_claim_is_unsupported_and_names_what_is_missing(
    evaluator: OfflineEvaluator,
) -> None:
    result = score(evaluator, "The marketing team launched a new campaign in Brazil.", OUTAGE)
    assert result.verdict == "unsupported"
    assert result.entailed_score is not None and result.entailed_score < 0.2
    assert result.justification is not None and "Brazil" in result.justification


def test_a_shouted_claim_is_judged_on_its_words_not_its_capitals(
    evaluator: OfflineEvaluator,
) -> None:
    quiet = entailed(evaluator, "The outage lasted 47 minutes.", OUTAGE)
    shouted = entailed(evaluator, "THE OUTAGE LASTED 47 MINUTES.", OUTAGE)
    assert abs(quiet - shouted) < 0.05


def test_a_short_year_range_matches_the_full_one(evaluator: OfflineEvaluator) -> None:
    source = "The renaming takes place during the 2018–2019 academic year."
    result = score(evaluator, "The renaming takes place during the 2018–19 academic year.", source)
    assert result.verdict == "supported"
    assert result.entailed_score is not None and result.entailed_score > CONTRADICTION_CAP
