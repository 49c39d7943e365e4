"""Answer evaluation: a verdict on an AI agent's answer to a user's query.

Three cheap pre-checks (length, query overlap, format) run first, in parallel; if their mean is
below the early-exit threshold the answer fails with no judge called. Otherwise the judges
(relevance, faithfulness, coherence — offline or LLM-backed, see :mod:`aclarai.agents.judges`) run
in parallel, each under its own timeout. The confidence is the weighted mean of the two groups'
means; a judge that fails or times out is reported in the stages with its error and left out of the
means, never counted as 0. With no judge left the verdict is ``review``: nobody looked.

One blocking core: the HTTP service and the Redis consumer call :meth:`AnswerEvaluator.evaluate`
from worker threads.
"""

from __future__ import annotations

import logging
import math
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Literal

from aclarai.agents.offline_features import analyse

logger = logging.getLogger(__name__)

Verdict = Literal["pass", "review", "fail"]
StageKind = Literal["pre_check", "judge"]

LENGTH_CHECKER = "length-checker"
OVERLAP_CHECKER = "overlap-checker"
FORMAT_CHECKER = "format-checker"
RELEVANCE_JUDGE = "relevance-judge"
FAITHFULNESS_JUDGE = "faithfulness-judge"
COHERENCE_JUDGE = "coherence-judge"

TOO_SHORT_RATIO = 0.1
"""An answer with fewer words than this share of the query's is too short."""
TOO_LONG_RATIO = 50.0
"""An answer with more words than this multiple of the query's is too long."""

_WORD = re.compile(r"\w+(?:['’]\w+)*")
_REPEATED_PUNCTUATION = re.compile(r"([!?.,;:*#~_=-])\1{3,}|[!?]{4,}")


@dataclass(frozen=True, slots=True)
class Interaction:
    """What an agent was asked, what it was given, and what it answered."""

    query: str
    context: str
    answer: str


@dataclass(frozen=True, slots=True)
class Judgement:
    """One check's score in ``[0, 1]`` and why."""

    score: float
    reason: str

    def __post_init__(self) -> None:
        if not (isinstance(self.score, int | float) and math.isfinite(self.score)):
            raise ValueError(f"score must be a finite number, got {self.score!r}")
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"score must lie in [0, 1], got {self.score!r}")


@dataclass(frozen=True, slots=True)
class Stage:
    """One pre-check or judge as it ran: ``score`` is ``None`` when it failed (``error`` says)."""

    name: str
    kind: StageKind
    score: float | None
    reason: str
    duration_ns: int
    error: str | None = None


@dataclass(frozen=True, slots=True)
class AnswerEvaluation:
    """The stages in order (pre-checks, then judges), the confidence and the verdict."""

    stages: tuple[Stage, ...]
    confidence: float | None
    """``None`` when no judge produced a score (the verdict is then ``review``)."""
    verdict: Verdict
    reason: str


class Judge(ABC):
    """A judge of an answer. Implement :meth:`judge`; raise on failure, never return a fake 0."""

    name: str = "abstract-judge"
    timeout_s: float | None = None
    """This judge's own timeout, counted from when the evaluation submits it; ``None`` takes the
    evaluator's default."""

    @abstractmethod
    def judge(self, interaction: Interaction) -> Judgement:
        """Score the interaction."""


@dataclass(frozen=True, slots=True)
class AnswerEvalSettings:
    """Thresholds and weights (``service`` section of the configuration)."""

    early_exit_threshold: float = 0.2
    min_words: int = 3
    judge_timeout_s: float = 30.0
    pre_check_weight: float = 0.3
    judge_weight: float = 0.7
    pass_above: float = 0.8
    review_above: float = 0.5

    def __post_init__(self) -> None:
        if self.pre_check_weight < 0 or self.judge_weight < 0:
            raise ValueError("weights must not be negative")
        if self.pre_check_weight + self.judge_weight <= 0:
            raise ValueError("at least one weight must be positive")
        if self.review_above > self.pass_above:
            raise ValueError("review_above must not exceed pass_above")


