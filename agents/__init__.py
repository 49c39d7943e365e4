"""Claim extraction and evaluation behind one evaluator interface, offline or LLM-backed."""

from aclarai.agents.base import (
    VERDICT_LABELS,
    Claim,
    ClaimExtractor,
    EvalItem,
    Evaluator,
    ExtractionInput,
    Score,
    Utterance,
    claim_id,
)

__all__ = [
    "VERDICT_LABELS",
    "Claim",
    "ClaimExtractor",
    "EvalItem",
    "Evaluator",
    "ExtractionInput",
    "Score",
    "Utterance",
    "claim_id",
]
