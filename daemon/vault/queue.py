"""The durable dirty-block queue (an outbox in SQLite), and the daemon's bookkeeping.

One row per block, by its key (note and id, :func:`aclarai.graph.block_key`): repeated edits
coalesce into one entry holding the latest file and hash, and bump ``generation`` so that a
consumer finishing an older generation leaves the newer one queued; an entry follows its block
when its note is renamed or moved (:meth:`DurableQueue.follow`).

A change is enqueued *before* it is synced to the graph, and an entry is removed only
after the graph write and the Markdown write-back both succeeded: a crash at any moment loses no
work. Failures back off exponentially with jitter; after ``max_attempts`` an entry becomes a dead
letter that ``aclarai status`` lists, and it never blocks the other entries.
"""

from __future__ import annotations

import json
import random
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aclarai.parsers import QueueError

PENDING = "pending"
INFLIGHT = "inflight"
DEAD = "dead"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    block_id        TEXT PRIMARY KEY,
    file            TEXT NOT NULL,
    hash            TEXT,
    reason          TEXT NOT NULL,
    generation      INTEGER NOT NULL DEFAULT 1,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    last_error      TEXT,
    state           TEXT NOT NULL DEFAULT 'pending',
    enqueued_at     REAL NOT NULL,
    updated_at      REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_ready ON outbox (state, next_attempt_at);
