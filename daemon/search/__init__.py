"""Search the vault's graded blocks, and check an answer against them."""

from aclarai.daemon.search.engine import (
    ClaimHit,
    Ranking,
    SearchEngine,
    SearchFilter,
    SearchHit,
    SearchResult,
)
from aclarai.daemon.search.query import IndexQuery, index_query
from aclarai.daemon.search.vectors import SearchRefresh, embed_pending, refresh_search

__all__ = [
    "ClaimHit",
    "IndexQuery",
    "Ranking",
    "SearchEngine",
    "SearchFilter",
    "SearchHit",
    "SearchRefresh",
    "SearchResult",
    "embed_pending",
    "index_query",
    "refresh_search",
]
