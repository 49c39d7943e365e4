"""The offline evaluator: entailment, coverage and decontextualization from the text alone.

``entailed_score`` is a calibrated probability from a monotone logistic model over the lexical
features of :mod:`aclarai.agents.offline.features`; its learned weights ship in
``params.json`` (regenerate with ``benchmarks/fit_offline.py``; ``benchmarks/quality.py``
measures it leaving one labelled set out at a time). One rule sits on top of the model: a claim
that closely restates a source sentence but flips its polarity ("did not fail" against
"failed"), or swaps one of its numbers or names for one the source never mentions, is a
contradiction and scores at most :data:`CONTRADICTION_CAP`. The public sets hold too few such
pairs for a model to learn it. ``coverage_score`` and ``decontextualization_score`` are
rule-based (:mod:`~aclarai.agents.offline.coverage`, :mod:`~aclarai.agents.offline.decontext`).

Deterministic, no model download, no network. An item that cannot be scored gets ``None`` scores
and a status saying why, never 0.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import operator
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from aclarai.agents.base import EvalItem, Evaluator, Score, as_read, explained
from aclarai.agents.offline.coverage import coverage
from aclarai.agents.offline.decontext import decontextualization
from aclarai.agents.offline.features import (
    FEATURE_NAMES,
    TextView,
    analyse,
    contradiction,
    normalise,
    number_values,
    pair_features,
    stem,
)
from aclarai.agents.offline.words import WORD_PATTERN, find_words

logger = logging.getLogger(__name__)

PARAMS_RESOURCE = "params.json"
RULES_VERSION = "4"
"""Bumped when a rule outside the learned parameters changes the scores."""
CONTRADICTION_CAP = 0.1
_PRECISION = FEATURE_NAMES.index("content_precision_mean")
_ORDER = FEATURE_NAMES.index("order_agreement")
_SAME_ORDER = 0.75


def load_params() -> dict[str, Any]:
    """The learned parameters shipped with the package."""
    text = resources.files("aclarai.agents.offline").joinpath(PARAMS_RESOURCE).read_text("utf-8")
    params: dict[str, Any] = json.loads(text)
    return params


class EntailmentModel:
    """Logistic model: P(source entails claim) from :data:`FEATURE_NAMES`."""

    def __init__(self, params: Mapping[str, Any]):
        weights = params.get("weights", {})
        missing = [name for name in FEATURE_NAMES if name not in weights]
        if missing:
            raise ValueError(f"offline parameters lack weights for {', '.join(missing)}")
        self.weights = tuple(float(weights[name]) for name in FEATURE_NAMES)
        self.intercept = float(params["intercept"])
        thresholds = params["thresholds"]
        self.weak_threshold = float(thresholds["weakly_supported"])
        self.supported_threshold = float(thresholds["supported"])
        if not 0 <= self.weak_threshold <= self.supported_threshold <= 1:
            raise ValueError("offline parameters need 0 <= weakly_supported <= supported <= 1")

    def probability(self, features: Sequence[float], *, contradicted: bool = False) -> float:
        """Calibrated probability; at most :data:`CONTRADICTION_CAP` for a contradiction."""
        products = itertools.starmap(operator.mul, zip(self.weights, features, strict=True))
        logit = self.intercept + sum(products)
        probability = 1 / (1 + math.exp(-max(min(logit, 50.0), -50.0)))
        return min(probability, CONTRADICTION_CAP) if contradicted else probability

    def verdict(self, probability: float) -> str:
        """``supported``, ``weakly_supported`` or ``unsupported`` from the fitted thresholds."""
        if probability >= self.supported_threshold:
            return "supported"
        if probability >= self.weak_threshold:
            return "weakly_supported"
        return "unsupported"


class OfflineEvaluator(Evaluator):
    """Scores claims with no model and no network; see the module docstring."""

    name = "offline"

    def __init__(self, params: Mapping[str, Any] | None = None):
        """Build the evaluator.

        Args:
            params: Learned parameters in the format ``benchmarks/fit_offline.py`` writes; the
                shipped ``params.json`` when omitted.
        """
        params = dict(params) if params is not None else load_params()
        self.model = EntailmentModel(params)
        digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()
        self.version = f"{RULES_VERSION}.{digest[:10]}"

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        sources: dict[str, TextView] = {}
        scores = []
        for item in as_read(items):
            try:
                scores.append(self._score(item, sources))
            except Exception as exc:  # one bad item must not sink the batch
                logger.warning("offline evaluation of claim %s failed: %s", item.claim_id, exc)
                scores.append(_failed(f"error: {type(exc).__name__}: {exc}"))
        return scores

    def _score(self, item: EvalItem, sources: dict[str, TextView]) -> Score:
        if not isinstance(item.claim, str) or not item.claim.strip():
            return _failed("empty claim")
        if not isinstance(item.source, str) or not WORD_PATTERN.search(item.source):
            blank = not isinstance(item.source, str) or not item.source.strip()
            return _failed("empty source" if blank else "source has no words")
        source = sources.get(item.source)
        if source is None:
            source = sources[item.source] = analyse(item.source)
        claim = analyse(item.claim)
        covered = coverage(item.claim, item.source)
        standalone = decontextualization(item.claim, item.source, item.context)
        features = pair_features(claim, source)
        conflict = contradiction(claim, source)
        probability = self.model.probability(features, contradicted=conflict is not None)
        verdict = self.model.verdict(probability)
        why = justify(verdict, features, conflict, claim, source, item.claim)
        score = Score(
            entailed_score=probability,
            coverage_score=covered.score,
            decontextualization_score=standalone.score,
            verdict=verdict,
            justification=why,
            omitted=covered.omitted,
        )
        return explained(
            score,
            entailment=why.partition(": ")[2],
            decontextualization="; ".join(standalone.reasons[:2]),
        )


def justify(
    verdict: str,
    features: Sequence[float],
    conflict: str | None,
    claim: TextView,
    source: TextView,
    text: str,
) -> str:
    """One sentence saying why the claim got its verdict."""
    label = verdict.replace("_", " ").capitalize()
    if not claim.content:
        return f"{label}: the claim has no content words to check against the source."
    if conflict == "negation":
        return f"{label}: the claim negates what the source sentence it restates says."
    missing = _missing_words(
        text, (claim.numbers - source.numbers) | (claim.entities - source.content)
    )
    if conflict in ("number", "name"):
        changed = ", ".join(missing)
        return f"{label}: the claim changes a {conflict} of the source sentence ({changed})."
    if missing:
        return f"{label}: the source does not mention {', '.join(missing)}."
    share = round(100 * features[_PRECISION])
    order = " in the same order" if features[_ORDER] >= _SAME_ORDER else ""
    return f"{label}: {share}% of the claim's content words appear in the source{order}."


def _missing_words(text: str, keys: frozenset[str] | set[str]) -> list[str]:
    if not keys:
        return []
    found: list[str] = []
    for word in find_words(normalise(text)):
        lower = word.lower()
        if (stem(lower) in keys or keys.intersection(number_values(lower))) and word not in found:
            found.append(word)
    return found[:3]


def _failed(status: str) -> Score:
    return Score.failed(status)
