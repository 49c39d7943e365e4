"""Answer evaluation: a verdict on an AI agent's answer to a user's query.

Three cheap pre-checks run first, in parallel, as the spec's reference does: the answer's length
in characters relative to the query's (``length-checker``), the share of the query's terms it
contains (``overlap-checker``), and its form (``format-checker``: words, punctuation runs).

The early exit fails an answer with no judge called when it is a *non-answer*: empty, punctuation
only, filler ("ok", "idk", "I don't know"), or unrelated to both the query and the context; or
when the pre-check mean is below the threshold and the answer is not a short answer that the
context supports. The reference exits on the mean alone, which fails "Paris." as the answer to
"What is the capital of France?" although the context says so; here such an answer goes to the
judges.

Otherwise the judges (relevance, faithfulness, coherence — offline or LLM-backed, see
:mod:`aclarai.agents.answers.judges`) run in parallel, each under its own timeout. The confidence is
the weighted mean of the two groups' means; a judge that fails or times out is reported in the
stages with its error and left out of the means, never counted as 0, and caps the verdict at
``review``: an answer nobody fully looked at never passes. So does a judge scoring below
``judge_floor``: a mean of good relevance and coherence must not pass an answer the faithfulness
judge finds invented. With no judge left the verdict is ``review``.

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

from aclarai.agents.offline.features import analyse

logger = logging.getLogger(__name__)

AnswerVerdict = Literal["pass", "review", "fail"]
StageKind = Literal["pre_check", "judge"]

LENGTH_CHECKER = "length-checker"
OVERLAP_CHECKER = "overlap-checker"
FORMAT_CHECKER = "format-checker"
RELEVANCE_JUDGE = "relevance-judge"
FAITHFULNESS_JUDGE = "faithfulness-judge"
COHERENCE_JUDGE = "coherence-judge"

TOO_SHORT_RATIO = 0.5
"""An answer shorter, in characters, than this share of the query is too short (0.0)."""
TOO_LONG_RATIO = 10.0
"""An answer longer, in characters, than this multiple of the query is too long (0.5)."""
MIN_WORDS = 2
"""An answer with fewer words fails the format check (0.0)."""

_WORD = re.compile(r"\w+(?:['’]\w+)*")
_PUNCTUATION_RUN = re.compile(r"[!?.]{3,}")
_FILLER = frozenset(
    {
        "ok", "okay", "k", "kk", "idk", "dunno", "n/a", "na", "none", "nothing", "whatever",
        "sure", "thanks", "thank you", "hmm", "hm", "um", "uh", "lol", "meh", "no idea",
        "i don't know", "i do not know", "i dont know", "not sure", "i'm not sure",
        "i am not sure", "no comment", "pass", "skip", "test", "asdf", "blah", "yes or no",
    }
)  # fmt: skip
"""Answers that say nothing, whatever was asked (compared lower-cased, punctuation stripped)."""
UNRELATED_MIN_TERMS = 3
"""An answer with at least this many content terms, none of them in the query or the context, is
unrelated; a shorter one may be a bare fact ("1889") that the judges must see."""


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
    verdict: AnswerVerdict
    reason: str


class Judge(ABC):
    """A judge of an answer. Implement :meth:`judge`; raise on failure, never return a fake 0."""

    name: str = "abstract-judge"
    weight: float = 1.0
    """This judge's weight in the judges' mean."""
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
    min_words: int = MIN_WORDS
    too_short_ratio: float = TOO_SHORT_RATIO
    too_long_ratio: float = TOO_LONG_RATIO
    judge_timeout_s: float = 30.0
    pre_check_weight: float = 0.3
    judge_weight: float = 0.7
    pass_above: float = 0.8
    review_above: float = 0.5
    judge_floor: float = 0.5
    """A judge scoring below this caps the verdict at ``review`` (0 turns the cap off)."""

    def __post_init__(self) -> None:
        if self.pre_check_weight < 0 or self.judge_weight < 0:
            raise ValueError("weights must not be negative")
        if self.pre_check_weight + self.judge_weight <= 0:
            raise ValueError("at least one weight must be positive")
        if self.review_above > self.pass_above:
            raise ValueError("review_above must not exceed pass_above")
        if not 0 <= self.too_short_ratio <= self.too_long_ratio:
            raise ValueError("too_short_ratio must lie between 0 and too_long_ratio")


def length_check(
    query: str,
    answer: str,
    too_short_ratio: float = TOO_SHORT_RATIO,
    too_long_ratio: float = TOO_LONG_RATIO,
) -> Judgement:
    """Answer/query length ratio in characters: too short 0.0, too long 0.5, otherwise 1.0."""
    query_chars = max(1, len(query.strip()))
    answer_chars = len(answer.strip())
    ratio = answer_chars / query_chars
    if ratio < too_short_ratio:
        return Judgement(
            0.0,
            f"Answer is too short: {answer_chars} characters for a {query_chars}-character query",
        )
    if ratio > too_long_ratio:
        return Judgement(
            0.5,
            f"Answer is too long: {answer_chars} characters for a {query_chars}-character query",
        )
    return Judgement(1.0, "Answer length is acceptable")


def overlap_check(query: str, answer: str) -> Judgement:
    """Share of the query's unique content words (stemmed) that the answer contains."""
    wanted = analyse(query).content
    if not wanted:
        return Judgement(1.0, "The query has no content words to look for")
    found = wanted & analyse(answer).content
    score = len(found) / len(wanted)
    verdict = "There is a good overlap" if score >= 0.5 else "There is little overlap"
    reason = f"{verdict}: {len(found)} of {len(wanted)} query terms in the answer"
    missing = sorted(wanted - found)
    if missing:
        reason += f"; missing: {', '.join(missing[:8])}"
    return Judgement(score, reason)


