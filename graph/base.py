"""The one storage interface of aclarai.

The vault is the source of truth for text: a store holds what the last sync saw (blocks, the
claims they originate, the scores on each ``(:Claim)-[:ORIGINATES_FROM]->(:Block)`` edge and the
state of every file seen) and can always be rebuilt from the vault with ``aclarai resync``.

Every method is a batch: an implementation over a network (Neo4j) does one round-trip per call,
the embedded one (SQLite) one transaction per call.

A block is its note plus its id, as in Obsidian: the same ``^summary`` in two notes is two blocks.
Its key, :func:`block_key`, is every method's block id here (claims, scores, ``mark_deleted``); a
note renamed or moved takes its blocks along under new keys (``BlockRecord.moved_from``), with
their claims and scores.

A missing score row means "not evaluated yet"; a row whose score is ``None`` means "evaluation
failed" (its ``status`` says why). A failure is never stored as 0.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType

from aclarai.graph.search_index import IndexDrift, SearchDoc, SearchIndex, reconcile
from aclarai.parsers import SCORE_NAMES, DailyQuality, NoteStats, named_scores

KEY_SEPARATOR = "@"
"""Between a block's id and its note in its key: never in an id (``[A-Za-z0-9_-]+``), and the
character before ``A``, so the keys of one id are the range ``[id@, idA)`` of an ordered index."""


def block_key(file: str, block_id: str) -> str:
    """The store's key of the block ``block_id`` of the note ``file`` (vault-relative path)."""
    return f"{block_id}{KEY_SEPARATOR}{file}"


def key_block_id(key: str) -> str:
    """The block id (``^anchor``) inside a key of :func:`block_key`, as a link to it names it."""
    return key.partition(KEY_SEPARATOR)[0]


@dataclass(frozen=True, slots=True)
class FileState:
    """What a sync saw of one note: enough to skip it next time without reading it."""

    path: str
    """Vault-relative POSIX path."""
    mtime_ns: int
    size: int
    sha256: str
    """Of the raw bytes."""


@dataclass(frozen=True, slots=True)
class BlockRecord:
    """A block as parsed from the vault, ready to store."""

    id: str
    """Its key (:func:`block_key`)."""
    file: str
    text: str
    hash: str
    version: int
    position: int
    """0-based index of the block in its file (for neighbour queries)."""
    moved_from: str | None = None
    """The key of a live block of another note that this one takes over, claims and scores
    included: its note was renamed or moved, or the block was cut and pasted here."""
    about: str = ""
    """Its note's title and aliases and the headings above it: what search reads beside its
    text (:func:`~aclarai.parsers.block_about`)."""
    nearby: str = ""
    """The note's text near it that no block holds (a callout, a table), for search."""


@dataclass(frozen=True, slots=True)
class StoredBlock:
    id: str
    """Its key (:func:`block_key`)."""
    file: str
    text: str
    hash: str
    version: int
    position: int
    updated_at: str
    deleted_at: str | None

    @property
    def block_id(self) -> str:
        """The id the note gives it (``^anchor``)."""
        return key_block_id(self.id)


@dataclass(frozen=True, slots=True)
class FileSync:
    """One file's state and every block currently in it, in file order."""

    state: FileState
    blocks: Sequence[BlockRecord]


@dataclass(frozen=True, slots=True)
class SyncResult:
    path: str
    changed: tuple[str, ...]
    """Ids of blocks that are new, were deleted, or whose hash differs: the dirty ones."""
    unchanged: tuple[str, ...]
    removed: tuple[str, ...]
    """Ids the store had in this file that the file no longer holds (not marked deleted)."""


