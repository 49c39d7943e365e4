"""The search index of a store: every live block's words (SQLite FTS5, BM25) and its vector.

One row per live block in ``search_docs``: its row number (never reused, so a vector computed
for a row that changed meanwhile cannot land on its successor), its key, note, hash and what it
is about (title,
aliases, headings). Its words are in two FTS5 tables: ``search_words`` (``unicode61``, diacritics
folded) for every block, and ``search_grams`` (``trigram``) for blocks with Chinese, Japanese or
Korean text, which has no spaces between words for ``unicode61`` to split on. Each table has
four columns: ``about``, ``body`` (the block as a reader sees it, :func:`reader_text`),
``claims`` (the texts of the claims it originates) and ``nearby`` (the note's text around it that
no block holds: a callout, a table). ``search_vectors`` holds one int8 vector per
block and model, dropped whenever the block's words change, so a missing row means "not embedded
yet".

The embedded store keeps this index in its own file and writes it in the transaction that writes
the blocks and claims it mirrors (:mod:`aclarai.graph.sqlite`); Neo4j's store keeps it in a file
of the state folder, written by the same call right after the graph's transaction
(:mod:`aclarai.graph.neo4j`). Either way the store is its only writer, ``aclarai resync``
reconciles it with the store (:func:`reconcile`) and ``status --verify`` reports any difference.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from aclarai.parsers import StoreError, note_title, reader_text

if TYPE_CHECKING:
    from aclarai.graph.base import BlockRecord

T = TypeVar("T")
Weights = tuple[float, float, float, float]
"""BM25 weights of the columns about, body, claims and nearby."""

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_IN_JSON = "IN (SELECT value FROM json_each(?))"
CLAIM_SEPARATOR = "\n"

SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS search_docs (
        doc INTEGER PRIMARY KEY AUTOINCREMENT,
        block_id TEXT NOT NULL UNIQUE,
        file TEXT NOT NULL,
        hash TEXT NOT NULL,
        about TEXT NOT NULL,
        nearby TEXT NOT NULL,
        grams INTEGER NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS search_docs_file ON search_docs (file)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_words USING fts5("
    "about, body, claims, nearby, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_grams USING fts5("
    "about, body, claims, nearby, tokenize = 'trigram')",
    """
    CREATE TABLE IF NOT EXISTS search_vectors (
        doc INTEGER NOT NULL,
        model TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY (doc, model)
    )
    """,
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_words_vocab USING fts5vocab(search_words, 'row')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_grams_vocab USING fts5vocab(search_grams, 'row')",
    "CREATE TABLE IF NOT EXISTS search_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
)


@dataclass(frozen=True, slots=True)
class SearchDoc:
    """A live block as the index holds it."""

    block_id: str
    """Its store key."""
    file: str
    hash: str
    about: str | None
    """``None`` where the caller did not parse its note: the index keeps what it holds, and a
    block new to it is about its note's title until its note is parsed."""
    text: str
    """Its Markdown, as the store holds it; the index keeps it rendered."""
    nearby: str = ""
    """The note's text around it that no block holds (a callout, a table), as a reader sees
    it; left to the index with ``about``."""


@dataclass(frozen=True, slots=True)
class WordMatch:
    block_id: str
    file: str
    rank: float
    """FTS5's BM25 rank: lower is better (it is the negated score)."""


@dataclass(frozen=True, slots=True)
class IndexedBlock:
    block_id: str
    file: str
    about: str
    body: str
    claims: tuple[str, ...]
    nearby: str


@dataclass(frozen=True, slots=True)
class IndexDrift:
    """How the index differs from the blocks and claims it should mirror."""

    missing: int
    """Live blocks it lacks."""
    extra: int
    """Rows of blocks that are not live (or not in the store)."""
    stale: int
    """Rows whose note, hash, about or claims differ."""

    @property
    def total(self) -> int:
        return self.missing + self.extra + self.stale


def search_doc(block: BlockRecord) -> SearchDoc:
    return SearchDoc(block.id, block.file, block.hash, block.about, block.text, block.nearby)


