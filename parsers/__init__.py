"""Pure text: the one grammar of ``aclarai:`` comments, Tier 1 blocks and their hashes, score
comment rewriting and sentence splitting. No files, no network, nothing of ours imported."""

from aclarai.parsers.errors import (
    AclaraiError,
    BrokerUnavailable,
    ConfigError,
    EvaluationError,
    EvaluatorUnavailable,
    ParseError,
    QueueError,
    StoreError,
    StoreUnavailable,
    TransientError,
    WriteConflict,
)
from aclarai.parsers.hashing import content_hash, normalize_text
from aclarai.parsers.model import SCORE_NAMES, Block, ParsedNote, Problem, ProblemKind

__all__ = [
    "SCORE_NAMES",
    "AclaraiError",
    "Block",
    "BrokerUnavailable",
    "ConfigError",
    "EvaluationError",
    "EvaluatorUnavailable",
    "ParseError",
    "ParsedNote",
    "Problem",
    "ProblemKind",
    "QueueError",
    "StoreError",
    "StoreUnavailable",
    "TransientError",
    "WriteConflict",
    "content_hash",
    "normalize_text",
]
