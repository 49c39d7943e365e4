"""Readers for the labelled benchmark sets in ``../shared/data`` and the metrics run on them.

Shared by ``fit_offline.py`` and ``quality.py``; run those scripts from the repository root.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TRUE_SETS: tuple[str, ...] = ("begin", "dialfact", "frank", "paws", "q2", "summeval")
WICE_LABELS: dict[str, str] = {
    "supported": "supported",
    "partially_supported": "weakly_supported",
    "not_supported": "unsupported",
}
DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
"""``../shared/data`` seen from the repository root."""


@dataclass(frozen=True, slots=True)
class Pair:
    """A source, a claim about it, and the gold label."""

    source: str
    claim: str
    label: str
    """``"1"``/``"0"`` for TRUE and HaluEval, a verdict label for WiCE."""


def load_true(data_dir: Path, name: str) -> list[Pair]:
    """One TRUE set: ``grounding`` is the source, ``generated_text`` the claim, label 1/0."""
    csv.field_size_limit(1 << 24)
    with (data_dir / "true" / f"{name}.csv").open(encoding="utf-8", newline="") as handle:
        return [
            Pair(row["grounding"], row["generated_text"], row["label"].strip())
            for row in csv.DictReader(handle)
        ]


def load_wice(data_dir: Path) -> list[Pair]:
    """WiCE dev: evidence sentences joined into one source, labels mapped to verdicts."""
    pairs = []
    with (data_dir / "wice" / "oracle_claim_dev.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            pairs.append(Pair(" ".join(row["evidence"]), row["claim"], WICE_LABELS[row["label"]]))
    return pairs


def load_halueval(data_dir: Path) -> list[Pair]:
    """HaluEval QA as pairs: the right answer (label 1) and the hallucinated one (label 0)."""
    pairs = []
    with (data_dir / "halueval_qa_dev.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            source = f"{row['knowledge']} Question: {row['question']}"
            pairs.append(Pair(source, row["right_answer"], "1"))
            pairs.append(Pair(source, row["hallucinated_answer"], "0"))
    return pairs


def auroc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve (ties count half), by the rank-sum formula."""
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    positives = sum(labels)
    negatives = len(labels) - positives
    if not positives or not negatives:
        return float("nan")
    rank_sum = sum(r for r, y in zip(ranks, labels, strict=True) if y)
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def balanced_accuracy(predicted: Sequence[bool], labels: Sequence[int]) -> float:
    """Mean of the true-positive and true-negative rates."""
    tp = sum(p and y for p, y in zip(predicted, labels, strict=True))
    tn = sum(not p and not y for p, y in zip(predicted, labels, strict=True))
    positives = sum(labels)
    negatives = len(labels) - positives
    if not positives or not negatives:
        return float("nan")
    return (tp / positives + tn / negatives) / 2
