"""One storage interface for blocks, claims and scored ``ORIGINATES_FROM`` edges."""

from aclarai.graph.base import (
    DEFAULT_QUALITY_THRESHOLD,
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
from aclarai.graph.neo4j import Neo4jStore
from aclarai.graph.query_tool import GraphQueryTool, make_query_tool
from aclarai.graph.sqlite import SqliteStore

__all__ = [
    "DEFAULT_QUALITY_THRESHOLD",
    "BlockRecord",
    "ClaimRecord",
    "FileState",
    "FileSync",
    "GraphQueryTool",
    "GraphStore",
    "Neo4jStore",
    "ScoreRecord",
    "SqliteStore",
    "StoreCounts",
    "StoredBlock",
    "StoredClaim",
    "SyncResult",
    "claim_quality",
    "make_query_tool",
]
