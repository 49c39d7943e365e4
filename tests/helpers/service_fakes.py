"""Test doubles at our own interfaces (Evaluator, Judge) for the answer-evaluation tests."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from aclarai.agents import EvalItem, Evaluator, Interaction, Judge, Judgement, Score

_WORD = re.compile(r"\w+")


class OverlapEvaluator(Evaluator):
    """Entailment = share of the claim's words found in the source; records every item."""

    name = "test-overlap"
    version = "1"

    def __init__(self, fail_on: str | None = None):
        self.items: list[EvalItem] = []
        self._fail_on = fail_on
        self._lock = threading.Lock()

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        with self._lock:
            self.items.extend(items)
        return [self._score(item) for item in items]

    def _score(self, item: EvalItem) -> Score:
        if self._fail_on is not None and self._fail_on in item.claim:
            return Score.failed("error: scripted failure")
        claim = {w.lower() for w in _WORD.findall(item.claim)}
        source = {w.lower() for w in _WORD.findall(item.source)}
        share = len(claim & source) / len(claim) if claim else 0.0
        return Score(share, None, None)


class FixedJudge(Judge):
    """Always the same score; counts its calls."""

    def __init__(self, name: str, score: float):
        self.name = name
        self._score = score
        self.calls = 0

    def judge(self, interaction: Interaction) -> Judgement:
        self.calls += 1
        return Judgement(self._score, f"fixed {self._score}")


class RaisingJudge(Judge):
    def __init__(self, name: str, error: Exception):
        self.name = name
        self._error = error

    def judge(self, interaction: Interaction) -> Judgement:
        raise self._error


class BlockingJudge(Judge):
    """Blocks until ``release`` is set (or 10 s pass), then scores 1.0."""

    def __init__(self, name: str, *, timeout_s: float | None = None):
        self.name = name
        self.timeout_s = timeout_s
        self.release = threading.Event()
        self.started = threading.Event()

    def judge(self, interaction: Interaction) -> Judgement:
        self.started.set()
        self.release.wait(10)
        return Judgement(1.0, "released")


class BarrierJudge(Judge):
    """Scores 1.0 only if ``parties`` judges are inside ``judge`` at the same time."""

    def __init__(self, name: str, barrier: threading.Barrier):
        self.name = name
        self._barrier = barrier

    def judge(self, interaction: Interaction) -> Judgement:
        self._barrier.wait(timeout=5)
        return Judgement(1.0, "ran concurrently")