@dataclass(frozen=True, slots=True)
class ClaimRecord:
    id: str
    block_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ScoreRecord:
    """Everything written onto one ``ORIGINATES_FROM`` edge after an evaluation."""

    claim_id: str
    block_id: str
    evaluated_hash: str
    """The block hash the claim was evaluated against; the write is skipped if it is stale."""
    entailed_score: float | None
    coverage_score: float | None
    decontextualization_score: float | None
    status: str
    """``ok``, or why a score is ``None``."""
    model: str
    verdict: str | None = None
    justification: str | None = None
    omitted: tuple[str, ...] = ()
    evaluated_at: str | None = None

    @property
    def quality(self) -> float | None:
        """Geometric mean of the scores; ``None`` if any is ``None``."""
        return claim_quality(*named_scores(self).values())


@dataclass(frozen=True, slots=True)
class GradeWrite:
    """One note's grading, as :meth:`GraphStore.write_grades` writes it: the claims its
    re-extracted blocks now originate (as ``replace_claims`` takes them), then its scores."""

    claims: Mapping[str, Sequence[ClaimRecord]]
    scores: Sequence[ScoreRecord]


@dataclass(frozen=True, slots=True)
class StoredClaim:
    id: str
    block_id: str
    text: str
    score: ScoreRecord | None
    """``None`` when the claim has not been evaluated yet."""


@dataclass(frozen=True, slots=True)
class StoreCounts:
    """What the store holds. Claims count where the vault has them: on live blocks. A deleted
    block keeps its claims for a restore, and they count nowhere."""

    files: int
    blocks: int
    """Live blocks."""
    deleted_blocks: int
    claims: int
    """Claims originating from a live block."""
    scored_claims: int
    """Claims with an edge to a live block carrying three non-null scores."""
    null_scores: int
    """Claims with an edge to a live block evaluated with at least one failed (null) score."""
    low_quality: int = 0
    """Edges of live blocks whose quality is below the threshold ``counts`` was given: the
    entries :meth:`GraphStore.low_quality_claims` lists (a claim of two blocks counts twice). A
    null quality (a failed score) is never low: those claims are counted in ``null_scores``."""


DEFAULT_QUALITY_THRESHOLD = 0.70
"""Claims whose quality is below this are marked (``threshold.claim_quality`` in the config)."""


def claim_quality(*scores: float | None) -> float | None:
    """Geometric mean of the scores, ``None`` if any is ``None``."""
    if any(s is None for s in scores):
        return None
    values = [max(float(s), 0.0) for s in scores if s is not None]
    if any(v == 0.0 for v in values):
        return 0.0
    return math.exp(sum(math.log(v) for v in values) / len(values))


def block_scores(
    claims: Sequence[StoredClaim], block_hash: str | None = None
) -> dict[str, float | None]:
    """A block's value for each score, as its score comments say it: the lowest over its claims
    with a non-null score (scored against ``block_hash``, the block's current text, when
    given), so that a block reads as weak as its weakest claim."""
    result: dict[str, float | None] = {}
    for name in SCORE_NAMES:
        values = [
            value
            for c in claims
            if c.score is not None
            and (block_hash is None or c.score.evaluated_hash == block_hash)
            and (value := getattr(c.score, name)) is not None
        ]
        result[name] = min(values) if values else None
    return result


def check_file_syncs(files: Iterable[FileSync]) -> None:
    """Refuse a ``sync_files`` argument whose block names another file than its own.

    Raises:
        ValueError: A block's ``file`` is not its ``FileSync``'s path.
    """
    for sync in files:
        for block in sync.blocks:
            if block.file != sync.state.path:
                raise ValueError(
                    f"block {block.id} says file {block.file!r}, not {sync.state.path!r}"
                )


def check_claims(claims_by_block: Mapping[str, Sequence[ClaimRecord]]) -> None:
    """Refuse a ``replace_claims`` argument whose claim names another block than its key.

    Raises:
        ValueError: A claim's ``block_id`` is not the block it is listed under.
    """
    for block_id, claims in claims_by_block.items():
        for claim in claims:
            if claim.block_id != block_id:
                raise ValueError(f"claim {claim.id} names block {claim.block_id}, not {block_id}")


