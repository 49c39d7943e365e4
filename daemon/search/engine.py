"""Search over the vault's graded blocks: word match plus meaning, and better claims first.

A question finds its candidates two ways: BM25 over the blocks' words, titles, headings and claims
(:mod:`aclarai.graph.search_index`), and the cosine of its vector with each block's. Each list is
scaled to its best candidate, and a block's relevance is the weighted sum of the two
(:class:`Ranking`); a block found one way only gets that share alone. Then quality tips the
order: a block whose best claim is well supported rises a little over an equally relevant one
whose claim is weak. The weights were tuned on ``benchmarks/retrieval/tune.jsonl``; the held-out
sets give the figures in ``benchmarks/README.md``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from aclarai.agents import Embedder
from aclarai.daemon.search.query import (
    IndexQuery,
    covers,
    fold,
    has_prefix,
    index_query,
    stem,
    word_expression,
    words_of,
)
from aclarai.graph import (
    GraphStore,
    SearchIndex,
    StoredClaim,
    WordMatch,
    claim_quality,
    key_block_id,
)
from aclarai.parsers import SCORE_NAMES, AclaraiError, named_scores, wikilink_target

MAX_LIMIT = 100
COMMON_FLOOR = 200
"""On a small vault every word is held by a large share of blocks: none is common below this."""


@dataclass(frozen=True, slots=True)
class Ranking:
    """How word match, meaning and quality combine (see the module docstring)."""

    coverage: float = 0.6
    """Weight of the share of the query's words a block holds (rare words weigh more)."""
    words: float = 0.0
    """Weight of BM25, against the best candidate's (it finds the candidates either way)."""
    vectors: float = 0.7
    """Weight of the cosine with the query, scaled from ``cosine_zero`` (0) to ``cosine_full``
    (1)."""
    cosine_zero: float = 0.2
    cosine_full: float = 0.5
    quality: float = 0.3
    """How far quality moves the order: a block whose claim has quality 1.00 ranks as if
    ``quality / 2`` (15%) more relevant than it is, one at 0.00 as much less; a block without a
    graded claim is left where it is."""
    about: float = 2.0
    """BM25 weight of the title, aliases and headings against the block's own words (1)."""
    claims: float = 1.0
    nearby: float = 0.5
    candidates: int = 60
    common: float = 0.05
    """A word in more than this share of the blocks finds no candidates while the question has
    rarer ones (see :func:`~aclarai.daemon.search.query.word_expression`)."""


