"""The offline evaluator: entailment, coverage, decontextualization, failures and determinism."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclarai.agents import VERDICT_LABELS, EvalItem, OfflineEvaluator, Score
from aclarai.agents.offline.coverage import verifiable_elements
from aclarai.agents.offline.decontext import decontextualization
from aclarai.agents.offline.evaluator import CONTRADICTION_CAP, load_params

OUTAGE = "frank: The checkout service was down for 47 minutes on June 6, from 14:02 to 14:49 UTC."
ROLLBACK = "bob: I rolled back to v2.3 and it is stable now."
RESTATED = 0.75


@pytest.fixture(scope="module")
def evaluator() -> OfflineEvaluator:
    return OfflineEvaluator()


def score(evaluator: OfflineEvaluator, claim: str, source: str, *context: str) -> Score:
    return evaluator.evaluate(EvalItem(claim, source, tuple(context)))


def test_a_restated_claim_is_entailed_and_supported(evaluator: OfflineEvaluator) -> None:
    result = score(evaluator, "bob rolled back to v2.3.", ROLLBACK)
    assert result.status == "ok"
    # Calibrated on public sets where even near-verbatim claims are sometimes wrong, a plain
    # restatement earns about 0.8, not 1.
    assert result.entailed_score is not None and result.entailed_score >= RESTATED
    assert result.verdict == "supported"
    assert result.justification and result.justification.startswith("Supported:")


def test_a_changed_number_is_a_contradiction(evaluator: OfflineEvaluator) -> None:
    faithful = score(evaluator, OUTAGE.split(": ", 1)[1], OUTAGE)
    changed = score(evaluator, OUTAGE.split(": ", 1)[1].replace("47", "12"), OUTAGE)
    assert faithful.entailed_score is not None and faithful.entailed_score >= RESTATED
    assert changed.entailed_score is not None and changed.entailed_score <= CONTRADICTION_CAP
    assert changed.verdict == "unsupported"
    assert changed.justification is not None and "12" in changed.justification


def test_a_negated_claim_is_a_contradiction(evaluator: OfflineEvaluator) -> None:
    result = score(evaluator, "bob did not roll back to v2.3.", ROLLBACK)
    assert result.entailed_score is not None and result.entailed_score <= CONTRADICTION_CAP
    assert result.verdict == "unsupported"
    assert result.justification is not None and "negates" in result.justification


def test_a_claim_about_something_else_is_not_entailed(evaluator: OfflineEvaluator) -> None:
    result = score(evaluator, "alice upgraded the cluster to Kubernetes 1.30.", ROLLBACK)
    assert result.entailed_score is not None and result.entailed_score < 0.2
    assert result.justification is not None and "Kubernetes" in result.justification


def test_swapped_word_order_scores_below_the_original(evaluator: OfflineEvaluator) -> None:
    source = "The Tabaci River is a tributary of the Leurda River in Romania."
    same = score(evaluator, source, source).entailed_score
    swapped = score(
        evaluator, "The Leurda River is a tributary of the Tabaci River in Romania.", source
    ).entailed_score
    assert same is not None and swapped is not None and swapped < same


def test_coverage_lists_the_omitted_elements(evaluator: OfflineEvaluator) -> None:
    result = score(evaluator, "The checkout service was down on June 6.", OUTAGE)
    assert result.omitted == ("47", "14:02", "14:49", "UTC")
    assert result.coverage_score == pytest.approx(2 / 6)


def test_coverage_counts_only_the_sentences_the_claim_draws_on(
    evaluator: OfflineEvaluator,
) -> None:
    source = "carol: Postgres 15.4 runs in Frankfurt. The nightly backup takes 40 minutes."
    result = score(evaluator, "The nightly backup takes 40 minutes.", source)
    assert result.coverage_score == 1.0
    assert result.omitted == ()


def test_the_speaker_is_not_a_verifiable_element(evaluator: OfflineEvaluator) -> None:
    result = score(evaluator, "The build is green again.", "Grace: The build is green again.")
    assert result.coverage_score == 1.0


def test_an_unresolved_claim_is_not_decontextualized(evaluator: OfflineEvaluator) -> None:
    vague = score(evaluator, "He fixed it yesterday.", "dana: He fixed it yesterday.")
    clear = score(
        evaluator,
        "The checkout service was down for 47 minutes on June 6, 2024.",
        "frank: The checkout service was down for 47 minutes on June 6, 2024.",
    )
    assert vague.decontextualization_score is not None and vague.decontextualization_score < 0.3
    assert clear.decontextualization_score == 1.0


def test_context_makes_a_definite_description_anaphoric(evaluator: OfflineEvaluator) -> None:
    claim = "The upgrade took 40 minutes on June 6, 2024."
    source = f"carol: {claim}"
    alone = score(evaluator, claim, source).decontextualization_score
    after = score(evaluator, claim, source, "bob: We start the upgrade at noon.")
    assert alone == 1.0
    assert after.decontextualization_score is not None and after.decontextualization_score < 1.0


@pytest.mark.parametrize(
    ("claim", "source", "status"),
    [
        ("The build is green.", "", "empty source"),
        ("The build is green.", "   \n", "empty source"),
        ("The build is green.", "!!! ???", "source has no words"),
        ("", "bob: The build is green.", "empty claim"),
        ("  ", "bob: The build is green.", "empty claim"),
    ],
)
def test_unscorable_items_get_none_with_a_status(
    evaluator: OfflineEvaluator, claim: str, source: str, status: str
) -> None:
    result = score(evaluator, claim, source)
    assert (result.entailed_score, result.coverage_score, result.decontextualization_score) == (
        None,
        None,
        None,
    )
    assert result.status == status
    assert result.verdict is None


def test_one_bad_item_does_not_sink_the_batch(evaluator: OfflineEvaluator) -> None:
    items = [
        EvalItem("bob rolled back to v2.3.", ROLLBACK),
        EvalItem(None, ROLLBACK),  # type: ignore[arg-type]
        EvalItem("The build is green.", ""),
        EvalItem("bob rolled back to v2.3.", ROLLBACK),
    ]
    results = evaluator.evaluate_batch(items)
    assert [r.status for r in results] == ["ok", "empty claim", "empty source", "ok"]
    assert results[0] == results[3]


def test_scores_do_not_depend_on_batching_or_order(evaluator: OfflineEvaluator) -> None:
    # Sources, sentences and windows are analysed once and kept for a while: what was scored
    # before must not change a later score.
    window = ("carol: The upgrade starts at noon.", OUTAGE, ROLLBACK)
    items = [
        EvalItem("bob rolled back to v2.3.", ROLLBACK, window),
        EvalItem("The checkout service was down for 47 minutes on June 6.", OUTAGE, window[:1]),
        EvalItem("The upgrade took 40 minutes.", "carol: The upgrade took 40 minutes.", window),
        EvalItem("The upgrade took 40 minutes.", "carol: The upgrade took 40 minutes."),
        EvalItem("It was down for 47 minutes.", OUTAGE, window),
        EvalItem("bob rolled back to v2.3.", OUTAGE, window[1:]),
    ]
    batch = evaluator.evaluate_batch(items)
    assert evaluator.evaluate_batch(items[::-1]) == batch[::-1]
    assert [OfflineEvaluator().evaluate(item) for item in items] == batch
    assert batch[2].decontextualization_score != batch[3].decontextualization_score
    assert batch[0].entailed_score != batch[5].entailed_score


def test_verifiable_elements_are_a_fresh_list_each_time() -> None:
    sentence = "The checkout service was down for 47 minutes on June 6."
    first = verifiable_elements(sentence)
    first.append("mutated")
    assert verifiable_elements(sentence) == ["47", "June", "6"]


def test_a_list_window_counts_like_a_tuple() -> None:
    claim, source = "The upgrade took 40 minutes on June 6, 2024.", "carol: The upgrade took 40."
    window = ["bob: We start the upgrade at noon."]
    assert decontextualization(claim, source, window) == decontextualization(
        claim, source, tuple(window)
    )
    assert decontextualization(claim, source, window).score < 1.0


def test_scores_are_deterministic_across_instances() -> None:
    items = [EvalItem("bob rolled back to v2.3.", ROLLBACK), EvalItem("It broke.", OUTAGE)]
    assert OfflineEvaluator().evaluate_batch(items) == OfflineEvaluator().evaluate_batch(items)
    assert OfflineEvaluator().version == OfflineEvaluator().version


def test_the_version_follows_the_parameters() -> None:
    params = load_params()
    changed = {**params, "intercept": params["intercept"] + 1.0}
    assert OfflineEvaluator(changed).version != OfflineEvaluator(params).version
    assert OfflineEvaluator().model_id.startswith("offline:")


def test_parameters_missing_a_weight_are_refused() -> None:
    params = load_params()
    weights = dict(params["weights"])
    weights.pop("trigram_precision")
    with pytest.raises(ValueError, match="trigram_precision"):
        OfflineEvaluator({**params, "weights": weights})


_PIECES = [*"abcXYZ 019.,:!?'-\n", "not ", "He ", "the ", "v2.3 ", "alice: ", "June "]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=40).map("".join)


@settings(max_examples=200, deadline=None)
@given(claim=_TEXT, source=_TEXT)
def test_scores_are_in_range_or_none_never_zero_on_failure(claim: str, source: str) -> None:
    result = OfflineEvaluator().evaluate(EvalItem(claim, source))
    values = (result.entailed_score, result.coverage_score, result.decontextualization_score)
    if result.status == "ok":
        assert all(v is not None and 0.0 <= v <= 1.0 for v in values)
        assert result.verdict in VERDICT_LABELS
    else:
        assert values == (None, None, None)