def create_schema(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA:
        conn.execute(statement)


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def _json_list(values: Iterable[str]) -> str:
    return json.dumps(list(values))


def _bump(conn: sqlite3.Connection) -> None:
    """Count a change of the vectors' rows, so a reader knows to reload them."""
    _set_meta(conn, "vectors", _meta(conn, "vectors") + 1)


def put_docs(
    conn: sqlite3.Connection, docs: Sequence[SearchDoc], claims: Mapping[str, Sequence[str]] = {}
) -> int:
    """Index these blocks inside the caller's transaction; a block whose note, hash and about
    are unchanged is left alone. A new block starts with ``claims.get(key)`` (none by default);
    a changed one keeps its claims. Returns how many rows were written."""
    if not docs:
        return 0
    rows = conn.execute(
        f"SELECT d.doc, d.block_id, d.file, d.hash, d.about, w.claims, d.nearby FROM search_docs d "
        f"JOIN search_words w ON w.rowid = d.doc WHERE d.block_id {_IN_JSON}",
        (_json_list(d.block_id for d in docs),),
    ).fetchall()
    known = {row[1]: row for row in rows}
    written = 0
    for doc in docs:
        old = known.get(doc.block_id)
        if (
            old is not None
            and (old[2], old[3]) == (doc.file, doc.hash)
            and (doc.about is None or (doc.about, doc.nearby) == (old[4], old[6]))
        ):
            continue
        kept = old[5] if old is not None else CLAIM_SEPARATOR.join(claims.get(doc.block_id, ()))
        if old is not None:
            _delete(conn, [old[0]])
        _insert(conn, doc, kept, (old[4], old[6]) if old is not None else None)
        written += 1
    if written:
        _bump(conn)
    return written


def _insert(
    conn: sqlite3.Connection,
    doc: SearchDoc,
    claims: str,
    held: tuple[str, str] | None = None,
) -> None:
    """Index ``doc``; ``held`` is the (about, nearby) the index had for it."""
    if doc.about is not None:
        about, nearby = doc.about, doc.nearby
    else:
        about, nearby = held or (note_title(doc.file), "")
    body = reader_text(doc.text)
    grams = any(has_cjk(text) for text in (about, body, claims, nearby))
    cursor = conn.execute(
        "INSERT INTO search_docs (block_id, file, hash, about, nearby, grams) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (doc.block_id, doc.file, doc.hash, about, nearby, int(grams)),
    )
    row = (cursor.lastrowid, about, body, claims, nearby)
    for table in ("search_words", "search_grams") if grams else ("search_words",):
        conn.execute(
            f"INSERT INTO {table} (rowid, about, body, claims, nearby) VALUES (?, ?, ?, ?, ?)",
            row,
        )


def _delete(conn: sqlite3.Connection, docs: Sequence[int]) -> None:
    params = [(d,) for d in docs]
    conn.executemany("DELETE FROM search_words WHERE rowid = ?", params)
    conn.executemany("DELETE FROM search_grams WHERE rowid = ?", params)
    conn.executemany("DELETE FROM search_vectors WHERE doc = ?", params)
    conn.executemany("DELETE FROM search_docs WHERE doc = ?", params)


def drop_docs(conn: sqlite3.Connection, block_ids: Iterable[str]) -> int:
    """Take these blocks out of the index inside the caller's transaction."""
    docs = [
        doc
        for (doc,) in conn.execute(
            f"SELECT doc FROM search_docs WHERE block_id {_IN_JSON}", (_json_list(block_ids),)
        )
    ]
    _delete(conn, docs)
    if docs:
        _bump(conn)
    return len(docs)


def set_claims(conn: sqlite3.Connection, claims: Mapping[str, Sequence[str]]) -> None:
    """Make these the claim texts of indexed blocks, inside the caller's transaction (blocks
    the index lacks are skipped: their claims are read when they are indexed)."""
    if not claims:
        return
    rows = conn.execute(
        f"SELECT d.doc, d.block_id, d.grams, w.claims FROM search_docs d "
        f"JOIN search_words w ON w.rowid = d.doc WHERE d.block_id {_IN_JSON}",
        (_json_list(claims),),
    ).fetchall()
    changed = False
    for doc, block_id, grams, old in rows:
        text = CLAIM_SEPARATOR.join(claims[block_id])
        if text == old:
            continue
        changed = True
        conn.execute("UPDATE search_words SET claims = ? WHERE rowid = ?", (text, doc))
        if grams:
            conn.execute("UPDATE search_grams SET claims = ? WHERE rowid = ?", (text, doc))
        elif has_cjk(text):
            about, body, nearby = conn.execute(
                "SELECT about, body, nearby FROM search_words WHERE rowid = ?", (doc,)
            ).fetchone()
            conn.execute(
                "INSERT INTO search_grams (rowid, about, body, claims, nearby) "
                "VALUES (?, ?, ?, ?, ?)",
                (doc, about, body, text, nearby),
            )
            conn.execute("UPDATE search_docs SET grams = 1 WHERE doc = ?", (doc,))
        conn.execute("DELETE FROM search_vectors WHERE doc = ?", (doc,))
    if changed:
        _bump(conn)


def clear(conn: sqlite3.Connection) -> None:
    for table in ("search_words", "search_grams", "search_vectors", "search_docs"):
        conn.execute(f"DELETE FROM {table}")
    _bump(conn)


def vector_bytes(vectors: np.ndarray) -> list[bytes]:
    """Unit float rows as int8 (x127, rounded): a quarter of float32's size, and the cosine
    moves by well under 0.01."""
    return [row.tobytes() for row in np.clip(np.rint(vectors * 127), -127, 127).astype(np.int8)]


class SearchIndex:
    """Reads (and, for its owner, writes) the index tables on ``conn``.

    ``lock`` is held around each use: the embedded store passes its own connection and lock,
    so the index shares its transactions.
    """

    def __init__(
        self, conn: sqlite3.Connection, lock: threading.RLock, *, owned: bool = False
    ) -> None:
        self._conn: sqlite3.Connection | None = conn
        self._lock = lock
        self._owned = owned

    @classmethod
    def open_file(cls, path: Path | None) -> SearchIndex:
        """An index in its own SQLite file (``None``: in memory), for a store that is not
        SQLite.

        Raises:
            StoreError: the file cannot be opened or is not an index.
        """
        target = ":memory:" if path is None else str(path)
        try:
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout = 5000")
            if path is not None:
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            create_schema(conn)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"search index {target}: cannot open: {exc}") from exc
        return cls(conn, threading.RLock(), owned=True)

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._conn is None:
                raise StoreError("the search index is closed")
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreError(f"search index: {exc}") from exc

    def write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(conn)`` in one transaction of its own."""
        with self.reading() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(conn)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

    def match_words(
        self, expression: str, limit: int, *, weights: Weights, scope: str = ""
    ) -> list[WordMatch]:
        """Blocks matching an FTS5 ``expression`` over ``search_words``, best BM25 first."""
        return self._match("search_words", expression, limit, weights, scope)

    def match_grams(
        self, expression: str, limit: int, *, weights: Weights, scope: str = ""
    ) -> list[WordMatch]:
        """The same over ``search_grams`` (trigrams of CJK blocks)."""
        return self._match("search_grams", expression, limit, weights, scope)

    def _match(
        self,
        table: str,
        expression: str,
        limit: int,
        weights: Weights,
        scope: str,
    ) -> list[WordMatch]:
        where, params = _scope(scope)
        query = (
            f"SELECT d.block_id, d.file, bm25({table}, ?, ?, ?, ?) AS r FROM {table} "
            f"JOIN search_docs d ON d.doc = {table}.rowid "
            f"WHERE {table} MATCH ? {where} ORDER BY r LIMIT ?"
        )
        with self.reading() as conn:
            rows = conn.execute(query, (*weights, expression, *params, limit)).fetchall()
        return [WordMatch(*row) for row in rows]

    def blocks(self, block_ids: Iterable[str]) -> dict[str, IndexedBlock]:
        """What the index holds of these blocks."""
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT d.block_id, d.file, w.about, w.body, w.claims, w.nearby "
                "FROM search_docs d JOIN search_words w ON w.rowid = d.doc "
                f"WHERE d.block_id {_IN_JSON}",
                (_json_list(block_ids),),
            ).fetchall()
        return {
            row[0]: IndexedBlock(
                row[0],
                row[1],
                row[2],
                row[3],
                tuple(c for c in row[4].split(CLAIM_SEPARATOR) if c),
                row[5],
            )
            for row in rows
        }

    def document_frequencies(self, words: Sequence[str], grams: Sequence[str]) -> dict[str, int]:
        """In how many blocks each word (``search_words``' folded tokens) and each trigram of
        CJK text (``search_grams``) occurs."""
        found: dict[str, int] = {}
        with self.reading() as conn:
            for table, terms in (("search_words_vocab", words), ("search_grams_vocab", grams)):
                if terms:
                    found.update(
                        conn.execute(
                            f"SELECT term, doc FROM {table} WHERE term {_IN_JSON}",
                            (_json_list(terms),),
                        ).fetchall()
                    )
        return found

    def prefix_frequencies(self, stems: Sequence[str]) -> dict[str, int]:
        """For each stem, ``stem*``: the blocks holding each word it starts, summed (an upper
        bound of the blocks holding any)."""
        found: dict[str, int] = {}
        with self.reading() as conn:
            for stem in stems:
                (total,) = conn.execute(
                    "SELECT coalesce(sum(doc), 0) FROM search_words_vocab "
                    "WHERE term >= ? AND term < ?",
                    (stem, stem + "\U0010ffff"),
                ).fetchone()
                found[stem + "*"] = int(total)
        return found

    def keys_in(self, scope: str) -> set[str]:
        """The keys of the blocks of a note or folder (see :meth:`match_words`' ``scope``)."""
        where, params = _scope(scope)
        with self.reading() as conn:
            rows = conn.execute(f"SELECT d.block_id FROM search_docs d WHERE 1 {where}", params)
            return {key for (key,) in rows}

    def size(self) -> int:
        with self.reading() as conn:
            return int(conn.execute("SELECT count(*) FROM search_docs").fetchone()[0])

    def vectors_version(self) -> int:
        with self.reading() as conn:
            return _meta(conn, "vectors")

    def pending(self) -> bool:
        """Whether a store write began whose index write did not follow (a crash between)."""
        with self.reading() as conn:
            return bool(_meta(conn, "pending"))

    def partial(self) -> bool:
        """Whether some blocks were indexed without their note's parse (after an upgrade, or
        a mend from the store alone): their titles, headings and nearby text wait for one."""
        with self.reading() as conn:
            return bool(_meta(conn, "partial"))

    def vectors(self, model: str, scope: str = "") -> tuple[list[str], np.ndarray, int]:
        """Block keys, their int8 vectors (one row each) and how many blocks in ``scope`` have
        none yet."""
        where, params = _scope(scope)
        with self.reading() as conn:
            rows = conn.execute(
                f"SELECT d.block_id, v.vector FROM search_docs d "
                f"JOIN search_vectors v ON v.doc = d.doc AND v.model = ? WHERE 1 {where} "
                "ORDER BY d.doc",
                (model, *params),
            ).fetchall()
            total = conn.execute(
                f"SELECT count(*) FROM search_docs d WHERE 1 {where}", params
            ).fetchone()[0]
        if not rows:
            return [], np.zeros((0, 0), dtype=np.int8), int(total)
        matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.int8)
        return [row[0] for row in rows], matrix.reshape(len(rows), -1), int(total) - len(rows)

    def unembedded(self, model: str, limit: int, after: int = 0) -> list[tuple[int, str]]:
        """Up to ``limit`` blocks without a vector of ``model``, in row order after the row
        ``after``: (row, text to embed)."""
        with self.reading() as conn:
            # The rows first, then their words: joined in one statement, SQLite scans the FTS
            # table for every row.
            docs = [
                doc
                for (doc,) in conn.execute(
                    "SELECT d.doc FROM search_docs d WHERE d.doc > ? AND NOT EXISTS (SELECT 1 "
                    "FROM search_vectors v WHERE v.doc = d.doc AND v.model = ?) "
                    "ORDER BY d.doc LIMIT ?",
                    (after, model, limit),
                )
            ]
            texts = {
                doc: embedding_text(about, body, claims)
                for doc, about, body, claims in conn.execute(
                    f"SELECT rowid, about, body, claims FROM search_words WHERE rowid {_IN_JSON}",
                    (json.dumps(docs),),
                )
            }
        return [(doc, texts[doc]) for doc in docs if doc in texts]

    def put_vectors(self, model: str, rows: Sequence[tuple[int, bytes]]) -> None:
        """Store vectors of rows that still exist (a row changed meanwhile is skipped)."""

        def work(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO search_vectors (doc, model, vector) "
                "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM search_docs WHERE doc = ?)",
                [(doc, model, vector, doc) for doc, vector in rows],
            )
            _bump(conn)

        self.write(work)

    def drift(self, docs: Sequence[SearchDoc], claims: Mapping[str, Sequence[str]]) -> IndexDrift:
        """How the index differs from these live blocks and their claims."""
        with self.reading() as conn:
            rows = conn.execute(
                "SELECT d.block_id, d.file, d.hash, d.about, w.claims, d.nearby FROM search_docs d "
                "JOIN search_words w ON w.rowid = d.doc"
            ).fetchall()
        held = {row[0]: row[1:] for row in rows}
        wanted = {d.block_id: d for d in docs}
        stale = 0
        for key, doc in wanted.items():
            row = held.get(key)
            if row is not None and not _same(row, doc, claims.get(key, ())):
                stale += 1
        return IndexDrift(
            missing=len(wanted.keys() - held.keys()),
            extra=len(held.keys() - wanted.keys()),
            stale=stale,
        )

    def close(self) -> None:
        with self._lock:
            if self._owned and self._conn is not None:
                self._conn.close()
            self._conn = None


def reconcile(
    conn: sqlite3.Connection, docs: Sequence[SearchDoc], claims: Mapping[str, Sequence[str]]
) -> IndexDrift:
    """Make the index hold exactly these live blocks with these claims, inside the caller's
    transaction; return what it fixed. Rows that already match keep their vectors."""
    rows = conn.execute(
        "SELECT d.doc, d.block_id, d.file, d.hash, d.about, w.claims, d.nearby FROM search_docs d "
        "JOIN search_words w ON w.rowid = d.doc"
    ).fetchall()
    held = {row[1]: row for row in rows}
    wanted = {d.block_id: d for d in docs}
    extra = [row[0] for key, row in held.items() if key not in wanted]
    partial = any(doc.about is None and doc.block_id not in held for doc in docs)
    _delete(conn, extra)
    missing = stale = 0
    for key, doc in wanted.items():
        row = held.get(key)
        if row is not None and _same(row[2:], doc, claims.get(key, ())):
            continue
        if row is None:
            missing += 1
        else:
            stale += 1
            _delete(conn, [row[0]])
        _insert(
            conn, doc, CLAIM_SEPARATOR.join(claims.get(key, ())), (row[4], row[6]) if row else None
        )
    if extra or missing or stale:
        _bump(conn)
    # Blocks indexed without their note's parse are about their title alone until it comes.
    _set_meta(conn, "partial", int(partial or (_meta(conn, "partial") and _any_unknown(docs))))
    _set_meta(conn, "pending", 0)
    return IndexDrift(missing=missing, extra=len(extra), stale=stale)


def begin_write(conn: sqlite3.Connection) -> None:
    """Count a write of the store that the index will follow in a later transaction (Neo4j's):
    until :func:`end_write` a crash leaves the count up, and the next ``resync`` reconciles."""
    _set_meta(conn, "pending", _meta(conn, "pending") + 1)


def end_write(conn: sqlite3.Connection) -> None:
    _set_meta(conn, "pending", max(0, _meta(conn, "pending") - 1))


def _any_unknown(docs: Sequence[SearchDoc]) -> bool:
    return any(doc.about is None for doc in docs)


def _meta(conn: sqlite3.Connection, key: str) -> int:
    row = conn.execute("SELECT value FROM search_meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else 0


def _set_meta(conn: sqlite3.Connection, key: str, value: int) -> None:
    conn.execute(
        "INSERT INTO search_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def _same(row: Sequence[str], doc: SearchDoc, claims: Sequence[str]) -> bool:
    """Whether a held row's (file, hash, about, claims, nearby) is what ``doc`` and ``claims``
    say."""
    file, hash_, about, held_claims, nearby = row
    return (
        (file, hash_) == (doc.file, doc.hash)
        and (doc.about is None or (doc.about, doc.nearby) == (about, nearby))
        and held_claims == CLAIM_SEPARATOR.join(claims)
    )


def embedding_text(about: str, body: str, claims: str) -> str:
    """What a block's vector is of: what it is about, then its text."""
    return f"{about}\n{body}" if about else body


def _scope(scope: str) -> tuple[str, tuple[object, ...]]:
    """SQL limiting ``search_docs d`` to a note (``a/b.md``) or a folder (``a/`` or ``a``)."""
    if not scope:
        return "", ()
    if scope.endswith(".md"):
        return "AND d.file = ?", (scope,)
    folder = scope.rstrip("/") + "/"
    return "AND substr(d.file, 1, ?) = ?", (len(folder), folder)
