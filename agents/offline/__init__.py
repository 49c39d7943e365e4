"""The weight-free offline scorer: claim extraction, the entailment features and model, and
the coverage and decontextualization scores, for use with no model configured."""

from aclarai.agents.offline.evaluator import OfflineEvaluator
from aclarai.agents.offline.extractor import OfflineClaimExtractor

__all__ = [
    "OfflineClaimExtractor",
    "OfflineEvaluator",
]