CREATE INDEX IF NOT EXISTS outbox_file ON outbox (file, state, next_attempt_at);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS settling (file TEXT PRIMARY KEY, since REAL NOT NULL);
CREATE TABLE IF NOT EXISTS leaving (
    block_id TEXT PRIMARY KEY,
    file     TEXT NOT NULL,
    since    REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS unmarked (file TEXT PRIMARY KEY, paragraphs INTEGER NOT NULL);
"""


_Step = tuple[str, Iterable[Sequence[object]]]


@dataclass(frozen=True, slots=True)
class Dirty:
    """A block to (re)process: ``changed`` text, or a ``rescore`` of claims with null scores."""

    block_id: str
    file: str
    hash: str | None
    reason: str = "changed"


@dataclass(frozen=True, slots=True)
class QueueEntry:
    block_id: str
    file: str
    hash: str | None
    reason: str
    generation: int
    attempts: int
    last_error: str | None
    state: str
    next_attempt_at: float


@dataclass(frozen=True, slots=True)
class Backoff:
    base_s: float = 1.0
    max_s: float = 300.0
    max_attempts: int = 8

    def delay_s(self, attempts: int) -> float:
        """Exponential backoff with full jitter between half and the whole step."""
        step = min(self.max_s, self.base_s * (2 ** max(attempts - 1, 0)))
        return step * (0.5 + random.random() / 2)


def _entry(row: Sequence[object]) -> QueueEntry:
    block_id, file, digest, reason, generation, attempts, error, state, due = row
    return QueueEntry(
        block_id=str(block_id),
        file=str(file),
        hash=None if digest is None else str(digest),
        reason=str(reason),
        generation=int(str(generation)),
        attempts=int(str(attempts)),
        last_error=None if error is None else str(error),
        state=str(state),
        next_attempt_at=float(str(due)),
    )


class DurableQueue:
    """The outbox of dirty blocks, safe to share between threads of one process."""

    def __init__(self, path: Path, *, backoff: Backoff | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.backoff = backoff or Backoff()
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA busy_timeout=10000")
            self._db.executescript(_SCHEMA)
            # Entries queued before block ids were note-scoped carry the bare id: the block is
            # the one of their file.
            self._db.execute(
                "UPDATE outbox SET block_id = block_id || '@' || file "
                "WHERE instr(block_id, '@') = 0"
            )
        except sqlite3.Error as exc:
            raise QueueError(f"cannot open the queue at {path}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _write(self, sql: str, rows: Iterable[Sequence[object]], *more: _Step) -> None:
        """Run statements over their rows in one transaction (one fsync)."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                for statement, params in ((sql, rows), *more):
                    self._db.executemany(statement, params)
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise QueueError(f"queue write failed: {exc}") from exc

    def enqueue(self, items: Iterable[Dirty], *, delay_s: float = 0.0) -> None:
        """Add or coalesce entries; a new edit revives a dead letter with a fresh budget."""
        now = time.time()
        rows = [(d.block_id, d.file, d.hash, d.reason, now + delay_s, now, now) for d in items]
        if not rows:
            return
        self._write(
            """
            INSERT INTO outbox (block_id, file, hash, reason, next_attempt_at, enqueued_at,
                                updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (block_id) DO UPDATE SET
                file = excluded.file,
                hash = COALESCE(excluded.hash, outbox.hash),
                reason = CASE WHEN outbox.reason = 'changed' THEN 'changed'
                              ELSE excluded.reason END,
                generation = outbox.generation + 1,
                attempts = CASE WHEN outbox.state = 'dead' THEN 0 ELSE outbox.attempts END,
                state = CASE WHEN outbox.state = 'inflight' THEN 'inflight' ELSE 'pending' END,
                next_attempt_at = MIN(outbox.next_attempt_at, excluded.next_attempt_at),
                updated_at = excluded.updated_at
            """,
            rows,
        )

    def follow(self, moves: Iterable[tuple[str, str, str]]) -> None:
        """Move the entries of blocks that moved to another note: (old key, new key, new file).

        A moved entry is pending again (one in flight finishes under its old key, a no-op);
        where the new key already has an entry, that one stands for both.
        """
        moves = list(moves)
        if not moves:
            return
        now = time.time()
        self._write(
            "UPDATE outbox SET block_id = ?, file = ?, updated_at = ?, generation = generation + 1,"
            " state = CASE WHEN state = 'dead' THEN 'dead' ELSE 'pending' END"
            " WHERE block_id = ? AND NOT EXISTS (SELECT 1 FROM outbox WHERE block_id = ?)",
            [(new, file, now, old, new) for old, new, file in moves],
            ("DELETE FROM outbox WHERE block_id = ?", [(old,) for old, _, _ in moves]),
        )

    def count_unmarked(self, paragraphs: Mapping[str, int]) -> None:
        """Record how many paragraphs of each of these adopted notes have no id yet (0: none,
        or the note is gone)."""
        counted = [(file, count) for file, count in paragraphs.items() if count]
        with self._lock:
            # Every sync of a note calls this, nearly always with 0 for a note that had 0: a
            # read spares that sync a write (and its fsync).
            known = self._db.execute(
                "SELECT file FROM unmarked WHERE file IN (SELECT value FROM json_each(?))",
                (json.dumps([file for file, count in paragraphs.items() if not count]),),
            ).fetchall()
        if counted or known:
            self._write(
                "DELETE FROM unmarked WHERE file = ?",
                known,
                (
                    "INSERT INTO unmarked (file, paragraphs) VALUES (?, ?)"
                    " ON CONFLICT (file) DO UPDATE SET paragraphs = excluded.paragraphs",
                    counted,
                ),
            )

    def unmarked(self) -> tuple[int, int]:
        """Paragraphs of adopted notes with no id yet, and the notes holding them."""
        with self._lock:
            row = self._db.execute("SELECT SUM(paragraphs), COUNT(*) FROM unmarked").fetchone()
        return int(row[0] or 0), int(row[1])

    # Blocks leaving their notes (see NoteSync.settle). A note's row says that a store call
    # about it may leave blocks behind, which ones unknown: it is written before that call and
    # turned into one row per block that left once the call is through, in one transaction.

    def settle_later(self, files: Iterable[str]) -> None:
        """Remember notes that a store call is about to sync or forget (an earlier row stays)."""
        rows = [(file, time.time()) for file in files]
        if rows:
            self._write("INSERT OR IGNORE INTO settling (file, since) VALUES (?, ?)", rows)

    def synced(
        self, files: Iterable[str], left: Iterable[tuple[str, str]], back: Iterable[str]
    ) -> None:
        """After the store call about ``files``: the blocks that ``left`` them (key, note) are
        remembered from now (or from when they first left), those ``back`` in a note are not."""
        now = time.time()
        self._write(
            "INSERT OR IGNORE INTO leaving (block_id, file, since) VALUES (?, ?, ?)",
            [(key, file, now) for key, file in left],
            ("DELETE FROM leaving WHERE block_id = ?", [(key,) for key in back]),
            ("DELETE FROM settling WHERE file = ?", [(file,) for file in files]),
        )

    def leaving(self, *, before: float) -> tuple[list[str], list[tuple[str, str]]]:
        """What is due to settle (remembered at or before ``before``, Unix time): the notes
        whose blocks that left are unknown, and the blocks that left their notes (key, note)."""
        with self._lock:
            notes = self._db.execute(
                "SELECT file FROM settling WHERE since <= ? ORDER BY file", (before,)
            ).fetchall()
            blocks = self._db.execute(
                "SELECT block_id, file FROM leaving WHERE since <= ? ORDER BY file, block_id",
                (before,),
            ).fetchall()
        return [str(r[0]) for r in notes], [(str(r[0]), str(r[1])) for r in blocks]

    def settled(self, files: Iterable[str], keys: Iterable[str], *, before: float) -> None:
        """Forget these notes and blocks once settled (rows written after ``before`` stay)."""
        self._write(
            "DELETE FROM settling WHERE file = ? AND since <= ?",
            [(file, before) for file in files],
            (
                "DELETE FROM leaving WHERE block_id = ? AND since <= ?",
                [(key, before) for key in keys],
            ),
        )

    def unsettled(self) -> int:
        """Notes that lost blocks (or may have) not settled yet."""
        with self._lock:
            row = self._db.execute(
                "SELECT count(*) FROM (SELECT file FROM settling UNION SELECT file FROM leaving)"
            ).fetchone()
        return int(row[0])

    def take(self, limit: int, *, now: float | None = None) -> list[QueueEntry]:
        """Mark ready entries in flight and return them: every ready entry of the notes that
        the oldest ``limit`` ready entries belong to, note by note, oldest first.

        A note's ready entries are never split between takes, so the consumer reads, parses,
        syncs and rewrites a note once per take however many of its blocks are queued: the cost
        per block stays flat in note size (a 10,000-block note split into takes of 128 would be
        parsed and written ~80 times).
        """
        now = time.time() if now is None else now
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                oldest = self._db.execute(
                    "SELECT file FROM outbox WHERE state = 'pending' AND next_attempt_at <= ?"
                    " ORDER BY next_attempt_at, enqueued_at LIMIT ?",
                    (now, limit),
                ).fetchall()
                rows = [
                    row
                    for file in dict.fromkeys(f for (f,) in oldest)
                    for row in self._db.execute(
                        "SELECT block_id, file, hash, reason, generation, attempts, last_error,"
                        " state, next_attempt_at FROM outbox WHERE file = ? AND state = 'pending'"
                        " AND next_attempt_at <= ? ORDER BY next_attempt_at, enqueued_at",
                        (file, now),
                    )
                ]
                self._db.executemany(
                    "UPDATE outbox SET state = 'inflight', updated_at = ? WHERE block_id = ?",
                    [(now, r[0]) for r in rows],
                )
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise QueueError(f"queue read failed: {exc}") from exc
        return [_entry((*r[:7], INFLIGHT, r[8])) for r in rows]

    def complete(self, entries: Iterable[QueueEntry]) -> None:
        """Remove entries that were processed, unless a newer edit arrived meanwhile."""
        now = time.time()
        entries = list(entries)
        if not entries:
            return
        self._write(
            "DELETE FROM outbox WHERE block_id = ? AND generation = ?",
            [(e.block_id, e.generation) for e in entries],
            (
                "UPDATE outbox SET state = 'pending', updated_at = ? WHERE block_id = ?"
                " AND state = 'inflight'",
                [(now, e.block_id) for e in entries],
            ),
        )

    def release(self, entries: Iterable[QueueEntry], *, delay_s: float = 0.0) -> None:
        """Put entries back without counting an attempt (shutdown, a note that changed)."""
        now = time.time()
        self._write(
            "UPDATE outbox SET state = 'pending', next_attempt_at = ?, updated_at = ?"
            " WHERE block_id = ? AND state = 'inflight'",
            [(now + delay_s, now, e.block_id) for e in entries],
        )

    def fail(self, entries: Iterable[QueueEntry], error: str) -> list[QueueEntry]:
        """Count a failed attempt; return the entries that just became dead letters.

        An entry edited again while in flight is not charged: the new edit gets a fresh try.
        """
        now = time.time()
        dead = []
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                for e in entries:
                    attempts = e.attempts + 1
                    state = DEAD if attempts >= self.backoff.max_attempts else PENDING
                    due = now if state == DEAD else now + self.backoff.delay_s(attempts)
                    cur = self._db.execute(
                        "UPDATE outbox SET attempts = ?, last_error = ?, state = ?,"
                        " next_attempt_at = ?, updated_at = ?"
                        " WHERE block_id = ? AND generation = ?",
                        (attempts, error, state, due, now, e.block_id, e.generation),
                    )
                    if cur.rowcount == 0:
                        self._db.execute(
                            "UPDATE outbox SET state = 'pending', updated_at = ?"
                            " WHERE block_id = ? AND state = 'inflight'",
                            (now, e.block_id),
                        )
                    elif state == DEAD:
                        dead.append(e)
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise QueueError(f"queue write failed: {exc}") from exc
        return dead

    def recover_inflight(self) -> int:
        """After a crash, entries left in flight become pending again (we hold the vault lock)."""
        with self._lock:
            cur = self._db.execute("UPDATE outbox SET state = 'pending' WHERE state = 'inflight'")
            return cur.rowcount

    def make_due(self) -> int:
        """Bring every pending entry's next attempt to now (an explicit resync does queued work
        at once, not at its backoff time); attempts are kept. Returns how many."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE outbox SET next_attempt_at = ? WHERE state = 'pending'"
                " AND next_attempt_at > ?",
                (time.time(), time.time()),
            )
            return cur.rowcount

    def depth(self) -> int:
        """Entries still to process (pending or in flight), dead letters excluded."""
        with self._lock:
            row = self._db.execute("SELECT COUNT(*) FROM outbox WHERE state != 'dead'").fetchone()
        return int(row[0])

    def oldest_waiting(self) -> tuple[str, float] | None:
        """The note and the Unix time of the oldest change still to process (dead letters
        excluded; a block edited again keeps its first time); ``None`` when there is none."""
        with self._lock:
            row = self._db.execute(
                "SELECT file, enqueued_at FROM outbox WHERE state != 'dead'"
                " ORDER BY enqueued_at LIMIT 1"
            ).fetchone()
        return None if row is None else (str(row[0]), float(row[1]))

    def next_due_in_s(self) -> float | None:
        """Seconds until the next pending entry is due (0 if one is ready); None when empty."""
        with self._lock:
            row = self._db.execute(
                "SELECT MIN(next_attempt_at) FROM outbox WHERE state = 'pending'"
            ).fetchone()
        if row[0] is None:
            return None
        return max(0.0, float(row[0]) - time.time())

    def entries(self, state: str | None = None) -> list[QueueEntry]:
        sql = (
            "SELECT block_id, file, hash, reason, generation, attempts, last_error, state,"
            " next_attempt_at FROM outbox"
        )
        params: tuple[object, ...] = ()
        if state is not None:
            sql += " WHERE state = ?"
            params = (state,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY file, block_id", params).fetchall()
        return [_entry(r) for r in rows]

    def dead_letters(self) -> list[QueueEntry]:
        return self.entries(DEAD)

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            try:
                row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as exc:
                raise QueueError(f"queue read failed: {exc}") from exc
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self._write(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [(key, value)],
        )

    def meta_items(self, prefix: str) -> dict[str, str]:
        """Every meta key starting with ``prefix`` (requests other processes left here)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT key, value FROM meta WHERE substr(key, 1, ?) = ? ORDER BY key",
                (len(prefix), prefix),
            ).fetchall()
        return {str(k): str(v) for k, v in rows}

    def delete_meta(self, *keys: str) -> None:
        self._write("DELETE FROM meta WHERE key = ?", [(key,) for key in keys])
