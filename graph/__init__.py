"""One storage interface for blocks, claims and scored ``ORIGINATES_FROM`` edges."""

from aclarai.graph.base import (
    DEFAULT_QUALITY_THRESHOLD,
    BlockRecord,
    ClaimRecord,
    FileState,
    FileSync,
    GradeWrite,
    GraphStore,
    ScoreRecord,
    StoreCounts,
    StoredBlock,
    StoredClaim,
    SyncResult,
    block_key,
    block_scores,
    claim_quality,
    key_block_id,
)
from aclarai.graph.search_index import (
    IndexDrift,
    IndexedBlock,
    SearchDoc,
    SearchIndex,
    WordMatch,
    begin_write,
    vector_bytes,
)
from aclarai.graph.sqlite import SqliteStore

__all__ = [
    "DEFAULT_QUALITY_THRESHOLD",
    "BlockRecord",
    "ClaimRecord",
    "FileState",
    "FileSync",
    "GradeWrite",
    "GraphStore",
    "IndexDrift",
    "IndexedBlock",
    "Neo4jStore",
    "ScoreRecord",
    "SearchDoc",
    "SearchIndex",
    "SqliteStore",
    "StoreCounts",
    "StoredBlock",
    "StoredClaim",
    "SyncResult",
    "WordMatch",
    "begin_write",
    "block_key",
    "block_scores",
    "claim_quality",
    "key_block_id",
    "vector_bytes",
]


def __getattr__(name: str) -> object:
    # The Neo4j driver is imported when the Neo4j store is asked for, not by every command.
    if name == "Neo4jStore":
        from aclarai.graph.neo4j import Neo4jStore

        return Neo4jStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
