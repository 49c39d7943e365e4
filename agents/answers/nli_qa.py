"""The NLI QA pipeline: is an answer grounded, and does it agree with the ground truth?

For a (context, question, ground truth, answer) four-tuple it scores three entailments:

- the answer by the context (is the answer grounded?);
- the answer by the end of the question plus the ground truth (is the answer implied by the
  right answer?);
- the ground truth by the end of the question plus the answer (does the answer imply the right
  answer?).

"The end of the question" is its last sentence: the question proper, without the preamble, which
turns a bare answer ("Delhi") into something a premise can entail. Before scoring, pronouns in the
answer and ground truth are replaced (:mod:`aclarai.agents.answers.pronouns`), each text is cut into
NLI-sized sentences (:func:`aclarai.parsers.split_for_nli`), and each sentence into statements
(:func:`split_statements`). A hypothesis's score is the mean of its statements' entailment scores
and a pair's score the mean of its hypotheses' scores. Statements the evaluator could not score are
left out and named in the status; a pair with nothing scored is ``None``, never 0.

Refusal flags ("I don't know", "the context does not say") are computed on the first sentences of
the answer and of the ground truth (:mod:`aclarai.agents.answers.refusal`).

Sentence splitting is aclarai's own rule-based splitter (``aclarai.parsers.sentences``), which
works offline; NLTK's punkt data cannot be downloaded here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from aclarai.agents.answers.pronouns import PronounResolver, RuleBasedPronounResolver
from aclarai.agents.answers.refusal import is_refusal
from aclarai.agents.base import EvalItem, Evaluator, Score
from aclarai.parsers import split_for_nli, split_sentences

MIN_STATEMENT_WORDS = 3
"""A clause shorter than this stays with its neighbour instead of becoming a statement."""

_CLAUSE_BREAK = re.compile(
    r"\s*;\s*|,\s+(?=(?:and|but|while|whereas|yet|although|though)\s)", re.IGNORECASE
)
_LEADING_CONJUNCTION = re.compile(r"^(?:and|but|while|whereas|yet|although|though)\s+", re.I)


@dataclass(frozen=True, slots=True)
class QAItem:
    """One question-answering example to check."""

    context: str
    question: str
    ground_truth: str
    answer: str


@dataclass(frozen=True, slots=True)
class PairScore:
    """The entailment of one hypothesis text by one premise."""

    score: float | None
    """Mean over hypotheses of the mean over statements; ``None`` when nothing was scored."""
    status: str
    """``ok``, or what was empty or left out."""
    statements: int
    """Statements judged (the ones the evaluator failed on included)."""


@dataclass(frozen=True, slots=True)
class QAResult:
    """The three entailment scores and the two refusal flags."""

    answer_by_context: PairScore
    answer_by_truth: PairScore
    """The answer judged against the end of the question plus the ground truth."""
    truth_by_answer: PairScore
    """The ground truth judged against the end of the question plus the answer."""
    answer_refusal: bool
    truth_refusal: bool


def split_statements(sentence: str) -> list[str]:
    """Cut a sentence into statements at semicolons and at ", and" / ", but"-style clause joins.

    Args:
        sentence: one sentence.

    Returns:
        The statements in order (the whole sentence when it holds one); a clause shorter than
        :data:`MIN_STATEMENT_WORDS` words stays joined to the previous one.
    """
    statements: list[str] = []
    for part in (p.strip() for p in _CLAUSE_BREAK.split(sentence) if p and p.strip()):
        clause = _LEADING_CONJUNCTION.sub("", part)
        short = len(clause.split()) < MIN_STATEMENT_WORDS
        if statements and (short or len(statements[-1].split()) < MIN_STATEMENT_WORDS):
            statements[-1] = f"{statements[-1]}, {part}"
        else:
            statements.append(clause[:1].upper() + clause[1:] if statements else part)
    return statements


def question_end(question: str) -> str:
    """The last sentence of the question (empty for an empty question)."""
    sentences = split_sentences(question)
    return sentences[-1] if sentences else ""


class NLIQAPipeline:
    """Scores QA examples with an evaluator's entailment, one batch per example.

    Args:
        evaluator: scores each (statement, premise) pair; its ``entailed_score`` is used.
        resolver: pronoun replacement; the offline rules by default.
    """

    def __init__(self, evaluator: Evaluator, resolver: PronounResolver | None = None):
        self._evaluator = evaluator
        self._resolver = resolver or RuleBasedPronounResolver()

    def run(self, item: QAItem) -> QAResult:
        """Score one example.

        Args:
            item: context, question, ground truth and answer.

        Returns:
            The three pair scores and the refusal flags.
        """
        answer = self._resolver.resolve(item.answer, item.question)
        truth = self._resolver.resolve(item.ground_truth, item.question)
        end = question_end(item.question)
        # (premise, what the premise rests on, hypothesis, premise kind, hypothesis kind)
        pairs = (
            (item.context, item.context, answer, "context", "answer"),
            (_join(end, truth), truth, answer, "ground truth", "answer"),
            (_join(end, answer), answer, truth, "answer", "ground truth"),
        )
        # A pair with an empty premise is not sent to the evaluator: its answer is known.
        plans = [_plan(hyp) if core.strip() else [] for _, core, hyp, _, _ in pairs]
        items = [
            EvalItem(claim=statement, source=pair[0])
            for pair, plan in zip(pairs, plans, strict=True)
            for statements in plan
            for statement in statements
        ]
        scores = iter(self._evaluator.evaluate_batch(items) if items else [])
        results = [
            _score_pair(
                hyp, plan, [[next(scores) for _ in st] for st in plan], premise_kind, hyp_kind
            )
            for (_, _, hyp, premise_kind, hyp_kind), plan in zip(pairs, plans, strict=True)
        ]
        return QAResult(
            answer_by_context=results[0],
            answer_by_truth=results[1],
            truth_by_answer=results[2],
            answer_refusal=is_refusal(item.answer, split_sentences),
            truth_refusal=is_refusal(item.ground_truth, split_sentences),
        )


def _join(first: str, second: str) -> str:
    return " ".join(part for part in (first.strip(), second.strip()) if part)


def _plan(hypothesis: str) -> list[list[str]]:
    return [split_statements(sentence) for sentence in split_for_nli(hypothesis)]


def _score_pair(
    hypothesis: str,
    plan: Sequence[Sequence[str]],
    scores: Sequence[Sequence[Score]],
    premise_kind: str,
    hypothesis_kind: str,
) -> PairScore:
    if not hypothesis.strip():
        return PairScore(None, f"empty {hypothesis_kind}", 0)
    total = sum(len(statements) for statements in plan)
    if total == 0:
        return PairScore(None, f"empty {premise_kind}", 0)
    hypothesis_means: list[float] = []
    failures: list[str] = []
    for statement_scores in scores:
        values = [s.entailed_score for s in statement_scores if s.entailed_score is not None]
        failures.extend(s.status for s in statement_scores if s.entailed_score is None)
        if values:
            hypothesis_means.append(sum(values) / len(values))
    if not hypothesis_means:
        return PairScore(None, f"failed: {failures[0]}", total)
    score = sum(hypothesis_means) / len(hypothesis_means)
    if failures:
        return PairScore(
            score, f"partial: {len(failures)} of {total} left out ({failures[0]})", total
        )
    return PairScore(score, "ok", total)
