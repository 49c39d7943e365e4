"""How far an evaluator agrees with human labels: the statistics behind ``aclarai validate``.

Pure functions over labels and scores; the statistics themselves come from scikit-learn and SciPy,
imported when first needed (they take longer to import than most commands take to run).

- Answer verdicts (``pass`` / ``review`` / ``fail``) against human annotations: agreement rate,
  Cohen's κ, Kendall's τ-b on the order pass > review > fail, and the 3×3 confusion matrix (rows
  human, columns evaluator, both in :data:`VERDICT_ORDER`).
- Claim scores (0..1, ``None`` when evaluation failed) against human support labels: AUROC,
  balanced accuracy at the configured threshold, the threshold that maximises balanced accuracy,
  and the expected calibration error over ten equal-width bins (a 0.8 should be right 80% of the
  time). A failed evaluation is counted apart (``failed``) and left out of every statistic.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

VERDICT_ORDER: tuple[str, ...] = ("pass", "review", "fail")
"""Rows and columns of the confusion matrix; also the ordinal scale, best first."""
CALIBRATION_BINS = 10

_RANK = {verdict: len(VERDICT_ORDER) - i for i, verdict in enumerate(VERDICT_ORDER)}


@dataclass(frozen=True, slots=True)
class AnswerAgreement:
    """Evaluator verdicts against human verdicts."""

    n: int
    agreement: float
    cohen_kappa: float | None
    """``None`` when undefined (one label only on both sides)."""
    kendall_tau_b: float | None
    confusion: tuple[tuple[int, ...], ...]
    """``confusion[i][j]``: human said ``VERDICT_ORDER[i]``, the evaluator ``VERDICT_ORDER[j]``."""


@dataclass(frozen=True, slots=True)
class ClaimAgreement:
    """Evaluator scores against human support labels."""

    n: int
    failed: int
    """Pairs whose evaluation failed (null score), left out of the statistics."""
    auroc: float | None
    """``None`` when the humans gave only one label."""
    threshold: float
    balanced_accuracy: float | None
    best_threshold: float | None
    best_balanced_accuracy: float | None
    ece: float | None


def answer_agreement(human: Sequence[str], predicted: Sequence[str]) -> AnswerAgreement:
    """Agreement of ``predicted`` verdicts with ``human`` ones (same length, same order)."""
    if len(human) != len(predicted):
        raise ValueError("human and predicted verdicts differ in length")
    for verdict in (*human, *predicted):
        if verdict not in _RANK:
            raise ValueError(f"unknown verdict {verdict!r}; expected one of {VERDICT_ORDER}")
    if not human:
        return AnswerAgreement(0, 0.0, None, None, _empty_confusion())
    from scipy.stats import kendalltau
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    agreement = sum(h == p for h, p in zip(human, predicted, strict=True)) / len(human)
    matrix = confusion_matrix(human, predicted, labels=list(VERDICT_ORDER))
    # With one label on a side κ and τ are undefined: reported as None, not warned about.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kappa = cohen_kappa_score(human, predicted, labels=list(VERDICT_ORDER))
        tau = kendalltau([_RANK[h] for h in human], [_RANK[p] for p in predicted]).statistic
    return AnswerAgreement(
        n=len(human),
        agreement=agreement,
        cohen_kappa=_finite(kappa),
        kendall_tau_b=_finite(tau),
        confusion=tuple(tuple(int(x) for x in row) for row in matrix),
    )


def claim_agreement(
    labels: Sequence[bool], scores: Sequence[float | None], threshold: float
) -> ClaimAgreement:
    """Agreement of claim ``scores`` with human ``labels`` (``True``: supported)."""
    if len(labels) != len(scores):
        raise ValueError("labels and scores differ in length")
    kept = [(y, s) for y, s in zip(labels, scores, strict=True) if s is not None]
    failed = len(labels) - len(kept)
    if not kept:
        return ClaimAgreement(len(labels), failed, None, threshold, None, None, None, None)
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    y = np.array([bool(label) for label, _ in kept])
    p = np.array([float(score) for _, score in kept])
    balanced = float(balanced_accuracy_score(y, p >= threshold))
    if y.all() or not y.any():
        return ClaimAgreement(
            len(labels), failed, None, threshold, balanced, None, None, _ece(y, p)
        )
    best_threshold, best_balanced = _best_threshold(y, p)
    return ClaimAgreement(
        n=len(labels),
        failed=failed,
        auroc=float(roc_auc_score(y, p)),
        threshold=threshold,
        balanced_accuracy=balanced,
        best_threshold=best_threshold,
        best_balanced_accuracy=best_balanced,
        ece=_ece(y, p),
    )


def _best_threshold(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    # Balanced accuracy is (TPR + TNR) / 2 = (1 + TPR - FPR) / 2: the ROC point with the largest
    # Youden's J gives it, and its threshold is the score to cut at.
    from sklearn.metrics import roc_curve

    fpr, tpr, thresholds = roc_curve(y, p)
    best = int(np.argmax(tpr - fpr))
    threshold = float(min(1.0, thresholds[best]))
    return threshold, float((1.0 + tpr[best] - fpr[best]) / 2)


def _ece(y: np.ndarray, p: np.ndarray) -> float:
    bins = np.minimum((p * CALIBRATION_BINS).astype(int), CALIBRATION_BINS - 1)
    total = 0.0
    for b in range(CALIBRATION_BINS):
        members = bins == b
        if members.any():
            total += members.sum() * abs(y[members].mean() - p[members].mean())
    return float(total / len(p))


def _finite(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _empty_confusion() -> tuple[tuple[int, ...], ...]:
    return tuple((0,) * len(VERDICT_ORDER) for _ in VERDICT_ORDER)