def check_limit(limit: int | None) -> None:
    """Refuse a negative ``limit`` of a listing.

    Raises:
        ValueError: ``limit`` is below 0.
    """
    if limit is not None and limit < 0:
        raise ValueError("limit must not be negative")


class GraphStore(ABC):
    """Blocks, claims, scored ``ORIGINATES_FROM`` edges and the files seen."""

    name: str = "abstract"
    search: SearchIndex
    """The words and vectors of the live blocks (:mod:`aclarai.graph.search_index`), written
    by this store's own writes."""

    def reconcile_search(self, docs: Sequence[SearchDoc] | None = None) -> IndexDrift:
        """Make the search index mirror the live blocks and their claims; return what it mended.

        Args:
            docs: The live blocks as a parse of every note sees them, with what each is about;
                ``None``: the store's blocks, each keeping the about the index holds.
        """
        wanted, claims = self._search_truth(docs)
        return self.search.write(lambda conn: reconcile(conn, wanted, claims))

    def search_drift(self, docs: Sequence[SearchDoc] | None = None) -> IndexDrift:
        """How the search index differs from the live blocks and their claims (see
        :meth:`reconcile_search`)."""
        wanted, claims = self._search_truth(docs)
        return self.search.drift(wanted, claims)

    def _search_truth(
        self, docs: Sequence[SearchDoc] | None
    ) -> tuple[Sequence[SearchDoc], dict[str, list[str]]]:
        if docs is None:
            docs = [SearchDoc(b.id, b.file, b.hash, None, b.text) for b in self.live_blocks()]
        claims = {
            key: [c.text for c in found]
            for key, found in self.claims_of_blocks(d.block_id for d in docs).items()
            if found
        }
        return docs, claims

    @abstractmethod
    def file_states(self, paths: Iterable[str] | None = None) -> dict[str, FileState]:
        """The states of the files the store has seen, by vault-relative path.

        Args:
            paths: Only these files (those the store knows); ``None``: every file.
        """

    @abstractmethod
    def sync_files(self, files: Sequence[FileSync]) -> list[SyncResult]:
        """Make the store match these files' blocks and record their states.

        A block is written only when its hash, version, position or file differs. A block met in
        another file than before is moved (identity kept); so is a block new to the store whose
        ``moved_from`` names a live block, which it replaces under its own key (the edges follow);
        a deleted block that reappears is restored. Blocks the store had in a file that no longer
        holds them are reported in ``removed`` and left alone: they may have moved to a file
        synced later.
        """

    @abstractmethod
    def record_write(self, state: FileState, versions: Mapping[str, int]) -> None:
        """Record a note aclarai rewrote itself (its block texts and hashes unchanged).

        Stores the note's new state and, for each live block of ``state.path`` among
        ``versions``, its new ``ver`` (written as ``sync_files`` writes a version-only change).
        Other ids are ignored: this never adds, moves, restores or reports blocks.
        """

    def record_writes(self, writes: Sequence[tuple[FileState, Mapping[str, int]]]) -> None:
        """:meth:`record_write` for each of many notes, in order.

        A store that can do so records them all in one transaction: the consumer hands it
        every note a take rewrote. This default makes one call per note.
        """
        for state, versions in writes:
            self.record_write(state, versions)

    @abstractmethod
    def forget_files(self, paths: Iterable[str]) -> list[str]:
        """Drop these files' states; return the ids of live blocks that were in them."""

    @abstractmethod
    def mark_deleted(self, block_ids: Iterable[str]) -> int:
        """Mark blocks deleted (their claims lose nothing: a restore brings them back)."""

    @abstractmethod
    def get_blocks(self, block_ids: Iterable[str]) -> dict[str, StoredBlock]:
        """The stored blocks among these ids, deleted ones included."""

    @abstractmethod
    def blocks_of_file(self, path: str) -> list[StoredBlock]:
        """Live blocks of a file, in file order."""

    @abstractmethod
    def live_blocks(self) -> list[StoredBlock]:
        """Every live block, by note path then position: those of notes the store forgot
        (gone from the vault, their blocks not yet marked deleted) included."""

    @abstractmethod
    def live_blocks_with_ids(self, block_ids: Iterable[str]) -> list[StoredBlock]:
        """Live blocks of any note whose id (not key) is among ``block_ids``, in key order: where
        a block new to its note may have come from."""

    @abstractmethod
    def replace_claims(self, claims_by_block: Mapping[str, Sequence[ClaimRecord]]) -> None:
        """Make these the claims each block originates.

        New claims get an edge without scores; claims no longer listed lose their edge (and a
        claim that originates from nothing else is removed); kept claims keep their scores.
        """

    @abstractmethod
    def claims_of_blocks(self, block_ids: Iterable[str]) -> dict[str, list[StoredClaim]]:
        """Claims of each block (every id asked for is a key), with their edge scores."""

    @abstractmethod
    def claims_needing_evaluation(self) -> list[StoredClaim]:
        """Claims of live blocks that were never scored, have a null score, or whose scores were
        computed against another hash than the block's current one."""

    @abstractmethod
    def write_scores(self, scores: Sequence[ScoreRecord]) -> int:
        """Write scores onto edges whose block still has ``evaluated_hash``; return how many."""

    def write_grades(self, grades: Sequence[GradeWrite]) -> list[int]:
        """``replace_claims`` then ``write_scores`` for each grade, in order; return how many
        scores each grade wrote.

        A store that can do so writes them all in one transaction, all or nothing: the consumer
        hands it every note of a take at once. This default makes two calls per grade.
        """
        written = []
        for grade in grades:
            self.replace_claims(grade.claims)
            written.append(self.write_scores(grade.scores))
        return written

    @abstractmethod
    def low_quality_claims(
        self,
        threshold: float = DEFAULT_QUALITY_THRESHOLD,
        limit: int | None = 10,
        *,
        file: str | None = None,
    ) -> list[StoredClaim]:
        """Claims of live blocks whose edge quality is non-null and below ``threshold``.

        Args:
            threshold: Quality under which a claim is marked (strictly below).
            limit: At most this many are returned; ``None``: all of them.
            file: Only the claims of this note's blocks.

        Returns:
            The lowest first (ties by claim id, then block id); one entry per edge, so a claim
            originating from two blocks may appear twice.
        """

    @abstractmethod
    def failed_claims(
        self, limit: int | None = None, *, file: str | None = None
    ) -> list[StoredClaim]:
        """Claims of live blocks whose last evaluation left a null score (``status`` says why).

        Args:
            limit: At most this many are returned; ``None``: all of them.
            file: Only the claims of this note's blocks.

        Returns:
            In file, block position and claim order.
        """

    @abstractmethod
    def note_stats(self, threshold: float = DEFAULT_QUALITY_THRESHOLD) -> list[NoteStats]:
        """Per note with live blocks, in path order: blocks, claims, mean quality, the weakest
        claim (lowest quality; ties by claim id, then block id; its ``block_text`` is left
        empty), the latest ``evaluated_at`` and how many claims are below ``threshold``. Only
        edges of live blocks count; a claim on two blocks counts once per block."""

    @abstractmethod
    def score_counts(self) -> dict[str, dict[int, int]]:
        """How many edges of live blocks carry each score value, rounded to hundredths.

        Returns:
            For each name of :data:`~aclarai.parsers.SCORE_NAMES` with at least one non-null
            value: ``{round(value * 100): edges}``. Scores are shown with two decimals, so the
            distribution bins what a reader sees; and the answer stays small whatever the vault.
        """

    @abstractmethod
    def daily_quality(self) -> list[DailyQuality]:
        """Mean non-null quality of the edges of live blocks per UTC day of ``evaluated_at``,
        oldest day first."""

    @abstractmethod
    def counts(self, *, quality_threshold: float = DEFAULT_QUALITY_THRESHOLD) -> StoreCounts:
        """How many rows of each kind the store holds.

        Args:
            quality_threshold: What ``low_quality`` counts claims below.
        """

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