def length_check(query: str, answer: str) -> Judgement:
    """Answer/query length ratio in words: too short 0.0, too long 0.5, otherwise 1.0."""
    query_words = max(1, len(_WORD.findall(query)))
    answer_words = len(_WORD.findall(answer))
    ratio = answer_words / query_words
    if ratio < TOO_SHORT_RATIO or answer_words == 0:
        return Judgement(0.0, f"too short: {answer_words} words for a {query_words}-word query")
    if ratio > TOO_LONG_RATIO:
        return Judgement(0.5, f"too long: {answer_words} words for a {query_words}-word query")
    return Judgement(1.0, f"{answer_words} words for a {query_words}-word query")


def overlap_check(query: str, answer: str) -> Judgement:
    """Share of the query's unique content words (stemmed) that the answer contains."""
    wanted = analyse(query).content
    if not wanted:
        return Judgement(1.0, "the query has no content words to look for")
    found = wanted & analyse(answer).content
    missing = sorted(wanted - found)
    reason = f"{len(found)} of {len(wanted)} query terms in the answer"
    if missing:
        reason += f"; missing: {', '.join(missing[:8])}"
    return Judgement(len(found) / len(wanted), reason)


def format_check(answer: str, min_words: int) -> Judgement:
    """Empty 0.0; each of too few words and runs of repeated punctuation costs 0.5."""
    if not answer.strip():
        return Judgement(0.0, "empty answer")
    problems: list[str] = []
    words = len(_WORD.findall(answer))
    if words < min_words:
        problems.append(f"{words} words, fewer than {min_words}")
    if _REPEATED_PUNCTUATION.search(answer):
        problems.append("runs of repeated punctuation")
    if not problems:
        return Judgement(1.0, "well-formed")
    return Judgement(max(0.0, 1.0 - 0.5 * len(problems)), "; ".join(problems))


