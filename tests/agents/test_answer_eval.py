"""Answer evaluation: pre-checks, early exit, judges in parallel, failures left out, verdicts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence

import pytest

from aclarai.agents import (
    AnswerEvalSettings,
    AnswerEvaluator,
    Interaction,
    Judge,
    Judgement,
)
from aclarai.agents.answers.evaluator import (
    FORMAT_CHECKER,
    LENGTH_CHECKER,
    OVERLAP_CHECKER,
    format_check,
    length_check,
    overlap_check,
)
from aclarai.parsers import EvaluationError
from tests.helpers.service_fakes import BarrierJudge, BlockingJudge, FixedJudge, RaisingJudge

LONG_QUESTION = (
    "Could you explain in detail how the Eiffel Tower was built, who designed it, and why it "
    "was so controversial among the artists of Paris at the time of its construction?"
)
GOOD = Interaction(
    query="How tall is the Eiffel Tower?",
    context="The Eiffel Tower is 330 metres tall.",
    answer="The Eiffel Tower is 330 metres tall.",
)


@pytest.fixture
def make_evaluator() -> Iterator[object]:
    made: list[AnswerEvaluator] = []

    def create(judges: Sequence[Judge], **settings: float) -> AnswerEvaluator:
        evaluator = AnswerEvaluator(judges, AnswerEvalSettings(**settings))  # type: ignore[arg-type]
        made.append(evaluator)
        return evaluator

    yield create
    for evaluator in made:
        evaluator.close()


def test_length_check_compares_characters_with_the_reference_bounds() -> None:
    assert length_check(LONG_QUESTION, "ok").score == 0.0
    assert length_check("Why?", "word " * 60).score == 0.5
    assert length_check("How tall is it?", "It is 330 metres tall.").score == 1.0
    assert length_check("How tall is it?", "").score == 0.0
    # 15 characters: 7 is below half (0.0), 8 is not; 150 is ten times (1.0), 151 is more (0.5).
    assert length_check("How tall is it?", "x" * 7).score == 0.0
    assert length_check("How tall is it?", "x" * 8).score == 1.0
    assert length_check("How tall is it?", "x" * 150).score == 1.0
    assert length_check("How tall is it?", "x" * 151).score == 0.5
    assert length_check("How tall is it?", "x" * 8, too_short_ratio=0.6).score == 0.0


def test_overlap_check_is_the_share_of_query_terms_in_the_answer() -> None:
    full = overlap_check("How tall is the Eiffel Tower?", "The Eiffel Tower is very tall.")
    half = overlap_check("Eiffel Tower height", "The Eiffel Tower is in Paris.")
    none = overlap_check("Eiffel Tower height", "Bananas are yellow.")
    assert full.score == 1.0
    assert 0.0 < half.score < 1.0
    assert none.score == 0.0
    assert "missing" in none.reason


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("", 0.0),
        ("   ", 0.0),
        ("Yes.", 0.0),
        ("Yes indeed.", 1.0),
        ("This is great!!!", 0.5),
        ("Really?? Are you sure...", 0.5),
        ("Wait... what?!", 0.5),
        ("No!!!!", 0.0),
        ("Well, yes -- it is.", 1.0),
        ("The tower is 330 metres tall.", 1.0),
    ],
)
def test_format_check_scores(answer: str, expected: float) -> None:
    assert format_check(answer).score == expected


def test_short_answer_to_long_question_exits_early_without_judges(make_evaluator) -> None:
    judge = FixedJudge("relevance-judge", 1.0)
    result = make_evaluator([judge]).evaluate(Interaction(LONG_QUESTION, "Some context.", "ok"))
    assert result.verdict == "fail"
    assert [s.name for s in result.stages] == [LENGTH_CHECKER, OVERLAP_CHECKER, FORMAT_CHECKER]
    assert judge.calls == 0
    assert result.confidence is not None and result.confidence < 0.2
    assert "early exit" in result.reason


def test_confidence_is_the_weighted_mean_of_pre_checks_and_judges(make_evaluator) -> None:
    judges = [FixedJudge("relevance-judge", 0.9), FixedJudge("faithfulness-judge", 0.7)]
    result = make_evaluator(judges).evaluate(GOOD)
    pre = [s.score for s in result.stages if s.kind == "pre_check"]
    assert all(score is not None for score in pre)
    expected = 0.3 * (sum(pre) / 3) + 0.7 * 0.8  # type: ignore[arg-type]
    assert result.confidence == pytest.approx(expected)
    assert [s.name for s in result.stages][3:] == ["relevance-judge", "faithfulness-judge"]
    assert all(s.duration_ns >= 0 for s in result.stages)


@pytest.mark.parametrize(
    ("judge_score", "verdict"), [(1.0, "pass"), (0.6, "review"), (0.1, "fail")]
)
def test_verdict_thresholds(make_evaluator, judge_score: float, verdict: str) -> None:
    result = make_evaluator([FixedJudge("relevance-judge", judge_score)]).evaluate(GOOD)
    assert result.verdict == verdict


def test_thresholds_and_weights_are_configurable(make_evaluator) -> None:
    judges = [FixedJudge("relevance-judge", 0.6)]
    strict = make_evaluator(judges, pre_check_weight=0.0, judge_weight=1.0, review_above=0.7)
    result = strict.evaluate(GOOD)
    assert result.confidence == pytest.approx(0.6)
    assert result.verdict == "fail"


def test_a_failing_judge_is_reported_and_left_out_not_counted_as_zero(make_evaluator) -> None:
    judges = [
        FixedJudge("relevance-judge", 1.0),
        RaisingJudge("faithfulness-judge", EvaluationError("model said nonsense")),
    ]
    result = make_evaluator(judges).evaluate(GOOD)
    failed = next(s for s in result.stages if s.name == "faithfulness-judge")
    assert failed.score is None
    assert failed.error is not None and "model said nonsense" in failed.error
    assert "model said nonsense" in failed.reason
    # Counted as 0 the judges' mean would be 0.5; left out, the confidence stays that of the
    # judges that answered, but an answer not every judge looked at is never passed.
    assert result.confidence == pytest.approx(1.0)
    assert result.verdict == "review"
    assert "faithfulness-judge" in result.reason
    assert "capped at review" in result.reason


def test_a_judge_returning_an_out_of_range_score_fails(make_evaluator) -> None:
    class Broken(Judge):
        name = "coherence-judge"

        def judge(self, interaction: Interaction) -> Judgement:
            return Judgement(1.5, "too good")

    result = make_evaluator([Broken(), FixedJudge("relevance-judge", 1.0)]).evaluate(GOOD)
    broken = next(s for s in result.stages if s.name == "coherence-judge")
    assert broken.score is None and "[0, 1]" in (broken.error or "")


def test_each_judge_has_its_own_timeout(make_evaluator) -> None:
    slow = BlockingJudge("faithfulness-judge", timeout_s=0.3)
    patient = BlockingJudge("relevance-judge", timeout_s=5.0)
    evaluator = make_evaluator([slow, patient])
    threading.Timer(0.8, patient.release.set).start()
    try:
        started = time.monotonic()
        result = evaluator.evaluate(GOOD)
        elapsed = time.monotonic() - started
    finally:
        slow.release.set()
        patient.release.set()
    timed_out = next(s for s in result.stages if s.name == "faithfulness-judge")
    finished = next(s for s in result.stages if s.name == "relevance-judge")
    assert timed_out.score is None and "timed out after 0.3 s" in timed_out.reason
    assert finished.score == 1.0
    assert 0.7 < elapsed < 5.0


def test_every_judge_failing_gives_review_with_the_reason(make_evaluator) -> None:
    judges = [
        RaisingJudge("relevance-judge", EvaluationError("endpoint down")),
        RaisingJudge("faithfulness-judge", RuntimeError("bug")),
    ]
    result = make_evaluator(judges).evaluate(GOOD)
    assert result.verdict == "review"
    assert result.confidence is None
    assert "every judge failed" in result.reason and "endpoint down" in result.reason
    assert [s.score for s in result.stages][3:] == [None, None]


def test_judges_run_in_parallel(make_evaluator) -> None:
    barrier = threading.Barrier(3)
    judges = [BarrierJudge(name, barrier) for name in ("a-judge", "b-judge", "c-judge")]
    result = make_evaluator(judges, judge_timeout_s=10.0).evaluate(GOOD)
    assert [s.score for s in result.stages][3:] == [1.0, 1.0, 1.0]


def test_settings_reject_nonsense() -> None:
    with pytest.raises(ValueError):
        AnswerEvalSettings(pre_check_weight=0.0, judge_weight=0.0)
    with pytest.raises(ValueError):
        AnswerEvalSettings(review_above=0.9, pass_above=0.8)


FRANCE_QUERY = "What is the capital of France?"
FRANCE_CONTEXT = (
    "France is a country in Western Europe. Its capital city is Paris, which is also the largest "
    "city in the country."
)


@pytest.mark.parametrize(
    ("case", "query", "context", "answer"),
    [
        ("empty", FRANCE_QUERY, FRANCE_CONTEXT, ""),
        ("whitespace", FRANCE_QUERY, FRANCE_CONTEXT, "  \n "),
        ("ok", "Explain the theory of relativity in detail", "Einstein developed it.", "ok"),
        ("idk", FRANCE_QUERY, FRANCE_CONTEXT, "idk"),
        ("i_dont_know", FRANCE_QUERY, FRANCE_CONTEXT, "I don't know."),
        ("filler_thanks", FRANCE_QUERY, FRANCE_CONTEXT, "Thanks!"),
        ("punctuation_run", FRANCE_QUERY, FRANCE_CONTEXT, "?!?!?!..."),
        (
            "unrelated_to_query_and_context",
            FRANCE_QUERY,
            FRANCE_CONTEXT,
            "Bananas are rich in potassium and grow in tropical climates.",
        ),
    ],
)
def test_non_answers_fail_early_without_a_judge(
    make_evaluator, case: str, query: str, context: str, answer: str
) -> None:
    judge = FixedJudge("relevance-judge", 1.0)
    result = make_evaluator([judge]).evaluate(Interaction(query, context, answer))
    assert result.verdict == "fail", case
    assert judge.calls == 0
    assert [s.name for s in result.stages] == [LENGTH_CHECKER, OVERLAP_CHECKER, FORMAT_CHECKER]
    assert result.reason.startswith("early exit: ")


@pytest.mark.parametrize(
    ("case", "query", "context", "answer"),
    [
        ("paris_for_capital_of_france", FRANCE_QUERY, FRANCE_CONTEXT, "Paris."),
        (
            "year_from_the_context",
            "In which year was the Eiffel Tower completed?",
            "The Eiffel Tower was completed in 1889 for the World's Fair.",
            "1889",
        ),
        (
            "surname_from_the_context",
            "Who designed the tower that stands on the Champ de Mars in Paris?",
            "The tower on the Champ de Mars was designed by the engineer Gustave Eiffel.",
            "Eiffel.",
        ),
    ],
)
def test_short_answers_the_context_supports_go_to_the_judges(
    make_evaluator, case: str, query: str, context: str, answer: str
) -> None:
    judge = FixedJudge("faithfulness-judge", 1.0)
    result = make_evaluator([judge]).evaluate(Interaction(query, context, answer))
    pre_mean = sum(s.score or 0.0 for s in result.stages[:3]) / 3
    assert pre_mean < 0.2, "the reference would have failed this answer without a judge"
    assert judge.calls == 1, case
    assert [s.name for s in result.stages][3:] == ["faithfulness-judge"]
    assert "early exit" not in result.reason


def test_a_short_answer_the_context_does_not_support_still_fails_early(make_evaluator) -> None:
    judge = FixedJudge("faithfulness-judge", 1.0)
    result = make_evaluator([judge]).evaluate(Interaction(FRANCE_QUERY, FRANCE_CONTEXT, "Lyon."))
    assert result.verdict == "fail" and judge.calls == 0
    assert "pre-check mean" in result.reason


def test_paris_for_the_capital_of_france_passes_with_the_offline_judges(tmp_path) -> None:
    from aclarai.daemon.config import load_config
    from aclarai.daemon.service.core import build_service_core

    config = load_config(env={"ACLARAI_STATE_DIR": str(tmp_path)}, overrides={})
    core = build_service_core(config)
    try:
        result = core.answers.evaluate(Interaction(FRANCE_QUERY, FRANCE_CONTEXT, "Paris."))
    finally:
        core.close()
    assert [s.kind for s in result.stages].count("judge") == 3
    relevance = next(s for s in result.stages if s.name == "relevance-judge")
    assert relevance.score is not None and relevance.score > 0.8
    assert "through the context" in relevance.reason
    assert result.verdict != "fail"