@dataclass(frozen=True, slots=True)
class ClaimHit:
    claim: str
    scores: Mapping[str, float | None]
    quality: float | None
    status: str | None
    """``ok``; why a score is null; ``None`` when not graded yet."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One block that answers a query."""

    file: str
    block_id: str
    """The id a link names (``^anchor``)."""
    link: str
    text: str
    """The block as a reader sees it."""
    about: str
    score: float
    """Relevance to the query, 0..1 (before quality tips the order)."""
    claim: ClaimHit | None
    """Of its claims, the one that shares most words with the query (then the best graded)."""
    claims: tuple[ClaimHit, ...]

    @property
    def quality(self) -> float | None:
        return self.claim.quality if self.claim is not None else None

    def as_dict(self) -> dict[str, object]:
        best = self.claim
        return {
            "file": self.file,
            "block_id": self.block_id,
            "link": self.link,
            "claim": best.claim if best else None,
            **{name: (best.scores.get(name) if best else None) for name in SCORE_NAMES},
            "quality": self.quality,
            "score": round(self.score, 4),
            "text": self.text,
            "about": self.about,
            "claims": [
                {"claim": c.claim, **dict(c.scores), "quality": c.quality, "status": c.status}
                for c in self.claims
            ],
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    hits: list[SearchHit]
    blocks: int
    """Blocks in the index (in scope)."""
    unembedded: int
    """Blocks whose vector is not computed yet: they are found by their words only."""
    note: str = ""
    """Why the result is empty or partial, for a person."""


@dataclass(frozen=True, slots=True)
class SearchFilter:
    min_quality: float | None = None
    """Only claims at or above this quality (their block is dropped when none is left)."""
    include_null: bool | None = None
    """Claims whose evaluation failed: kept by default, dropped under ``min_quality`` unless
    this is true."""
    scope: str = ""
    """A note (``folder/Note.md``) or a folder (``folder``): only its blocks."""


@dataclass
class _Vectors:
    version: int = -1
    keys: list[str] = field(default_factory=list)
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    missing: int = 0


class SearchEngine:
    """Searches ``store``'s index; ``embedder`` gives the query's vector (``None``: words
    only). Thread-safe; keeps the vectors in memory between searches."""

    def __init__(
        self, store: GraphStore, embedder: Embedder | None, ranking: Ranking = Ranking()
    ) -> None:
        self.store = store
        self.index: SearchIndex = store.search
        self.embedder = embedder
        self.ranking = ranking
        self._vectors = _Vectors()
        self._lock = threading.Lock()

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        where: SearchFilter = SearchFilter(),
        vectors: bool = True,
    ) -> SearchResult:
        """The blocks that answer ``query``, best first (by words only without ``vectors``).

        Raises:
            AclaraiError: ``limit`` is out of 1..100.
            StoreError: the store or index cannot be read.
        """
        if not 1 <= limit <= MAX_LIMIT:
            raise AclaraiError(f"limit must be 1 to {MAX_LIMIT}, not {limit}")
        # A lone surrogate (an undecodable byte of a command line) is no text to embed or match.
        query = query.encode("utf-8", "replace").decode("utf-8")
        parsed = index_query(query)
        loaded = self._load_vectors() if vectors else _Vectors()
        size = self.index.size()
        if parsed.empty and not query.strip():
            return SearchResult([], size, loaded.missing, "the query is empty")
        relevance = self._relevance(query, parsed, loaded, where.scope, size)
        if where.min_quality is None and where.include_null is not False:
            # Quality moves a block by 15% at most: the rest cannot reach the top.
            kept = sorted(relevance, key=relevance.__getitem__, reverse=True)[: limit * 3]
            relevance = {key: relevance[key] for key in kept}
        hits = self._hits(relevance, parsed, where)
        hits.sort(key=lambda h: -self._ranked(h))
        hits = hits[:limit]
        note = "" if hits else "nothing in the vault matches"
        return SearchResult(hits, size, loaded.missing, note)

    def _ranked(self, hit: SearchHit) -> float:
        quality = hit.quality if hit.quality is not None else 0.5
        return hit.score * (1.0 + self.ranking.quality * (quality - 0.5))

    def _relevance(
        self, query: str, parsed: IndexQuery, vectors: _Vectors, scope: str, size: int
    ) -> dict[str, float]:
        """Each candidate's relevance, 0..1: the share of the query's words it holds (weighed
        by rarity), its BM25 against the best candidate's, and its cosine with the query."""
        r = self.ranking
        weights = (r.about, 1.0, r.claims, r.nearby)
        n = max(size, 1)
        frequencies = self.index.document_frequencies(parsed.word_terms, parsed.gram_terms)
        found: list[WordMatch] = []
        if parsed.word_terms:
            stems = [stem(t) for t in parsed.word_terms if has_prefix(t)]
            expression = word_expression(
                parsed.word_terms,
                {**frequencies, **self.index.prefix_frequencies(stems)},
                max(COMMON_FLOOR, int(n * r.common)),
            )
            found += self.index.match_words(expression, r.candidates, weights=weights, scope=scope)
        if parsed.grams:
            found += self.index.match_grams(
                parsed.grams, r.candidates, weights=weights, scope=scope
            )
        bm25: dict[str, float] = {}
        for match in found:
            bm25[match.block_id] = max(bm25.get(match.block_id, 0.0), -match.rank)
        best = max(bm25.values(), default=0.0)
        cosine: dict[str, float] = {}
        if self.embedder is not None and len(vectors.keys) and r.vectors:
            cosines = vectors.matrix @ self.embedder.embed(query[:2000])
            if scope:
                keys = self.index.keys_in(scope)
                inside = np.fromiter((k in keys for k in vectors.keys), bool, len(vectors.keys))
                cosines = np.where(inside, cosines, -np.inf)
            take = min(r.candidates, len(cosines))
            top = np.argpartition(-cosines, take - 1)[:take]
            for i in top[np.argsort(-cosines[top])]:
                if np.isfinite(cosines[i]):
                    cosine[vectors.keys[i]] = float(cosines[i])
        keys = list(dict.fromkeys([*bm25, *cosine]))
        coverage = self._coverage(parsed, keys, frequencies, n)
        span = max(r.cosine_full - r.cosine_zero, 1e-6)
        relevance = {}
        for key in keys:
            value = r.coverage * coverage.get(key, 0.0)
            if best > 0:
                value += r.words * bm25.get(key, 0.0) / best
            if key in cosine:
                value += r.vectors * min(1.0, max(0.0, (cosine[key] - r.cosine_zero) / span))
            relevance[key] = value / (r.coverage + r.words + r.vectors)
        return relevance

    def _coverage(
        self, parsed: IndexQuery, keys: Sequence[str], df: Mapping[str, int], n: int
    ) -> dict[str, float]:
        """Per block, the rarity-weighted share of the query's terms it holds."""
        terms = [*parsed.word_terms, *parsed.gram_terms]
        if not terms or not keys:
            return {}
        # A term no block holds weighs as the rarest: a question about what the vault lacks
        # covers little of itself.
        idf = {t: math.log((n + 1) / (df.get(t, 0) + 0.5)) for t in terms}
        total = sum(idf.values()) or 1.0
        result = {}
        for key, block in self.index.blocks(keys).items():
            text = " ".join((block.about, block.body, *block.claims, block.nearby))
            words = words_of(text)
            held = sum(idf[t] for t in parsed.word_terms if covers(words, t))
            folded = fold(text)
            held += sum(idf[g] for g in parsed.gram_terms if g in folded)
            result[key] = held / total
        return result

    def _hits(
        self, relevance: Mapping[str, float], parsed: IndexQuery, where: SearchFilter
    ) -> list[SearchHit]:
        keys = list(relevance)
        if not keys:
            return []
        live = {k: b for k, b in self.store.get_blocks(keys).items() if b.deleted_at is None}
        indexed = self.index.blocks(live)
        claims = self.store.claims_of_blocks(live)
        include_null = (
            where.include_null if where.include_null is not None else where.min_quality is None
        )
        hits = []
        for key in keys:
            block = indexed.get(key)
            if key not in live or block is None:
                continue
            graded = [_claim_hit(c) for c in claims.get(key, [])]
            kept = [c for c in graded if _kept(c, where.min_quality, include_null)]
            if where.min_quality is not None and not kept:
                continue
            if not include_null and graded and not kept:
                continue
            hits.append(
                SearchHit(
                    file=block.file,
                    block_id=key_block_id(key),
                    link=f"[[{wikilink_target(block.file)}#^{key_block_id(key)}]]",
                    text=block.body,
                    about=block.about,
                    score=min(1.0, relevance[key]),
                    claim=_best_claim(kept, parsed.word_terms),
                    claims=tuple(kept),
                )
            )
        return hits

    def _load_vectors(self) -> _Vectors:
        if self.embedder is None:
            return _Vectors(missing=0)
        with self._lock:
            version = self.index.vectors_version()
            if version != self._vectors.version:
                keys, matrix, missing = self.index.vectors(self.embedder.name)
                self._vectors = _Vectors(version, keys, matrix.astype(np.float32) / 127.0, missing)
            return self._vectors


def _claim_hit(claim: StoredClaim) -> ClaimHit:
    score = claim.score
    if score is None:
        return ClaimHit(claim.text, dict.fromkeys(SCORE_NAMES), None, None)
    values = named_scores(score)
    return ClaimHit(claim.text, values, claim_quality(*values.values()), score.status)


def _kept(claim: ClaimHit, min_quality: float | None, include_null: bool) -> bool:
    if claim.status is not None and claim.quality is None:
        return include_null
    if min_quality is None:
        return True
    return claim.quality is not None and claim.quality >= min_quality


def _best_claim(claims: Sequence[ClaimHit], terms: Sequence[str]) -> ClaimHit | None:
    if not claims:
        return None

    def shared(claim: ClaimHit) -> int:
        words = words_of(claim.claim)
        return sum(1 for t in terms if covers(words, t))

    return max(claims, key=lambda c: (shared(c), c.quality if c.quality is not None else -1.0))
