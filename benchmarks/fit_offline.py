"""Fit the offline entailment model and write ``agents/offline_params.json``.

    python benchmarks/fit_offline.py [--data ../shared/data] [--fit wice,dialfact,paws] [--loso]

The model is a logistic regression on :data:`aclarai.agents.offline_features.FEATURE_NAMES`:

* each fitted set gets its own intercept and equal total weight, with its two classes balanced,
  so the shared weights learn what separates labels *within* a set, not which set a pair came
  from (the sets differ wildly in base rate and text length);
* every weight has the sign its feature must have (overlap helps, a missing number hurts), which
  stops a weight from learning one set's construction artefacts at the others' expense;
* the shared score is then calibrated on WiCE (supported against not supported, classes
  balanced), the set closest to a claim checked against its evidence, and the verdict thresholds
  are the pair that maximises WiCE's three-way balanced accuracy.

WiCE's ``partially_supported`` pairs are left out of the fit and used only for the thresholds.
The script prints AUROC on every TRUE set the model was not fitted on (and, with ``--loso``,
leave-one-set-out figures for all six).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from aclarai.agents.offline_features import FEATURE_NAMES, analyse, pair_features

sys.path.insert(0, str(Path(__file__).resolve().parent))
from labelled_data import DEFAULT_DATA, TRUE_SETS, auroc, load_true, load_wice

PARAMS_PATH = Path(__file__).resolve().parent.parent / "agents" / "offline_params.json"
DEFAULT_FIT = ("wice", "dialfact", "paws")
L2 = 0.002
SIGNS = {name: -1 if name.startswith(("unmatched", "negation")) else 1 for name in FEATURE_NAMES}

Matrix = np.ndarray


def featurise(data_dir: Path) -> dict[str, tuple[Matrix, list[str]]]:
    """Feature matrix and raw labels of every set."""
    sets: dict[str, tuple[Matrix, list[str]]] = {}
    for name in (*TRUE_SETS, "wice"):
        pairs = load_wice(data_dir) if name == "wice" else load_true(data_dir, name)
        rows = [pair_features(analyse(p.claim), analyse(p.source)) for p in pairs]
        sets[name] = (np.array(rows), [p.label for p in pairs])
    return sets


def binary(sets: dict[str, tuple[Matrix, list[str]]], name: str) -> tuple[Matrix, Matrix]:
    """Features and 0/1 labels; WiCE keeps supported (1) against not supported (0)."""
    features, labels = sets[name]
    if name != "wice":
        return features, np.array([float(label) for label in labels])
    keep = np.array([label != "weakly_supported" for label in labels])
    return features[keep], np.array([label == "supported" for label in labels], float)[keep]


def fit_shared(sets: dict[str, tuple[Matrix, list[str]]], names: list[str]) -> Matrix:
    """Sign-constrained logistic regression with one intercept per set; returns raw weights."""
    blocks = [binary(sets, name) for name in names]
    features = np.vstack([x for x, _ in blocks])
    labels = np.concatenate([y for _, y in blocks])
    weights = np.concatenate(
        [np.where(y == 1, 0.5 / y.sum(), 0.5 / (1 - y).sum()) for _, y in blocks]
    )
    mean, scale = features.mean(0), features.std(0) + 1e-9
    indicators = np.zeros((len(labels), len(names)))
    row = 0
    for k, (x, _) in enumerate(blocks):
        indicators[row : row + len(x), k] = 1
        row += len(x)
    design = np.hstack([indicators, (features - mean) / scale])
    signs = np.array([0] * len(names) + [SIGNS[n] for n in FEATURE_NAMES])
    penalty = np.array([0.0] * len(names) + [L2] * len(FEATURE_NAMES))
    beta = _coordinate_newton(design, labels, weights, signs, penalty)
    return beta[len(names) :] / scale


def _coordinate_newton(
    design: Matrix, labels: Matrix, weights: Matrix, signs: Matrix, penalty: Matrix
) -> Matrix:
    # Cyclic coordinate Newton steps, each clipped at zero on the wrong side of its sign.
    beta = np.zeros(design.shape[1])
    logits = np.zeros(len(labels))
    for _ in range(500):
        largest = 0.0
        for j in range(design.shape[1]):
            column = design[:, j]
            p = 1 / (1 + np.exp(-logits))
            gradient = column @ (weights * (p - labels)) + penalty[j] * beta[j]
            curvature = (column * column) @ (weights * p * (1 - p)) + penalty[j] + 1e-12
            new = beta[j] - gradient / curvature
            if signs[j] > 0:
                new = max(new, 0.0)
            elif signs[j] < 0:
                new = min(new, 0.0)
            step = new - beta[j]
            if step:
                logits += step * column
                beta[j] = new
                largest = max(largest, abs(step))
        if largest < 1e-7:
            break
    return beta


def platt(scores: Matrix, labels: Matrix) -> tuple[float, float]:
    """Slope and intercept mapping a score to a balanced probability (Newton's method)."""
    weights = np.where(labels == 1, 0.5 / labels.sum(), 0.5 / (1 - labels).sum())
    design = np.column_stack([scores, np.ones_like(scores)])
    beta = np.zeros(2)
    for _ in range(100):
        p = 1 / (1 + np.exp(-(design @ beta)))
        gradient = design.T @ (weights * (p - labels))
        hessian = (design * (weights * p * (1 - p))[:, None]).T @ design + 1e-9 * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return float(beta[0]), float(beta[1])


def verdict_thresholds(probabilities: Matrix, labels: list[str]) -> tuple[float, float]:
    """The (weak, supported) pair of thresholds with the best three-way balanced accuracy."""
    grid = np.round(np.arange(0.05, 0.96, 0.01), 2)
    gold = np.array(labels)
    best = (-1.0, 0.5, 0.5)
    for low in grid:
        for high in grid[grid >= low]:
            predicted = np.where(
                probabilities >= high,
                "supported",
                np.where(probabilities >= low, "weakly_supported", "unsupported"),
            )
            recalls = [np.mean(predicted[gold == c] == c) for c in np.unique(gold)]
            score = float(np.mean(recalls))
            if score > best[0]:
                best = (score, float(low), float(high))
    return best[1], best[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--fit", default=",".join(DEFAULT_FIT), help="sets to fit on")
    parser.add_argument("--loso", action="store_true", help="also print leave-one-set-out AUROC")
    parser.add_argument("--out", type=Path, default=PARAMS_PATH)
    args = parser.parse_args(argv)
    fit_on = [name.strip() for name in args.fit.split(",") if name.strip()]
    if "wice" not in fit_on:
        parser.error("--fit must include wice (it calibrates the probabilities)")

    started = time.perf_counter()
    sets = featurise(args.data)
    print(
        f"features of {sum(len(v[1]) for v in sets.values())} pairs in "
        f"{time.perf_counter() - started:.1f} s"
    )

    raw = fit_shared(sets, fit_on)
    wice_x, wice_y = binary(sets, "wice")
    slope, intercept = platt(wice_x @ raw, wice_y)
    weights = raw * slope
    all_wice = sets["wice"][0] @ weights + intercept
    weak, supported = verdict_thresholds(1 / (1 + np.exp(-all_wice)), sets["wice"][1])

    held_out = {}
    for name in TRUE_SETS:
        if name not in fit_on:
            x, y = binary(sets, name)
            held_out[name] = round(auroc(list(x @ weights), [int(v) for v in y]), 4)
    mean = float(np.mean(list(held_out.values()))) if held_out else float("nan")
    print(f"fitted on: {', '.join(fit_on)}")
    for name, value in held_out.items():
        print(f"  held-out AUROC {name:<9} {value:.3f}")
    print(f"  held-out mean            {mean:.3f}")
    print(f"verdict thresholds: weakly_supported >= {weak:.2f}, supported >= {supported:.2f}")

    if args.loso:
        print("leave-one-set-out (fitted on WiCE and the five other TRUE sets):")
        scores = []
        for name in TRUE_SETS:
            loso = fit_shared(sets, ["wice", *(n for n in TRUE_SETS if n != name)])
            x, y = binary(sets, name)
            scores.append(auroc(list(x @ loso), [int(v) for v in y]))
            print(f"  {name:<9} {scores[-1]:.3f}")
        print(f"  mean      {np.mean(scores):.3f}")

    params = {
        "format": 1,
        "fitted_on": fit_on,
        "weights": {n: round(float(w), 6) for n, w in zip(FEATURE_NAMES, weights, strict=True)},
        "intercept": round(intercept, 6),
        "thresholds": {"weakly_supported": weak, "supported": supported},
        "held_out_auroc": held_out,
    }
    args.out.write_text(json.dumps(params, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
