"""Vectors of the blocks the index holds, computed after their grades are written.

A block's words are indexed in the transaction that writes its grades; its vector waits for
:func:`embed_pending` (resync runs it at its end, the daemon after each take), so grading never
waits on embeddings. Until then a search finds the block by its words and says how many blocks
are not embedded yet.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aclarai.agents import Embedder
from aclarai.graph import GraphStore, IndexDrift, SearchDoc, SearchIndex, vector_bytes

logger = logging.getLogger(__name__)

BATCH = 1024


def embed_pending(index: SearchIndex, embedder: Embedder, *, limit: int | None = None) -> int:
    """Embed the blocks without a vector of ``embedder``, ``BATCH`` at a time; return how many.

    Args:
        limit: Stop after about this many (``None``: all of them).
    """
    done = 0
    after = 0
    while limit is None or done < limit:
        rows = index.unembedded(embedder.name, BATCH, after)
        if not rows:
            break
        after = rows[-1][0]
        vectors = embedder.embed_batch([text for _, text in rows])
        index.put_vectors(
            embedder.name,
            [(doc, blob) for (doc, _), blob in zip(rows, vector_bytes(vectors), strict=True)],
        )
        done += len(rows)
        if len(rows) < BATCH:
            break
    if done:
        logger.debug("embedded %d blocks with %s", done, embedder.name)
    return done


@dataclass(frozen=True, slots=True)
class SearchRefresh:
    """What a pass did to the search index."""

    mended: IndexDrift
    """Rows the index lacked, held in excess, or held stale (0 after a crash-free run)."""
    embedded: int
    blocks: int
    seconds: float
    """How long mending and embedding took (the pass's time includes it)."""


def refresh_search(
    store: GraphStore,
    embedder: Embedder | None,
    parsed: Callable[[], Sequence[SearchDoc]] | None = None,
    live_blocks: int | None = None,
) -> SearchRefresh:
    """Mend the index where it may differ from the store, then embed the blocks that lack a
    vector.

    The index is reconciled (every row read against the store) only when a sign says it may
    differ: a store write whose index write did not follow (a crash between, with Neo4j),
    blocks indexed without their note's parse (after an upgrade), or a count of rows that is not
    ``live_blocks``. ``status --verify`` compares everything.

    Args:
        parsed: The live blocks with their context from a parse of every note
            (:func:`~aclarai.daemon.reports.verify.parsed_search_docs`), asked for only when
            the index needs it.
        live_blocks: The store's live blocks, when the caller counted them.
    """
    started = time.perf_counter()
    index = store.search
    mended = IndexDrift(0, 0, 0)
    if parsed is not None and index.partial():
        mended = store.reconcile_search(parsed())
    elif index.pending() or (live_blocks is not None and index.size() != live_blocks):
        mended = store.reconcile_search()
        if mended.total and parsed is not None:
            store.reconcile_search(parsed())
    if mended.total:
        logger.warning(
            "search index: mended %d missing, %d extra and %d stale rows",
            mended.missing,
            mended.extra,
            mended.stale,
        )
    embedded = embed_pending(index, embedder) if embedder is not None else 0
    return SearchRefresh(mended, embedded, index.size(), time.perf_counter() - started)
