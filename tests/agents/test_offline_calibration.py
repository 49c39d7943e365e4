"""The shipped offline model ranks human-labelled pairs far better than chance.

The pairs are a small sample of two public factual-consistency sets vendored in
``tests/data/labelled_pairs.csv`` (see ``tests/data/README.md`` for sources and licences), so the
test runs on any clone. The full leave-one-dataset-out protocol is ``benchmarks/quality.py``.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import pytest

from aclarai.agents import EvalItem, OfflineEvaluator

PAIRS = Path(__file__).resolve().parents[1] / "data" / "labelled_pairs.csv"


def read_set(name: str) -> list[tuple[str, str, int]]:
    with PAIRS.open(encoding="utf-8", newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["set"] == name]
    return [(r["grounding"], r["generated_text"], int(r["label"])) for r in rows]


def auroc(scores: Sequence[float], labels: Sequence[int]) -> float:
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def scored(name: str) -> tuple[list[float], list[int]]:
    rows = read_set(name)
    assert len(rows) == 120, "the vendored sample holds 60 consistent and 60 inconsistent pairs"
    results = OfflineEvaluator().evaluate_batch([EvalItem(claim, src) for src, claim, _ in rows])
    assert all(r.status == "ok" for r in results)
    scores = [r.entailed_score for r in results]
    assert all(s is not None and 0.0 <= s <= 1.0 for s in scores)
    return [s for s in scores if s is not None], [y for *_, y in rows]


@pytest.mark.parametrize(("name", "floor"), [("frank", 0.8), ("summeval", 0.65)])
def test_labelled_pairs_rank_well_above_chance(name: str, floor: float) -> None:
    scores, labels = scored(name)
    assert auroc(scores, labels) >= floor


def test_consistent_summaries_get_clearly_higher_probabilities() -> None:
    scores, labels = scored("frank")
    consistent = [s for s, y in zip(scores, labels, strict=True) if y]
    other = [s for s, y in zip(scores, labels, strict=True) if not y]
    assert sum(consistent) / len(consistent) > sum(other) / len(other) + 0.1
