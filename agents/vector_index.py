"""An in-memory vector index of utterances (block texts), searched by cosine similarity.

The daemon fills it from the store and keeps it current as blocks change; only new or changed texts
are embedded. It lives in memory because a vault's blocks fit there many times over, and a numpy
matrix product over them is faster than any round trip.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass

import numpy as np

from aclarai.agents.base import Utterance
from aclarai.agents.embeddings import Embedder


@dataclass(frozen=True, slots=True)
class SearchHit:
    block_id: str
    text: str
    score: float
    """Cosine similarity to the query, -1..1."""


class VectorIndex:
    """Utterances by block id, with their embeddings from ``embedder``."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._texts: dict[str, str] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._matrix: np.ndarray | None = None
        self._ids: list[str] = []
        self._row_texts: list[str] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._texts)

    def upsert(self, utterances: Iterable[Utterance]) -> int:
        """Add or replace utterances; return how many texts had to be embedded."""
        with self._lock:
            changed = {
                u.block_id: u.text for u in utterances if self._texts.get(u.block_id) != u.text
            }
        if not changed:
            return 0
        ids = list(changed)
        vectors = self.embedder.embed_batch([changed[i] for i in ids])
        with self._lock:
            for block_id, vector in zip(ids, vectors, strict=True):
                self._texts[block_id] = changed[block_id]
                self._vectors[block_id] = vector
            self._matrix = None
        return len(ids)

    def remove(self, block_ids: Iterable[str]) -> None:
        """Forget these blocks (unknown ids are ignored)."""
        with self._lock:
            for block_id in block_ids:
                self._texts.pop(block_id, None)
                self._vectors.pop(block_id, None)
            self._matrix = None

    def search(
        self, query: str, top_k: int = 5, *, exclude: Collection[str] = ()
    ) -> list[SearchHit]:
        """The ``top_k`` utterances most similar to ``query``, best first.

        Args:
            query: the text to match (a claim).
            top_k: how many hits at most.
            exclude: block ids to leave out (the claim's own block, say).
        """
        if top_k < 1:
            return []
        query_vector = self.embedder.embed(query)
        with self._lock:
            if self._matrix is None:
                self._ids = list(self._vectors)
                self._row_texts = [self._texts[i] for i in self._ids]
                self._matrix = (
                    np.stack([self._vectors[i] for i in self._ids]) if self._ids else None
                )
            matrix, ids, texts = self._matrix, self._ids, self._row_texts
        if matrix is None or matrix.shape[1] != query_vector.shape[0]:
            return []
        scores = matrix @ query_vector
        order = np.argsort(-scores, kind="stable")
        hits: list[SearchHit] = []
        for row in order:
            block_id = ids[int(row)]
            if block_id in exclude:
                continue
            hits.append(SearchHit(block_id, texts[int(row)], float(scores[row])))
            if len(hits) == top_k:
                break
        return hits