def format_check(answer: str, min_words: int = MIN_WORDS) -> Judgement:
    """Empty or fewer than ``min_words`` words 0.0; a run of three ``!``, ``?`` or ``.`` 0.5."""
    if not answer.strip():
        return Judgement(0.0, "Answer is empty")
    words = len(_WORD.findall(answer))
    if words < min_words:
        return Judgement(0.0, f"Answer has {words} word(s), fewer than {min_words}")
    if _PUNCTUATION_RUN.search(answer):
        return Judgement(0.5, "Answer has repeated punctuation")
    return Judgement(1.0, "Valid Answer")


def non_answer(interaction: Interaction) -> str | None:
    """Why the answer says nothing to the query (empty, no words, filler, unrelated), or ``None``.

    Pure and cheap: it decides the early exit together with the pre-checks.
    """
    answer = interaction.answer.strip()
    if not answer:
        return "the answer is empty"
    words = _WORD.findall(answer)
    if not words:
        return "the answer has no words"
    if " ".join(words).lower().replace("’", "'") in _FILLER:
        return f"the answer is filler ({answer[:40]!r})"
    terms = analyse(answer).content
    if len(terms) >= UNRELATED_MIN_TERMS and not terms & (
        analyse(interaction.query).content | analyse(interaction.context).content
    ):
        return "the answer shares no term with the query or the context"
    return None


def supported_by_context(interaction: Interaction) -> bool:
    """Whether every content term (and number) of the answer appears in the context."""
    answer = analyse(interaction.answer)
    if not answer.content and not answer.numbers:
        return False
    context = analyse(interaction.context)
    return answer.content <= context.content and answer.numbers <= context.numbers


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
            (
                LENGTH_CHECKER,
                lambda i: length_check(
                    i.query, i.answer, self.settings.too_short_ratio, self.settings.too_long_ratio
                ),
            ),
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
        exit_reason = self._early_exit(interaction, pre_mean)
        if exit_reason is not None:
            return AnswerEvaluation(tuple(pre), pre_mean, "fail", f"early exit: {exit_reason}")
        checks = tuple((j.name, j.judge) for j in self.judges)
        timeouts = tuple(j.timeout_s or s.judge_timeout_s for j in self.judges)
        judged = self._run(self._judge_pool, "judge", checks, interaction, timeouts)
        stages = (*pre, *judged)
        judge_mean = _weighted_mean(
            [(j.weight, st.score) for j, st in zip(self.judges, judged, strict=True)]
        )
        if judge_mean is None:
            failed = "; ".join(f"{st.name}: {st.error}" for st in judged) or "no judges configured"
            return AnswerEvaluation(stages, None, "review", f"every judge failed ({failed})")
        confidence = _weighted_mean(((s.pre_check_weight, pre_mean), (s.judge_weight, judge_mean)))
        if confidence is None:  # the judges' weight is 0 and no pre-check gave a score
            confidence = judge_mean
        verdict: AnswerVerdict = (
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
            if verdict == "pass":
                verdict = "review"
                reason += "; capped at review: not every judge looked at the answer"
        vetoes = [
            f"{st.name} {st.score:.2f}"
            for st in judged
            if st.score is not None and st.score < s.judge_floor
        ]
        if vetoes and verdict == "pass":
            verdict = "review"
            reason += f"; capped at review: {', '.join(vetoes)} below {s.judge_floor}"
        return AnswerEvaluation(stages, confidence, verdict, reason)

    def _early_exit(self, interaction: Interaction, pre_mean: float | None) -> str | None:
        """Why the answer fails without a judge, or ``None`` when the judges must see it."""
        nothing = non_answer(interaction)
        if nothing is not None:
            return nothing
        threshold = self.settings.early_exit_threshold
        if pre_mean is None or pre_mean >= threshold:
            return None
        if supported_by_context(interaction):
            return None
        return f"pre-check mean {pre_mean:.3f} < {threshold}"

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


def _weighted_mean(groups: Sequence[tuple[float, float | None]]) -> float | None:
    # Weights are renormalised over the parts that produced a score, so that configured weights
    # need not sum to 1 and a part with no score is left out rather than counted as 0.
    present = [(w, x) for w, x in groups if x is not None and w > 0]
    total = sum(w for w, _ in present)
    return sum(w * x for w, x in present) / total if total else None


def _mean(scores: Sequence[float | None]) -> float | None:
    present = [x for x in scores if x is not None]
    return sum(present) / len(present) if present else None
