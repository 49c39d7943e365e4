"""One storage interface for blocks, claims and scored ``ORIGINATES_FROM`` edges."""

from aclarai.graph.base import (
    BlockRecord,
    ClaimRecord,
    FileState,
    FileSync,
    GraphStore,
    ScoreRecord,
    StoreCounts,
    StoredBlock,
    StoredClaim,
    SyncResult,
    claim_quality,
)

__all__ = [
    "BlockRecord",
    "ClaimRecord",
    "FileState",
    "FileSync",
    "GraphStore",
    "ScoreRecord",
    "StoreCounts",
    "StoredBlock",
    "StoredClaim",
    "SyncResult",
    "claim_quality",
]