class AnswerEvaluator:
    """Runs the pre-checks and judges in parallel and aggregates them into a verdict.

    Args:
        judges: the judges, each with its name and optional own timeout.
        settings: thresholds, weights and the default judge timeout.
        max_workers: judge threads shared by concurrent evaluations; a timed-out judge holds
            its thread until it returns.
    """

    def __init__(
        self,
        judges: Sequence[Judge],
        settings: AnswerEvalSettings | None = None,
        *,
        max_workers: int = 32,
    ):
        self.judges = tuple(judges)
        self.settings = settings or AnswerEvalSettings()
        self._pre_checks: tuple[tuple[str, Callable[[Interaction], Judgement]], ...] = (
            (LENGTH_CHECKER, lambda i: length_check(i.query, i.answer)),
            (OVERLAP_CHECKER, lambda i: overlap_check(i.query, i.answer)),
            (FORMAT_CHECKER, lambda i: format_check(i.answer, self.settings.min_words)),
        )
        # Two pools, so that slow judges of busy requests never hold back the cheap pre-checks.
        self._pre_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="aclarai-precheck")
        self._judge_pool = ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="aclarai-judge"
        )

    def evaluate(self, interaction: Interaction) -> AnswerEvaluation:
        """Evaluate one answer.

        Args:
            interaction: the query, the context the agent was given, and its answer.

        Returns:
            The stages, confidence and verdict. Judge failures are stages with ``score=None``.
        """
        s = self.settings
        pre = self._run(self._pre_pool, "pre_check", self._pre_checks, interaction, None)
        pre_mean = _mean([st.score for st in pre])
        if pre_mean is not None and pre_mean < s.early_exit_threshold:
            return AnswerEvaluation(
                stages=tuple(pre),
                confidence=pre_mean,
                verdict="fail",
                reason=f"early exit: pre-check mean {pre_mean:.3f} < {s.early_exit_threshold}",
            )
        checks = tuple((j.name, j.judge) for j in self.judges)
        timeouts = tuple(j.timeout_s or s.judge_timeout_s for j in self.judges)
        judged = self._run(self._judge_pool, "judge", checks, interaction, timeouts)
        stages = (*pre, *judged)
        judge_mean = _mean([st.score for st in judged])
        if judge_mean is None:
            failed = "; ".join(f"{st.name}: {st.error}" for st in judged) or "no judges configured"
            return AnswerEvaluation(stages, None, "review", f"every judge failed ({failed})")
        confidence = _weighted(((s.pre_check_weight, pre_mean), (s.judge_weight, judge_mean)))
        verdict: Verdict = (
            "pass"
            if confidence > s.pass_above
            else "review"
            if confidence > s.review_above
            else "fail"
        )
        left_out = [st.name for st in stages if st.score is None]
        reason = f"confidence {confidence:.3f}"
        if left_out:
            reason += f" (left out, failed: {', '.join(left_out)})"
        return AnswerEvaluation(stages, confidence, verdict, reason)

    def close(self) -> None:
        """Stop the worker pools (running judges finish in the background)."""
        self._pre_pool.shutdown(wait=False, cancel_futures=True)
        self._judge_pool.shutdown(wait=False, cancel_futures=True)

    def _run(
        self,
        pool: ThreadPoolExecutor,
        kind: StageKind,
        checks: Sequence[tuple[str, Callable[[Interaction], Judgement]]],
        interaction: Interaction,
        timeouts: Sequence[float] | None,
    ) -> list[Stage]:
        submitted = time.monotonic_ns()
        futures = [pool.submit(_timed, check, interaction) for _, check in checks]
        stages: list[Stage] = []
        for index, ((name, _), future) in enumerate(zip(checks, futures, strict=True)):
            timeout_s = None if timeouts is None else timeouts[index]
            stages.append(_collect(name, kind, future, submitted, timeout_s))
        return stages


def _timed(
    check: Callable[[Interaction], Judgement], interaction: Interaction
) -> tuple[Judgement, int]:
    start = time.monotonic_ns()
    judgement = check(interaction)
    if not isinstance(judgement, Judgement):
        raise TypeError(f"a check returned {type(judgement).__name__}, not a Judgement")
    return judgement, time.monotonic_ns() - start


def _collect(
    name: str,
    kind: StageKind,
    future: Future[tuple[Judgement, int]],
    submitted_ns: int,
    timeout_s: float | None,
) -> Stage:
    remaining = None
    if timeout_s is not None:
        remaining = max(0.0, timeout_s - (time.monotonic_ns() - submitted_ns) / 1e9)
    try:
        judgement, duration_ns = future.result(timeout=remaining)
    except FutureTimeout:
        future.cancel()
        error = f"timed out after {timeout_s:g} s"
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    else:
        return Stage(name, kind, judgement.score, judgement.reason, duration_ns)
    # INFO, not WARNING: a failed judge is part of the answer (its stage says why), and an
    # unreachable endpoint is already logged by the client.
    logger.info("%s %s failed: %s", kind.replace("_", "-"), name, error)
    elapsed = time.monotonic_ns() - submitted_ns
    return Stage(name, kind, None, f"failed: {error}", elapsed, error)


def _weighted(groups: Sequence[tuple[float, float | None]]) -> float:
    # Weights are renormalised over the groups that produced a score, so that configured
    # weights need not sum to 1 and a group with no score is left out rather than counted as 0.
    present = [(w, x) for w, x in groups if x is not None and w > 0]
    total = sum(w for w, _ in present)
    return sum(w * x for w, x in present) / total if total else 0.0


def _mean(scores: Sequence[float | None]) -> float | None:
    present = [x for x in scores if x is not None]
    return sum(present) / len(present) if present else None
