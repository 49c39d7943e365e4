"""Fit the learned step model and write ``agents/offline/step_params.json``.

    python benchmarks/fit_steps.py [benchmarks/vaults/tune] [--max-lost SHARE] [--out PATH]

For Chinese and Japanese, every labelled sentence that is a claim or an instruction and that
the rules of :mod:`aclarai.agents.offline.not_claims` leave open becomes an example of
:func:`aclarai.agents.offline.step_model.step_features`. A logistic regression (L2, C=1) is
fitted once per style on all the other styles and tried on that one; the threshold is the lowest
of 0.50, 0.55, … 0.95 at which, so tried, it drops at most a share of the claims: 1% in
Japanese, 0.5% in Chinese, where a statement that leaves its subject out (a changelog's 「为每个
项目单独保存配置。」) reads like a step far more often. ``--max-lost`` sets one share for both.
The model written is then fitted on every style. Only the tune set is ever fitted on: the held-out
set measures what it does.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from claim_labels import load_labels
from sklearn.feature_extraction import DictVectorizer
from sklearn.linear_model import LogisticRegression

from aclarai.agents.offline.not_claims import not_a_claim, strip_label
from aclarai.agents.offline.step_model import LANGUAGES, STEP_PARAMS_RESOURCE, step_features
from aclarai.parsers import normalize_text

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "agents" / "offline" / STEP_PARAMS_RESOURCE
THRESHOLDS = [round(0.5 + 0.05 * i, 2) for i in range(10)]
MAX_LOST = {"ja": 0.01, "zh": 0.005}
C = 1.0

Example = tuple[dict[str, float], int, str]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labelled", nargs="?", type=Path, default=ROOT / "benchmarks/vaults/tune")
    parser.add_argument("--max-lost", type=float, help="the share of claims it may drop")
    parser.add_argument("--out", type=Path, default=OUT, help="where the parameters go")
    args = parser.parse_args(argv)
    models = {}
    for lang in LANGUAGES:
        examples = _examples(args.labelled / lang / "labels.json", lang)
        steps = sum(y for _, y, _ in examples)
        print(f"{lang}: {len(examples)} sentences the rules leave open, {steps} of them steps")
        caught, lost = _cross_validated(examples)
        claims = len(examples) - steps
        budget = args.max_lost if args.max_lost is not None else MAX_LOST[lang]
        threshold = next((t for t in THRESHOLDS if lost[t] <= budget * claims), THRESHOLDS[-1])
        for t in THRESHOLDS:
            mark = "  <-" if t == threshold else ""
            print(
                f"  {t:.2f}: steps caught {caught[t]}/{steps}, claims lost {lost[t]}/{claims}{mark}"
            )
        vectorizer, model = _fit(examples)
        weights = {
            name: round(float(w), 4)
            for name, w in zip(vectorizer.get_feature_names_out(), model.coef_[0], strict=True)
            if abs(w) >= 1e-4
        }
        models[lang] = {
            "weights": dict(sorted(weights.items())),
            "intercept": round(float(model.intercept_[0]), 4),
            "threshold": threshold,
            "fitted_on": {
                "sentences": len(examples),
                "steps": steps,
                "left_one_style_out": {"caught": caught[threshold], "lost": lost[threshold]},
            },
        }
    params = {"set": args.labelled.name, "C": C, "languages": models}
    args.out.write_text(json.dumps(params, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


def _examples(path: Path, lang: str) -> list[Example]:
    examples = []
    for note, labels in load_labels(path).items():
        for label in labels:
            if not (label.claim or label.kind == "instruction"):
                continue
            text = strip_label(normalize_text(label.text))
            if text and not_a_claim(text, lang, learned=False) is None:
                style = note.split("/")[0]
                examples.append((step_features(text, lang), int(not label.claim), style))
    return examples


def _fit(examples: Sequence[Example]) -> tuple[DictVectorizer, LogisticRegression]:
    vectorizer = DictVectorizer()
    x = vectorizer.fit_transform([f for f, _, _ in examples])
    model = LogisticRegression(C=C, max_iter=5000)
    model.fit(x, [y for _, y, _ in examples])
    return vectorizer, model


def _cross_validated(examples: Sequence[Example]) -> tuple[dict[float, int], dict[float, int]]:
    """Per threshold, the steps caught and the claims lost, each style tried on a model fitted
    on the others."""
    scores = np.zeros(len(examples))
    styles = np.array([s for _, _, s in examples])
    for style in sorted(set(styles)):
        inside = np.where(styles == style)[0]
        vectorizer, model = _fit([e for e, s in zip(examples, styles, strict=True) if s != style])
        tried = vectorizer.transform([examples[i][0] for i in inside])
        scores[inside] = model.predict_proba(tried)[:, 1]
    truth = np.array([y for _, y, _ in examples])
    caught = {t: int(((scores >= t) & (truth == 1)).sum()) for t in THRESHOLDS}
    lost = {t: int(((scores >= t) & (truth == 0)).sum()) for t in THRESHOLDS}
    return caught, lost


if __name__ == "__main__":
    sys.exit(main())
