"""The NLI QA pipeline: premises, hypotheses, statements, means, failures and refusal flags."""

from __future__ import annotations

import pytest

from aclarai.agents import NLIQAPipeline, QAItem, split_statements
from aclarai.agents.answers.nli_qa import question_end
from tests.helpers.service_fakes import OverlapEvaluator

ITEM = QAItem(
    context="Albert Einstein was born in Ulm in 1879. Einstein moved to Bern in 1902.",
    question="This is a history quiz. Where was Albert Einstein born?",
    ground_truth="Albert Einstein was born in Ulm.",
    answer="He was born in Ulm, Germany.",
)


def test_split_statements_cuts_clauses_and_keeps_short_ones_attached() -> None:
    assert split_statements("Einstein was born in Ulm, and he moved to Bern in 1902.") == [
        "Einstein was born in Ulm",
        "He moved to Bern in 1902.",
    ]
    assert split_statements("The tower is tall; it is also old and famous.") == [
        "The tower is tall",
        "It is also old and famous.",
    ]
    assert split_statements("Yes, and no.") == ["Yes, and no."]
    assert split_statements("Paris, but also Lyon.") == ["Paris, but also Lyon."]
    assert split_statements("") == []


def test_question_end_is_the_last_sentence() -> None:
    assert question_end(ITEM.question) == "Where was Albert Einstein born?"
    assert question_end("") == ""


def test_three_pairs_with_their_premises_and_resolved_pronouns() -> None:
    evaluator = OverlapEvaluator()
    result = NLIQAPipeline(evaluator).run(ITEM)
    premises = {item.source for item in evaluator.items}
    assert premises == {
        ITEM.context,
        "Where was Albert Einstein born? Albert Einstein was born in Ulm.",
        "Where was Albert Einstein born? Albert Einstein was born in Ulm, Germany.",
    }
    claims = [(item.claim, item.source) for item in evaluator.items]
    assert ("Albert Einstein was born in Ulm, Germany.", ITEM.context) in claims
    assert not any(claim.startswith("He ") for claim, _ in claims)
    # "Germany" is in neither the context nor the ground truth: 6 of 7 words entailed.
    assert result.answer_by_context.score == pytest.approx(6 / 7)
    assert result.answer_by_truth.score == pytest.approx(6 / 7)
    assert result.truth_by_answer.score == pytest.approx(1.0)
    assert result.answer_by_context.status == "ok"
    assert not result.answer_refusal and not result.truth_refusal


def test_pair_score_is_the_mean_of_hypothesis_means() -> None:
    # Sentence 1 has two statements (1.0 and 0.0), sentence 2 one (1.0): the mean of hypothesis
    # means is (0.5 + 1.0) / 2 = 0.75, where a flat mean of statements would give 2/3.
    item = QAItem(
        context="alpha beta gamma delta epsilon zeta eta theta",
        question="",
        ground_truth="",
        answer="Alpha beta gamma delta, and zulu yankee xray whiskey. Epsilon zeta eta theta.",
    )
    result = NLIQAPipeline(OverlapEvaluator()).run(item)
    assert result.answer_by_context.statements == 3
    assert result.answer_by_context.score == pytest.approx(0.75)


def test_failed_statements_are_left_out_and_named() -> None:
    item = QAItem(
        context="The tower is in Paris. The tower is 330 metres tall.",
        question="Tell me about the tower.",
        ground_truth="The tower is in Paris.",
        answer="The tower is in Paris. The tower is 330 metres tall, a FAILME number.",
    )
    result = NLIQAPipeline(OverlapEvaluator(fail_on="FAILME")).run(item)
    assert result.answer_by_context.score == pytest.approx(1.0)
    assert result.answer_by_context.status.startswith("partial: 1 of 2")


def test_nothing_scored_is_none_never_zero() -> None:
    item = QAItem(context="x", question="q?", ground_truth="", answer="FAILME entirely here.")
    result = NLIQAPipeline(OverlapEvaluator(fail_on="FAILME")).run(item)
    assert result.answer_by_context.score is None
    assert result.answer_by_context.status.startswith("failed: error: scripted failure")
    assert result.answer_by_truth.score is None
    assert result.answer_by_truth.status == "empty ground truth"
    assert result.truth_by_answer.score is None
    assert result.truth_by_answer.status == "empty ground truth"


def test_empty_context_is_not_sent_to_the_evaluator() -> None:
    evaluator = OverlapEvaluator()
    item = QAItem(context="  ", question="Where?", ground_truth="In Ulm.", answer="In Ulm.")
    result = NLIQAPipeline(evaluator).run(item)
    assert result.answer_by_context.score is None
    assert result.answer_by_context.status == "empty context"
    assert all(i.source.strip() for i in evaluator.items)


def test_refusal_flags() -> None:
    item = QAItem(
        context="The museum opens at nine.",
        question="When does the museum open?",
        ground_truth="The museum opens at nine.",
        answer="I don't know. The context does not say.",
    )
    result = NLIQAPipeline(OverlapEvaluator()).run(item)
    assert result.answer_refusal
    assert not result.truth_refusal
