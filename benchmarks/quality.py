"""Score quality of an evaluator on the labelled public sets.

    python benchmarks/quality.py [--protocol loso|shipped] [--evaluator offline|llm]
                                 [--data DIR] [--limit N]

``--protocol loso`` (the default) measures the offline scorer honestly, leaving one dataset out:
each labelled set (the six TRUE sets, WiCE dev supported against not supported, and HaluEval
with answer length controlled, see ``labelled_data.load_halueval_matched``) takes its turn as
the held-out set while the model is fitted on the others with ``fit_offline.fit`` (weights,
calibration and verdict thresholds all come from the fitted sets). The held-out pairs are then
scored by the real ``OfflineEvaluator`` with those parameters. Per set it prints AUROC, the
word-overlap baseline's AUROC on the same pairs, balanced accuracy at the calibrated 0.5 and at
``threshold.claim_quality``, ECE (10 bins) and claims/s on one core; then the means.

``--protocol shipped`` scores every set with the shipped parameters (or the LLM evaluator). The
LLM evaluator is built exactly as the daemon builds it (``aclarai.daemon.factory``), from the
configuration (``--config`` or the usual layers) with ``model.backend`` set by ``--evaluator``;
the offline one needs no configuration and is built directly.
Prints, per set: AUROC of ``entailed_score``, balanced accuracy at ``threshold.claim_quality``,
WiCE's three-way verdict accuracy, and for HaluEval (length-matched, as above) how often the
right answer of a pair outscores the hallucinated one. Then calls per claim, cache hit rate
and time per item.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aclarai.agents import EvalItem, Evaluator, Score
from aclarai.agents.offline.evaluator import OfflineEvaluator, load_params
from aclarai.agents.offline.features import STOPWORDS
from aclarai.daemon import load_config
from aclarai.daemon.factory import build_evaluator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fit_offline import featurise_all, fit, wice_three_way
from labelled_data import (
    Pair,
    auroc,
    balanced_accuracy,
    binary_sets,
    data_dir,
    expected_calibration_error,
    load_halueval_matched,
    load_true,
    load_wice,
    true_sets,
    word_overlap,
)


@dataclass
class Run:
    """Scores of one set and how long they took."""

    name: str
    pairs: list[Pair]
    scores: list[Score] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> int:
        return sum(s.entailed_score is None for s in self.scores)


def evaluate(evaluator: Evaluator, pairs: Sequence[Pair], batch_size: int) -> list[Score]:
    """Scores of every pair, in order, in batches."""
    scores: list[Score] = []
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        scores.extend(evaluator.evaluate_batch([EvalItem(p.claim, p.source) for p in batch]))
    return scores


def binary_metrics(run: Run, threshold: float) -> tuple[float, float]:
    """AUROC and balanced accuracy at ``threshold`` over the scored pairs."""
    scored = [
        (s.entailed_score, int(p.label in ("1", "supported")))
        for p, s in zip(run.pairs, run.scores, strict=True)
        if s.entailed_score is not None and p.label != "weakly_supported"
    ]
    values = [v for v, _ in scored]
    labels = [y for _, y in scored]
    return auroc(values, labels), balanced_accuracy([v >= threshold for v in values], labels)


def three_way_accuracy(run: Run) -> float:
    """Share of WiCE claims whose verdict equals the gold label (no verdict counts as wrong)."""
    right = sum(s.verdict == p.label for p, s in zip(run.pairs, run.scores, strict=True))
    return right / len(run.pairs)


def halueval_length_controlled(run: Run) -> tuple[int, float, float]:
    """(pairs scored, share where the right answer outscores the hallucinated one, AUROC) over
    the length-matched (right, hallucinated) pairs, which come in that order."""
    kept, wins, values, labels = 0, 0.0, [], []
    for i in range(0, len(run.pairs), 2):
        a, b = run.scores[i].entailed_score, run.scores[i + 1].entailed_score
        if a is None or b is None:
            continue
        kept += 1
        wins += 1.0 if a > b else 0.5 if a == b else 0.0
        values += [a, b]
        labels += [1, 0]
    if not kept:
        return 0, float("nan"), float("nan")
    return kept, wins / kept, auroc(values, labels)


def load_sets(data: Path, limit: int | None) -> list[Run]:
    """Every labelled set, each cut to its first ``limit`` pairs when given."""
    sets = [(name, load_true(data, name)) for name in true_sets(data)]
    sets += [("wice", load_wice(data)), ("halueval", load_halueval_matched(data))]
    runs = []
    for name, pairs in sets:
        if limit is not None:
            pairs = pairs[: limit * 2 if name == "halueval" else limit]
        runs.append(Run(name, pairs))
    return runs


def fitted_sets(evaluator: Evaluator) -> set[str]:
    """The sets the offline model was fitted on (marked in the table)."""
    if evaluator.name != "offline":
        return set()
    return set(load_params().get("fitted_on", []))


def leave_one_out(data: Path, threshold: float, batch_size: int, limit: int | None) -> None:
    """Fit on all sets but one, score the one left out; print one row per set and the means."""
    pairs = binary_sets(data)
    if limit is not None:
        pairs = {name: rows[:limit] for name, rows in pairs.items()}
    sets = featurise_all(pairs)
    wice = wice_three_way(data)
    print(
        "leave one dataset out: fitted on the other sets, scored by OfflineEvaluator; "
        f"balanced accuracy at 0.5 and at threshold.claim_quality {threshold:.2f}"
    )
    header = f"{'held out':<10} {'pairs':>6} {'AUROC':>6} {'overlap':>7} {'bal@.5':>6}"
    print(f"{header} {'bal@' + f'{threshold:.2f}':>8} {'ECE':>5} {'claims/s':>9}")
    table: list[tuple[float, ...]] = []
    for name, rows in pairs.items():
        params = fit(sets, [n for n in sets if n != name], wice)
        evaluator = OfflineEvaluator(params)
        started = time.perf_counter()
        scores = evaluate(evaluator, rows, batch_size)
        rate = len(rows) / (time.perf_counter() - started)
        labels = [int(p.label) for p in rows]
        values = [s.entailed_score if s.entailed_score is not None else 0.0 for s in scores]
        baseline = [word_overlap(p.claim, p.source, STOPWORDS) for p in rows]
        row = (
            auroc(values, labels),
            auroc(baseline, labels),
            balanced_accuracy([v >= 0.5 for v in values], labels),
            balanced_accuracy([v >= threshold for v in values], labels),
            expected_calibration_error(values, labels),
            rate,
        )
        table.append(row)
        mark = " <" if row[0] < row[1] else ""
        print(
            f"{name:<10} {len(rows):>6} {row[0]:>6.3f} {row[1]:>7.3f} {row[2]:>6.3f} "
            f"{row[3]:>8.3f} {row[4]:>5.3f} {row[5]:>9,.0f}{mark}"
        )
    means = [sum(column) / len(column) for column in zip(*table, strict=True)]
    print(
        f"{'mean':<10} {'':>6} {means[0]:>6.3f} {means[1]:>7.3f} {means[2]:>6.3f} "
        f"{means[3]:>8.3f} {means[4]:>5.3f} {means[5]:>9,.0f}"
    )
    below = [name for name, row in zip(pairs, table, strict=True) if row[0] < row[1]]
    print("sets below word overlap: " + (", ".join(below) if below else "none"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--protocol", choices=("loso", "shipped"), default="loso")
    parser.add_argument("--evaluator", choices=("offline", "llm"), default="offline")
    parser.add_argument("--data", type=Path, default=None, help="labelled sets folder")
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--state-dir", type=Path, default=Path(".run/quality-state"))
    parser.add_argument("--limit", type=int, default=None, help="first N pairs of each set")
    args = parser.parse_args(argv)

    data = data_dir(args.data)
    if data is None:
        return 1
    config = load_config(args.config, overrides={"model.backend": args.evaluator})
    threshold = config.threshold.claim_quality
    if args.protocol == "loso":
        if args.evaluator != "offline":
            parser.error("--protocol loso fits the offline model; use --protocol shipped for llm")
        leave_one_out(data, threshold, config.processing.batch_size, args.limit)
        return 0
    runs = load_sets(data, args.limit)
    if args.evaluator == "llm":
        args.state_dir.mkdir(parents=True, exist_ok=True)
    built = OfflineEvaluator() if args.evaluator == "offline" else None
    with built or build_evaluator(config, args.state_dir) as evaluator:
        fitted = fitted_sets(evaluator)
        for run in runs:
            started = time.perf_counter()
            run.scores = evaluate(evaluator, run.pairs, config.processing.batch_size)
            run.seconds = time.perf_counter() - started
        usage = getattr(evaluator, "usage", None)
        model_id = evaluator.model_id
    print_report(runs, fitted, threshold, model_id, usage)
    return 0


def print_report(
    runs: list[Run], fitted: set[str], threshold: float, model_id: str, usage: object
) -> None:
    """The table, then the held-out mean, costs and speed."""
    print(f"evaluator {model_id}; balanced accuracy at entailed_score >= {threshold:.2f}")
    print(
        f"{'set':<10} {'pairs':>6} {'failed':>6} {'AUROC':>6} {'bal.acc':>7} {'ms/item':>7}  other"
    )
    held_out: list[float] = []
    for run in runs:
        auc, bal = binary_metrics(run, threshold)
        other = ""
        if run.name == "wice":
            other = f"3-way accuracy {three_way_accuracy(run):.3f} (AUROC: supported vs not)"
        elif run.name == "halueval":
            kept, wins, controlled = halueval_length_controlled(run)
            other = (
                f"length-controlled: {kept} pairs, right > hallucinated {wins:.3f}, "
                f"AUROC {controlled:.3f}"
            )
        elif run.name in fitted:
            other = "fitted on"
        else:
            held_out.append(auc)
        name = run.name + ("*" if run.name in fitted else "")
        per_item = 1000 * run.seconds / len(run.pairs)
        print(
            f"{name:<10} {len(run.pairs):>6} {run.failed:>6} {auc:>6.3f} {bal:>7.3f} "
            f"{per_item:>7.3f}  {other}"
        )
    if held_out:
        print(
            f"mean AUROC over the {len(held_out)} TRUE sets not fitted on: "
            f"{sum(held_out) / len(held_out):.3f}   (* = fitted on)"
        )
    statuses = Counter(s.status for run in runs for s in run.scores if s.entailed_score is None)
    if statuses:
        print("failures: " + "; ".join(f"{n} x {status}" for status, n in statuses.most_common(3)))
    items = sum(len(run.pairs) for run in runs)
    seconds = sum(run.seconds for run in runs)
    if usage is not None and hasattr(usage, "snapshot"):
        counts = usage.snapshot()
        cost = (
            f"calls per claim {counts['calls'] / items:.3f}; "
            f"cache hit rate {counts['cache_hits'] / items:.3f}"
        )
    else:
        cost = "calls per claim 0 (no model); cache hit rate n/a"
    print(f"{cost}; {1000 * seconds / items:.3f} ms per item ({items} items, {seconds:.1f} s)")


if __name__ == "__main__":
    raise SystemExit(main())
