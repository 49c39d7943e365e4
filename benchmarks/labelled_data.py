"""Readers for the labelled benchmark sets in ``../shared/data`` and the metrics run on them.

Shared by ``fit_offline.py`` and ``quality.py``; run those scripts from the repository root.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
from collections import defaultdict
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
DATA_ENV = "ACLARAI_DATA_DIR"
HOW_TO_GET = (
    "labelled sets not found in {path}: pass --data DIR or set ACLARAI_DATA_DIR to a folder with "
    "true/*.csv (TRUE benchmark, github.com/google-research/true), "
    "wice/oracle_claim_dev.jsonl (github.com/ryokamoi/wice) and halueval_qa_dev.jsonl "
    "(github.com/RUCAIBox/HaluEval)"
)


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


def true_sets(data_dir: Path) -> list[str]:
    """The TRUE sets the folder holds, in :data:`TRUE_SETS` order; one line on stderr names those
    it lacks, so a partial folder (the tests' sample among them) is measured on what it has."""
    present = [name for name in TRUE_SETS if (data_dir / "true" / f"{name}.csv").is_file()]
    missing = [name for name in TRUE_SETS if name not in present]
    if missing:
        print(f"{data_dir / 'true'} has no {', '.join(missing)}: left out", file=sys.stderr)
    return present


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


def data_dir(given: Path | None) -> Path | None:
    """``--data``, else ``$ACLARAI_DATA_DIR``, else ``../shared/data``; None (and one line on
    stdout saying how to get the sets) when that folder does not hold them."""
    chosen = given or (Path(os.environ[DATA_ENV]) if os.environ.get(DATA_ENV) else DEFAULT_DATA)
    if not (chosen / "true").is_dir():
        print(HOW_TO_GET.format(path=chosen))
        return None
    return chosen


def load_halueval_matched(data_dir: Path) -> list[Pair]:
    """HaluEval with answer length controlled: for every answer length in words, as many right
    answers as hallucinated ones (the first of each in file order), so that length carries no
    signal (hallucinated answers are mostly 5 to 20 words, right ones 1 to 3)."""
    by_length: dict[tuple[int, str], list[Pair]] = defaultdict(list)
    for pair in load_halueval(data_dir):
        by_length[len(pair.claim.split()), pair.label].append(pair)
    kept = []
    for length in sorted({n for n, _ in by_length}):
        right, wrong = by_length[length, "1"], by_length[length, "0"]
        keep = min(len(right), len(wrong))
        for a, b in zip(right[:keep], wrong[:keep], strict=True):
            kept += [a, b]
    return kept


def binary_sets(data_dir: Path) -> dict[str, list[Pair]]:
    """Every labelled set as 0/1 pairs: the TRUE sets, WiCE (supported against not supported;
    partially supported left out) and length-matched HaluEval."""
    sets = {name: load_true(data_dir, name) for name in true_sets(data_dir)}
    sets["wice"] = [
        Pair(p.source, p.claim, "1" if p.label == "supported" else "0")
        for p in load_wice(data_dir)
        if p.label != "weakly_supported"
    ]
    sets["halueval"] = load_halueval_matched(data_dir)
    return sets


_WORD = re.compile(r"[^\W_]+")


def word_overlap(claim: str, source: str, stopwords: frozenset[str]) -> float:
    """The baseline: share of the claim's distinct non-stopwords (lower-cased) in the source."""
    words = {w for w in _WORD.findall(claim.lower()) if w not in stopwords}
    if not words:
        return 0.0
    return len(words & set(_WORD.findall(source.lower()))) / len(words)


def expected_calibration_error(
    probabilities: Sequence[float], labels: Sequence[int], bins: int = 10
) -> float:
    """Mean gap between confidence and accuracy over equal-width probability bins, weighted by
    the bins' sizes: 0 when a 0.8 is right 80% of the time."""
    totals = [[0, 0.0, 0] for _ in range(bins)]
    for p, y in zip(probabilities, labels, strict=True):
        slot = totals[min(int(p * bins), bins - 1)]
        slot[0] += 1
        slot[1] += p
        slot[2] += y
    return sum(abs(s - hits) for _, s, hits in totals) / max(len(labels), 1)


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
