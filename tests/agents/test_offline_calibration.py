"""The shipped offline model ranks held-out labelled pairs far better than chance.

Reads the public TRUE sets from ``../shared/data`` (next to the repository), as the benchmarks do.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import pytest

from aclarai.agents import EvalItem, OfflineEvaluator
from aclarai.agents.offline import load_params

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def read_true_set(name: str, limit: int) -> list[tuple[str, str, int]]:
    path = DATA / "true" / f"{name}.csv"
    assert path.exists(), f"labelled data missing: {path}"
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))[:limit]
    return [(r["grounding"], r["generated_text"], int(r["label"])) for r in rows]


def auroc(scores: Sequence[float], labels: Sequence[int]) -> float:
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def scored(name: str, limit: int = 400) -> tuple[list[float], list[int]]:
    rows = read_true_set(name, limit)
    results = OfflineEvaluator().evaluate_batch([EvalItem(claim, src) for src, claim, _ in rows])
    scores = [r.entailed_score for r in results]
    assert all(r.status == "ok" for r in results)
    return [s for s in scores if s is not None], [y for *_, y in rows]


@pytest.mark.parametrize(("name", "floor"), [("begin", 0.8), ("q2", 0.65)])
def test_held_out_sets_rank_well_above_chance(name: str, floor: float) -> None:
    assert name not in load_params()["fitted_on"], "the test must use a set the fit never saw"
    scores, labels = scored(name)
    assert len(scores) == len(labels)
    assert auroc(scores, labels) >= floor


def test_consistent_pairs_get_clearly_higher_probabilities() -> None:
    scores, labels = scored("begin")
    consistent = [s for s, y in zip(scores, labels, strict=True) if y]
    other = [s for s, y in zip(scores, labels, strict=True) if not y]
    assert sum(consistent) / len(consistent) > sum(other) / len(other) + 0.2
