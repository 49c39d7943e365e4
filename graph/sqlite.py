"""The embedded graph store: one SQLite file (stdlib ``sqlite3``, WAL), the default backend.

Storage invariant. The vault is the source of truth for text; this file is a cache of what the last
sync saw, and ``aclarai resync`` can always rebuild it from the vault. ``files`` holds the state of
each note seen (so an unchanged note is skipped without being read); ``blocks`` holds every block
ever seen, by its key ``id@note`` (see :func:`~aclarai.graph.base.block_key`), with the text, hash,
``ver`` and position last synced and a ``deleted_at`` stamp instead of a hard delete, so a block
that reappears keeps its claims and scores; ``claims`` holds claim
texts; ``edges`` is the ``(:Claim)-[:ORIGINATES_FROM]->(:Block)`` relation and carries the scores.

On an edge, ``evaluated_hash IS NULL`` means "not evaluated yet" (the missing score row of the
interface: read back as ``StoredClaim.score is None``); an evaluated edge whose score column is
NULL means "that evaluation failed" and ``status`` says why. A failure is never stored as 0.
Scores count for the block hash in ``evaluated_hash`` only: once the block's hash moves on they
are stale and the claim needs evaluating again.

One connection, shared by every thread behind a lock (the daemon's consumer calls in from several
workers); each method is one transaction. Other processes may open the same file (WAL lets
readers run beside the writer); a writer that waits longer than ``busy_timeout_ms`` gets
:class:`StoreUnavailable`.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aclarai.graph.base import (
    DEFAULT_QUALITY_THRESHOLD,
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
    check_claims,
    check_file_syncs,
    check_limit,
)
from aclarai.graph.migrations import (
    ALL_SCORED,
    NULL_SCORED,
    live_claim_texts,
    migrate,
)
from aclarai.graph.search_index import (
    SearchIndex,
    drop_docs,
    put_docs,
    search_doc,
    set_claims,
)
from aclarai.parsers import (
    SCORE_NAMES,
    ClaimRef,
    DailyQuality,
    NoteStats,
    StoreError,
    StoreUnavailable,
    named_scores,
    utc_now,
)

logger = logging.getLogger(__name__)

DEFAULT_BUSY_TIMEOUT_MS = 5000
WAL_CHECKPOINT_PAGES = 10_000
CACHE_KIB = 64 * 1024

# Primary result codes that mean "another process holds the file" or "the disk failed": worth
# retrying later, unlike a constraint violation or a corrupt file.
_UNAVAILABLE_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR})

# ``x IN (SELECT value FROM json_each(?))`` binds a whole id list as one JSON parameter: one
# statement per call whatever its size, and no SQLITE_MAX_VARIABLE_NUMBER chunking.
_IN_JSON = "IN (SELECT value FROM json_each(?))"

_BLOCK_COLUMNS = "id, file, text, hash, version, position, updated_at, deleted_at"

_UPSERT_BLOCK = f"""
    INSERT INTO blocks ({_BLOCK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)
    ON CONFLICT (id) DO UPDATE SET
        file = excluded.file, text = excluded.text, hash = excluded.hash,
        version = excluded.version, position = excluded.position,
        updated_at = excluded.updated_at, deleted_at = NULL
"""

_UPSERT_FILE = """
    INSERT INTO files (path, mtime_ns, size, sha256) VALUES (?, ?, ?, ?)
    ON CONFLICT (path) DO UPDATE SET
        mtime_ns = excluded.mtime_ns, size = excluded.size, sha256 = excluded.sha256
"""

# What ``sync_files`` writes for a block whose version alone differs.
_RECORD_VERSION = """
    UPDATE blocks SET version = ?, updated_at = ?
    WHERE id = ? AND file = ? AND deleted_at IS NULL AND version IS NOT ?
"""

_CLAIM_COLUMNS = (
    "c.id, e.block_id, c.text, e.evaluated_hash, "
    + "".join(f"e.{name}, " for name in SCORE_NAMES)
    + "e.status, e.model, e.verdict, e.justification, e.omitted, e.evaluated_at"
)

_WRITE_SCORE = (
    "UPDATE edges SET "
    + "".join(f"{name} = ?, " for name in SCORE_NAMES)
    + "quality = ?, verdict = ?, justification = ?, status = ?, model = ?, evaluated_hash = ?,"
    " evaluated_at = ?, omitted = ?"
    " WHERE claim_id = ? AND block_id = ?"
    " AND EXISTS (SELECT 1 FROM blocks b WHERE b.id = edges.block_id AND b.hash = ?)"
)

_LIVE_EDGES = "edges e JOIN blocks b ON b.id = e.block_id WHERE b.deleted_at IS NULL"
"""The edges of live blocks: what the vault says now (a deleted block's claims wait for a
restore, and count nowhere)."""
_ANY_NULL_SCORE = "(" + " OR ".join(f"e.{name} IS NULL" for name in SCORE_NAMES) + ")"


# Edges of live blocks without a join per edge: the deleted blocks are few, and SQLite builds
# their id list once.
_LIVE_EDGE = "e.block_id NOT IN (SELECT id FROM blocks WHERE deleted_at IS NOT NULL)"

# One row per note with live blocks, in one pass. The weakest claim is the least of a key that
# sorts as (quality, claim id, block id): a fixed-width quality in [0, 1] compares as text.
_NOTE_STATS = """
    SELECT b.file, count(DISTINCT b.id), count(e.claim_id), count(e.quality), avg(e.quality),
        max(e.evaluated_at), count(CASE WHEN e.quality < ? THEN 1 END), min(e.quality),
        min(CASE WHEN e.quality IS NOT NULL
            THEN printf('%.17f', e.quality) || char(31) || e.claim_id || char(31) || e.block_id
        END)
    FROM blocks b LEFT JOIN edges e ON e.block_id = b.id
    WHERE b.deleted_at IS NULL
    GROUP BY b.file ORDER BY b.file
"""

# The live scores are read once; each distribution is then grouped from that copy.
_SCORE_COUNTS = (
    "WITH s AS MATERIALIZED (SELECT "
    + ", ".join(f"e.{name} AS {name}" for name in SCORE_NAMES)
    + f" FROM edges e WHERE e.evaluated_hash IS NOT NULL AND {_LIVE_EDGE}) "
    + " UNION ALL ".join(
        f"SELECT '{name}', round({name} * 100), count(*) FROM s WHERE {name} IS NOT NULL GROUP BY 2"
        for name in SCORE_NAMES
    )
)

# ``+e.quality`` keeps the planner off the quality index: a full scan in table order beats
# visiting every scored row in quality order.
_DAILY_QUALITY = (
    "SELECT substr(e.evaluated_at, 1, 10) AS day, avg(e.quality), count(*) FROM edges e "
    f"WHERE +e.quality IS NOT NULL AND {_LIVE_EDGE} GROUP BY day ORDER BY day"
)


def translate_error(exc: sqlite3.Error, context: str) -> StoreError:
    """The store error for a sqlite3 exception (raise it ``from exc`` to keep the cause).

    Args:
        exc: What sqlite3 raised.
        context: Where it happened, for the message.

    Returns:
        :class:`StoreUnavailable` when the file is locked or the disk failed, else
        :class:`StoreError`.
    """
    code = getattr(exc, "sqlite_errorcode", None)
    message = f"{context}: {exc}"
    if (code is not None and code & 0xFF in _UNAVAILABLE_CODES) or "locked" in str(exc):
        return StoreUnavailable(message)
    return StoreError(message)


def _json_list(values: Iterable[str]) -> str:
    return json.dumps(list(values))


def _stored_block(row: Sequence[Any]) -> StoredBlock:
    return StoredBlock(*row)


def _stored_claim(row: Sequence[Any]) -> StoredClaim:
    claim_id, block_id, text, evaluated_hash, *rest = row
    scores = dict(zip(SCORE_NAMES, rest, strict=False))
    status, model, verdict, justification, omitted, evaluated_at = rest[len(SCORE_NAMES) :]
    score = None
    if evaluated_hash is not None:
        score = ScoreRecord(
            claim_id=claim_id,
            block_id=block_id,
            evaluated_hash=evaluated_hash,
            **scores,
            status=status,
            model=model,
            verdict=verdict,
            justification=justification,
            omitted=tuple(json.loads(omitted)) if omitted else (),
            evaluated_at=evaluated_at,
        )
    return StoredClaim(id=claim_id, block_id=block_id, text=text, score=score)


class SqliteStore(GraphStore):
    """The embedded store in one SQLite file; see the module docstring for what its rows mean."""

    name = "sqlite"

    def __init__(self, path: Path, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> None:
        """Open (creating folders, file and schema as needed) the store at ``path``.

        Args:
            path: The database file; keep it outside the vault (sync tools corrupt live files).
            busy_timeout_ms: How long a write waits for another process's lock before
                :class:`StoreUnavailable` is raised.

        Raises:
            StoreUnavailable: The file is locked or the disk failed.
            StoreError: The folder cannot be created, the file is not an aclarai database, or
                it was written by a newer aclarai.
        """
        self.path = Path(path)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder of {self.path}: {exc}") from exc
        with self._errors("open"):
            conn = sqlite3.connect(
                self.path,
                timeout=busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if mode != "wal":
                    logger.warning("%s: WAL unavailable, journal mode is %s", self.path, mode)
                conn.execute("PRAGMA synchronous = NORMAL")
                # A take's grades touch pages all over the claim-id indexes; checkpointing every
                # 40 MB instead of every 4 MB copies a page once for many commits (cold resync's
                # store writes -10%). The WAL file is cut back to 64 MB after a checkpoint.
                conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")
                # The claim-id indexes of a 10,000-note vault outgrow the 2 MB default cache;
                # it fills only as a store grows (cold resync of 100,000 blocks -10% time).
                conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
                conn.execute(f"PRAGMA journal_size_limit = {64 * 1024 * 1024}")
                conn.execute("PRAGMA foreign_keys = ON")
                applied = migrate(conn)
            except BaseException:
                conn.close()
                raise
        if applied:
            logger.info("%s: applied schema migrations %s", self.path, ", ".join(applied))
        self._conn = conn
        self.search = SearchIndex(conn, self._lock)

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise translate_error(exc, f"graph store {self.path}: {action} failed") from exc

    @contextmanager
    def _read(self, action: str) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors(action):
            if self._conn is None:
                raise StoreError(f"graph store {self.path} is closed")
            yield self._conn

    @contextmanager
    def _write(self, action: str) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken IMMEDIATE so a lock wait happens at BEGIN, not midway."""
        with self._read(action) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def file_states(self, paths: Iterable[str] | None = None) -> dict[str, FileState]:
        query = "SELECT path, mtime_ns, size, sha256 FROM files"
        params: tuple[str, ...] = ()
        if paths is not None:
            query += f" WHERE path {_IN_JSON}"
            params = (_json_list(paths),)
        with self._read("file_states") as conn:
            rows = conn.execute(query, params).fetchall()
        return {row[0]: FileState(*row) for row in rows}

    def sync_files(self, files: Sequence[FileSync]) -> list[SyncResult]:
        files = list(files)
        check_file_syncs(files)
        if not files:
            return []
        listed = {block.id for sync in files for block in sync.blocks}
        sources = {b.moved_from for s in files for b in s.blocks if b.moved_from is not None}
        paths = {sync.state.path for sync in files}
        now = utc_now()
        with self._write("sync_files") as conn:
            rows = conn.execute(
                f"SELECT id, file, hash, version, position, deleted_at FROM blocks "
                f"WHERE id {_IN_JSON} OR file {_IN_JSON}",
                (_json_list(listed | sources), _json_list(paths)),
            ).fetchall()
            known = {row[0]: row[1:] for row in rows}
            moves = _moves(files, known, listed)
            # Live blocks each path held before this call, in file order, for ``removed``.
            held: dict[str, list[tuple[int, str]]] = {}
            for block_id, (file, _, _, position, deleted_at) in known.items():
                if file in paths and deleted_at is None and block_id not in moves:
                    held.setdefault(file, []).append((position, block_id))
            for source, key in moves.items():
                known[key] = known.pop(source)
            writes: list[tuple[str, str, str, str, int, int, str]] = []
            results: list[SyncResult] = []
            for sync in files:
                changed: list[str] = []
                unchanged: list[str] = []
                for b in sync.blocks:
                    old = known.get(b.id)
                    new = (b.file, b.hash, b.version, b.position, None)
                    if old is None or old[4] is not None or old[1] != b.hash:
                        changed.append(b.id)
                    else:
                        unchanged.append(b.id)
                    if old != new:
                        writes.append((b.id, b.file, b.text, b.hash, b.version, b.position, now))
                        known[b.id] = new
                gone = [i for _, i in sorted(held.get(sync.state.path, ())) if i not in listed]
                results.append(
                    SyncResult(sync.state.path, tuple(changed), tuple(unchanged), tuple(gone))
                )
            conn.executemany(_UPSERT_BLOCK, writes)
            # The moved blocks' rows exist under their new keys now: their edges follow them.
            conn.executemany(
                "UPDATE edges SET block_id = ? WHERE block_id = ?",
                [(key, source) for source, key in moves.items()],
            )
            conn.executemany("DELETE FROM blocks WHERE id = ?", [(s,) for s in moves])
            conn.executemany(
                _UPSERT_FILE,
                [(s.state.path, s.state.mtime_ns, s.state.size, s.state.sha256) for s in files],
            )
            drop_docs(conn, moves)
            put_docs(
                conn,
                [search_doc(b) for sync in files for b in sync.blocks],
                live_claim_texts(conn, _json_list(listed)),
            )
        return results

    def record_write(self, state: FileState, versions: Mapping[str, int]) -> None:
        self.record_writes([(state, versions)])

    def record_writes(self, writes: Sequence[tuple[FileState, Mapping[str, int]]]) -> None:
        """See GraphStore: one transaction for them all."""
        now = utc_now()
        with self._write("record_writes") as conn:
            conn.executemany(
                _RECORD_VERSION,
                [
                    (v, now, block_id, state.path, v)
                    for state, versions in writes
                    for block_id, v in versions.items()
                ],
            )
            conn.executemany(
                _UPSERT_FILE,
                [(state.path, state.mtime_ns, state.size, state.sha256) for state, _ in writes],
            )

    def forget_files(self, paths: Iterable[str]) -> list[str]:
        paths_json = _json_list(paths)
        with self._write("forget_files") as conn:
            rows = conn.execute(
                f"SELECT id FROM blocks WHERE file {_IN_JSON} AND deleted_at IS NULL "
                "ORDER BY file, position",
                (paths_json,),
            ).fetchall()
            conn.execute(f"DELETE FROM files WHERE path {_IN_JSON}", (paths_json,))
        return [block_id for (block_id,) in rows]

    def mark_deleted(self, block_ids: Iterable[str]) -> int:
        with self._write("mark_deleted") as conn:
            ids = _json_list(block_ids)
            cursor = conn.execute(
                f"UPDATE blocks SET deleted_at = ? WHERE id {_IN_JSON} AND deleted_at IS NULL",
                (utc_now(), ids),
            )
            drop_docs(conn, json.loads(ids))
            return cursor.rowcount

    def get_blocks(self, block_ids: Iterable[str]) -> dict[str, StoredBlock]:
        with self._read("get_blocks") as conn:
            rows = conn.execute(
                f"SELECT {_BLOCK_COLUMNS} FROM blocks WHERE id {_IN_JSON}",
                (_json_list(block_ids),),
            ).fetchall()
        return {row[0]: _stored_block(row) for row in rows}

    def blocks_of_file(self, path: str) -> list[StoredBlock]:
        with self._read("blocks_of_file") as conn:
            rows = conn.execute(
                f"SELECT {_BLOCK_COLUMNS} FROM blocks WHERE file = ? AND deleted_at IS NULL "
                "ORDER BY position",
                (path,),
            ).fetchall()
        return [_stored_block(row) for row in rows]

    def live_blocks(self) -> list[StoredBlock]:
        with self._read("live_blocks") as conn:
            rows = conn.execute(
                f"SELECT {_BLOCK_COLUMNS} FROM blocks WHERE deleted_at IS NULL "
                "ORDER BY file, position"
            ).fetchall()
        return [_stored_block(row) for row in rows]

    def live_blocks_with_ids(self, block_ids: Iterable[str]) -> list[StoredBlock]:
        # A key starts with its id and the separator, the character before ``A``: the keys of
        # one id are a range of the primary key, so no index of its own is needed.
        with self._read("live_blocks_with_ids") as conn:
            rows = conn.execute(
                "SELECT b.id, b.file, b.text, b.hash, b.version, b.position, b.updated_at, "
                "b.deleted_at FROM json_each(?) j JOIN blocks b "
                "ON b.id >= j.value || '@' AND b.id < j.value || 'A' "
                "WHERE b.deleted_at IS NULL ORDER BY b.id",
                (_json_list(set(block_ids)),),
            ).fetchall()
        return [_stored_block(row) for row in rows]

    def replace_claims(self, claims_by_block: Mapping[str, Sequence[ClaimRecord]]) -> None:
        """Make these the claims each block originates, in the order given (see GraphStore).

        Raises:
            StoreError: A block id is not in the store.
        """
        check_claims(claims_by_block)
        with self._write("replace_claims") as conn:
            _replace_claims(conn, claims_by_block)
            _index_claims(conn, claims_by_block)

    def claims_of_blocks(self, block_ids: Iterable[str]) -> dict[str, list[StoredClaim]]:
        """Claims of each block in the order ``replace_claims`` was given them (see GraphStore)."""
        ids = list(dict.fromkeys(block_ids))
        with self._read("claims_of_blocks") as conn:
            rows = conn.execute(
                f"SELECT {_CLAIM_COLUMNS} FROM edges e JOIN claims c ON c.id = e.claim_id "
                f"WHERE e.block_id {_IN_JSON} ORDER BY e.block_id, e.ordinal",
                (_json_list(ids),),
            ).fetchall()
        result: dict[str, list[StoredClaim]] = {block_id: [] for block_id in ids}
        for row in rows:
            result[row[1]].append(_stored_claim(row))
        return result

    def claims_needing_evaluation(self) -> list[StoredClaim]:
        """See GraphStore; ordered by file, block position and claim order."""
        with self._read("claims_needing_evaluation") as conn:
            rows = conn.execute(
                f"SELECT {_CLAIM_COLUMNS} FROM edges e "
                "JOIN blocks b ON b.id = e.block_id JOIN claims c ON c.id = e.claim_id "
                "WHERE b.deleted_at IS NULL AND (e.evaluated_hash IS NULL "
                f"OR e.evaluated_hash IS NOT b.hash OR {_ANY_NULL_SCORE}) "
                "ORDER BY b.file, b.position, e.ordinal"
            ).fetchall()
        return [_stored_claim(row) for row in rows]

    def write_scores(self, scores: Sequence[ScoreRecord]) -> int:
        """See GraphStore; ``evaluated_at`` defaults to now, ``quality`` is derived."""
        with self._write("write_scores") as conn:
            return _write_scores(conn, scores, utc_now())

    def write_grades(self, grades: Sequence[GradeWrite]) -> list[int]:
        """See GraphStore: one transaction for them all (a take's notes share index pages, so
        one commit writes each page to the WAL once instead of once per note).

        Raises:
            StoreError: A block id is not in the store (nothing is written).
        """
        for grade in grades:
            check_claims(grade.claims)
        now = utc_now()
        with self._write("write_grades") as conn:
            written = []
            for grade in grades:
                _replace_claims(conn, grade.claims)
                _index_claims(conn, grade.claims)
                written.append(_write_scores(conn, grade.scores, now))
            return written

    def low_quality_claims(
        self,
        threshold: float = DEFAULT_QUALITY_THRESHOLD,
        limit: int | None = 10,
        *,
        file: str | None = None,
    ) -> list[StoredClaim]:
        """See GraphStore; a NULL quality never compares below the threshold."""
        check_limit(limit)
        with self._read("low_quality_claims") as conn:
            rows = conn.execute(
                f"SELECT {_CLAIM_COLUMNS} FROM edges e "
                "JOIN blocks b ON b.id = e.block_id JOIN claims c ON c.id = e.claim_id "
                "WHERE b.deleted_at IS NULL AND e.quality < ? AND (? IS NULL OR b.file = ?) "
                "ORDER BY e.quality, c.id, e.block_id LIMIT ?",
                (threshold, file, file, -1 if limit is None else limit),
            ).fetchall()
        return [_stored_claim(row) for row in rows]

    def failed_claims(
        self, limit: int | None = None, *, file: str | None = None
    ) -> list[StoredClaim]:
        """See GraphStore."""
        check_limit(limit)
        with self._read("failed_claims") as conn:
            rows = conn.execute(
                f"SELECT {_CLAIM_COLUMNS} FROM edges e "
                "JOIN blocks b ON b.id = e.block_id JOIN claims c ON c.id = e.claim_id "
                f"WHERE b.deleted_at IS NULL AND e.evaluated_hash IS NOT NULL AND {_ANY_NULL_SCORE}"
                " AND (? IS NULL OR b.file = ?) ORDER BY b.file, b.position, e.ordinal LIMIT ?",
                (file, file, -1 if limit is None else limit),
            ).fetchall()
        return [_stored_claim(row) for row in rows]

    def note_stats(self, threshold: float = DEFAULT_QUALITY_THRESHOLD) -> list[NoteStats]:
        """See GraphStore."""
        with self._read("note_stats") as conn:
            rows = conn.execute(_NOTE_STATS, (threshold,)).fetchall()
            keys = {row[-1].split("\x1f")[1] for row in rows if row[-1] is not None}
            texts = dict(
                conn.execute(
                    f"SELECT id, text FROM claims WHERE id {_IN_JSON}", (_json_list(keys),)
                ).fetchall()
            )
        stats = []
        for file, blocks, claims, scored, mean, last, below, lowest, key in rows:
            weakest = None
            if key is not None:
                _, claim_id, block_id = key.split("\x1f")
                weakest = ClaimRef(claim_id, texts[claim_id], file, block_id, "", quality=lowest)
            stats.append(NoteStats(file, blocks, claims, scored, mean, weakest, last, below))
        return stats

    def score_counts(self) -> dict[str, dict[int, int]]:
        """See GraphStore."""
        with self._read("score_counts") as conn:
            rows = conn.execute(_SCORE_COUNTS).fetchall()
        counts: dict[str, dict[int, int]] = {}
        for name, hundredths, n in rows:
            counts.setdefault(name, {})[int(hundredths)] = n
        return counts

    def daily_quality(self) -> list[DailyQuality]:
        """See GraphStore."""
        with self._read("daily_quality") as conn:
            rows = conn.execute(_DAILY_QUALITY).fetchall()
        return [DailyQuality(day, mean, n) for day, mean, n in rows]

    def counts(self, *, quality_threshold: float = DEFAULT_QUALITY_THRESHOLD) -> StoreCounts:
        # Claims are counted over every edge, on the partial indexes, then less those whose
        # edges (of the kind counted) are all on deleted blocks: deleted blocks are few, and a
        # join of every edge with its block costs most of an unchanged resync.
        with self._read("counts") as conn:
            files, blocks, deleted, claims, scored, null_scores, low = conn.execute(
                "SELECT (SELECT count(*) FROM files),"
                " (SELECT count(*) FROM blocks WHERE deleted_at IS NULL),"
                " (SELECT count(*) FROM blocks WHERE deleted_at IS NOT NULL),"
                " (SELECT count(*) FROM claims),"
                f" (SELECT count(DISTINCT claim_id) FROM edges WHERE {ALL_SCORED}),"
                f" (SELECT count(DISTINCT claim_id) FROM edges WHERE {NULL_SCORED}),"
                f" (SELECT count(*) FROM {_LIVE_EDGES} AND e.quality < ?)",
                (quality_threshold,),
            ).fetchone()
            if deleted:
                dead = _claims_of_deleted_blocks_only(conn)
                claims, scored, null_scores = (
                    claims - dead[0],
                    scored - dead[1],
                    null_scores - dead[2],
                )
        return StoreCounts(files, blocks, deleted, claims, scored, null_scores, low)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _claims_of_deleted_blocks_only(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """How many claims have edges on deleted blocks and none on a live one: of any kind, scored
    with three values, and with a null score."""
    kinds = f"CASE WHEN {ALL_SCORED} THEN 1 ELSE 0 END, CASE WHEN {NULL_SCORED} THEN 1 ELSE 0 END"
    dead = conn.execute(
        f"SELECT e.claim_id, {kinds} FROM blocks b JOIN edges e ON e.block_id = b.id"
        " WHERE b.deleted_at IS NOT NULL"
    ).fetchall()
    if not dead:
        return 0, 0, 0
    live = conn.execute(
        f"SELECT e.claim_id, {kinds} FROM {_LIVE_EDGES} AND e.claim_id {_IN_JSON}",
        (_json_list({claim for claim, _, _ in dead}),),
    ).fetchall()

    def of_kind(rows: list[Any], kind: int | None) -> set[str]:
        return {row[0] for row in rows if kind is None or row[kind]}

    return (
        len(of_kind(dead, None) - of_kind(live, None)),
        len(of_kind(dead, 1) - of_kind(live, 1)),
        len(of_kind(dead, 2) - of_kind(live, 2)),
    )


def _moves(
    files: Sequence[FileSync], known: dict[str, tuple[Any, ...]], listed: set[str]
) -> dict[str, str]:
    """The blocks ``files`` take over (``moved_from``): source key -> new key. A source that
    is gone, deleted, listed or already taken, or a new key the store holds, moves nothing."""
    moves: dict[str, str] = {}
    for sync in files:
        for b in sync.blocks:
            source = known.get(b.moved_from) if b.moved_from is not None else None
            if (
                b.moved_from is not None
                and source is not None
                and source[4] is None
                and b.moved_from not in moves
                and b.moved_from not in listed
                and b.id not in known
            ):
                moves[b.moved_from] = b.id
    return moves


def _index_claims(
    conn: sqlite3.Connection, claims_by_block: Mapping[str, Sequence[ClaimRecord]]
) -> None:
    set_claims(conn, {key: [c.text for c in claims] for key, claims in claims_by_block.items()})


def _replace_claims(
    conn: sqlite3.Connection, claims_by_block: Mapping[str, Sequence[ClaimRecord]]
) -> None:
    """``replace_claims`` inside the caller's transaction."""
    wanted: dict[tuple[str, str], tuple[int, str]] = {}
    for block_id, claims in claims_by_block.items():
        for claim in claims:
            wanted.setdefault((claim.id, block_id), (len(wanted), claim.text))
    blocks_json = _json_list(claims_by_block)
    missing = conn.execute(
        "SELECT value FROM json_each(?) WHERE value NOT IN (SELECT id FROM blocks)",
        (blocks_json,),
    ).fetchall()
    if missing:
        names = ", ".join(value for (value,) in missing[:5])
        raise StoreError(f"replace_claims: no such block in the store: {names}")
    existing = conn.execute(
        f"SELECT claim_id, block_id FROM edges WHERE block_id {_IN_JSON}", (blocks_json,)
    ).fetchall()
    dropped = [edge for edge in existing if edge not in wanted]
    conn.executemany("DELETE FROM edges WHERE claim_id = ? AND block_id = ?", dropped)
    conn.executemany(
        "INSERT INTO claims (id, text) VALUES (?, ?) ON CONFLICT (id) DO UPDATE "
        "SET text = excluded.text WHERE text IS NOT excluded.text",
        [(claim_id, text) for (claim_id, _), (_, text) in wanted.items()],
    )
    conn.executemany(
        "INSERT INTO edges (claim_id, block_id, ordinal) VALUES (?, ?, ?) "
        "ON CONFLICT (claim_id, block_id) DO UPDATE SET ordinal = excluded.ordinal",
        [(c, b, ordinal) for (c, b), (ordinal, _) in wanted.items()],
    )
    if dropped:
        conn.execute(
            f"DELETE FROM claims WHERE id {_IN_JSON} "
            "AND NOT EXISTS (SELECT 1 FROM edges WHERE edges.claim_id = claims.id)",
            (_json_list(claim_id for claim_id, _ in dropped),),
        )


def _write_scores(conn: sqlite3.Connection, scores: Sequence[ScoreRecord], now: str) -> int:
    """``write_scores`` inside the caller's transaction; ``now`` stamps undated scores."""
    params = [
        (
            *named_scores(s).values(),
            s.quality,
            s.verdict,
            s.justification,
            s.status,
            s.model,
            s.evaluated_hash,
            s.evaluated_at or now,
            json.dumps(list(s.omitted)),
            s.claim_id,
            s.block_id,
            s.evaluated_hash,
        )
        for s in scores
    ]
    return conn.executemany(_WRITE_SCORE, params).rowcount
