"""A learned second opinion on the Chinese and Japanese sentences that may be steps.

Both languages leave a statement's subject out as readily as a step's: 「从 NOAA 获取预测」
states what a tool does, 「向 Kestrel 要一份估价」 tells the reader what to do, and a Japanese
to-do in the plain form (「地図を用意する。」) ends as a statement does. Where the verb stands
does not tell them apart, and :mod:`~aclarai.agents.offline.cjk_steps` passes such a sentence
by. This model weighs what the sentence opens and ends with, its markers of aspect, modality
and person, and its numbers: a logistic regression fitted on the labelled tune vaults by
``benchmarks/fit_steps.py``. Its threshold is the lowest at which, fitted on all styles but one
and tried on that one, it drops no more than a fixed share of the real claims; it is asked only
about sentences the rules leave open, and a habit (「毎朝」, 「每天」) is never a step to it.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from importlib import resources
from typing import Any

from aclarai.agents.offline.cjk_steps import clause_opening, tag_chinese
from aclarai.agents.offline.features import word_set

STEP_PARAMS_RESOURCE = "step_params.json"

LANGUAGES = ("zh", "ja")

_CHINESE_MARKERS = word_set(
    "了 过 着 会 能 可以 是 有 的 我 我们 你 您 他 她 它 这 请 要 先 再 然后 就 把 将 用 在 一下 "
    "分钟 后 前 时"
)
"""Words that say who acts, what happened or could, or what to do and when."""

_JAPANESE_MARKERS = word_set(
    "は が も を に で た ている ました です ます だ ない 私 僕 、 こと する しておく 前に までに"
)

_CHINESE_NAMES = frozenset({"nr", "nrt", "ns", "nt", "nz", "eng"})

_CLAUSE = re.compile(r"[，；,;：:]")


def step_features(sentence: str, lang: str) -> dict[str, float]:
    """The features of one sentence (its label taken off) for the model of its language."""
    return _chinese_features(sentence) if lang == "zh" else _japanese_features(sentence)


def _chinese_features(sentence: str) -> dict[str, float]:
    words = [(w, t) for w, t in tag_chinese(sentence) if w.strip()]
    tags = [t for _, t in words]
    said = {w for w, _ in words}
    features: dict[str, float] = {
        "length": min(len(sentence), 80) / 80,
        "number": float(any(ch.isdigit() for ch in sentence)),
        "verbs": sum(t.startswith("v") for t in tags) / max(1, len(tags)),
        "pronoun": float("r" in tags),
        "name": float(any(t in _CHINESE_NAMES for t in tags)),
        "ends in 了": float(sentence.rstrip("。！!").endswith("了")),
    }
    features.update({f"word {i} {t}": 1.0 for i, t in enumerate(tags[:3])})
    if words:
        features[f"opens with {words[0][0]}"] = 1.0
    features.update({f"says {m}": 1.0 for m in sorted(_CHINESE_MARKERS) if m in said})
    clauses = [c for c in _CLAUSE.split(sentence) if c.strip()]
    features["clauses"] = min(len(clauses), 4) / 4
    for i, clause in enumerate(clauses[:2]):
        opening = clause_opening(clause)
        if opening:
            word, tag = opening[0]
            features[f"clause {i} opens with {word}"] = 1.0
            features[f"clause {i} opens with a {tag}"] = 1.0
            if len(opening) > 1:
                features[f"clause {i} opens with a {tag} {opening[1][1]}"] = 1.0
    return features


def _japanese_features(sentence: str) -> dict[str, float]:
    core = sentence.rstrip("。．！!？? ")
    features: dict[str, float] = {
        "length": min(len(sentence), 80) / 80,
        "number": float(any(ch.isdigit() for ch in sentence)),
    }
    features.update({f"ends in {core[-n:]}": 1.0 for n in (1, 2, 3, 4) if len(core) >= n})
    features.update({f"says {m}": 1.0 for m in sorted(_JAPANESE_MARKERS) if m in sentence})
    return features


class StepModel:
    """Per language: sparse weights, an intercept and the threshold of a step."""

    def __init__(self, params: dict[str, Any]):
        self.models: dict[str, tuple[dict[str, float], float, float]] = {}
        for lang, model in params.get("languages", {}).items():
            try:
                weights = {name: float(w) for name, w in model["weights"].items()}
                self.models[lang] = (weights, float(model["intercept"]), float(model["threshold"]))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ValueError(
                    f"step model parameters for {lang!r} are malformed: {exc!r}"
                ) from exc

    def probability(self, sentence: str, lang: str) -> float | None:
        """P(step), or ``None`` for a language the model was not fitted for."""
        model = self.models.get(lang)
        if model is None:
            return None
        weights, intercept, _ = model
        features = step_features(sentence, lang)
        logit = intercept + sum(weights.get(name, 0.0) * x for name, x in features.items())
        return 1 / (1 + math.exp(-max(min(logit, 50.0), -50.0)))

    def is_step(self, sentence: str, lang: str) -> bool:
        probability = self.probability(sentence, lang)
        return probability is not None and probability >= self.models[lang][2]


@cache
def shipped_model() -> StepModel:
    """The model fitted on the tune vaults, shipped with the package."""
    path = resources.files("aclarai.agents.offline").joinpath(STEP_PARAMS_RESOURCE)
    return StepModel(json.loads(path.read_text("utf-8")))


_HABIT = re.compile(
    r"毎[朝晩日週月年夜回]|いつも|普段|[日週月年]に[^、。]{0,3}回|"
    r"每[天日周月年晚早次]|经常|总是|通常|平时"
)
"""A habit states what is done, however it is phrased: 「寝る前に毎晩日記を書く。」,
「每周五和团队一起复盘。」."""


def is_likely_step(sentence: str, lang: str) -> bool:
    """Whether the shipped model takes a sentence the rules left open, and no habit, for a
    step."""
    return (
        lang in LANGUAGES
        and _HABIT.search(sentence) is None
        and shipped_model().is_step(sentence, lang)
    )
