"""The embedded store's schema, built from numbered migration functions.

Each migration is a function taking a :class:`sqlite3.Connection`; :func:`migrate` runs, in order,
the ones not yet recorded in ``_aclarai_migrations`` and records each in the same transaction as its
DDL, so a crash leaves the database at the previous step. Migrations are append-only: never edit
one that has shipped, add the next number instead.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from aclarai.parsers import StoreError, utc_now

if TYPE_CHECKING:
    from aclarai.graph.search_index import SearchDoc

Migration = Callable[[sqlite3.Connection], None]

MIGRATIONS_TABLE = "_aclarai_migrations"


def m001_files_and_blocks(conn: sqlite3.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE files (
            path TEXT PRIMARY KEY,
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL,
            sha256 TEXT NOT NULL
        )
        """
    )
    conn.execute(
        """
        CREATE TABLE blocks (
            id TEXT PRIMARY KEY,
            file TEXT NOT NULL,
            text TEXT NOT NULL,
            hash TEXT NOT NULL,
            version INTEGER NOT NULL,
            position INTEGER NOT NULL,
            updated_at TEXT NOT NULL,
            deleted_at TEXT
        )
        """
    )
    conn.execute("CREATE INDEX blocks_file ON blocks (file, position)")
    conn.execute("CREATE INDEX blocks_hash ON blocks (hash)")


def m002_claims_and_edges(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE claims (id TEXT PRIMARY KEY, text TEXT NOT NULL)")
    # One row per ORIGINATES_FROM edge; the scores live here, not on the claim, because a
    # claim is graded against one particular source block. ``evaluated_hash IS NULL`` means the
    # edge was never evaluated; a NULL score on an evaluated edge means that evaluation failed.
    conn.execute(
        """
        CREATE TABLE edges (
            claim_id TEXT NOT NULL REFERENCES claims (id) ON DELETE CASCADE,
            block_id TEXT NOT NULL REFERENCES blocks (id),
            ordinal INTEGER NOT NULL,
            entailed_score REAL,
            coverage_score REAL,
            decontextualization_score REAL,
            quality REAL,
            verdict TEXT,
            justification TEXT,
            status TEXT,
            model TEXT,
            evaluated_hash TEXT,
            evaluated_at TEXT,
            omitted TEXT,
            PRIMARY KEY (claim_id, block_id)
        )
        """
    )


def m003_edges_by_block(conn: sqlite3.Connection) -> None:
    # claims_of_blocks and replace_claims look edges up by block; the primary key leads with
    # the claim, so without this they scan every edge.
    conn.execute("CREATE INDEX edges_block ON edges (block_id, ordinal)")


def m004_edges_by_quality(conn: sqlite3.Connection) -> None:
    # ``aclarai status`` lists the lowest-quality claims and counts those below the threshold;
    # without this it sorts every edge. Partial: unscored and failed edges are never listed.
    conn.execute("CREATE INDEX edges_quality ON edges (quality) WHERE quality IS NOT NULL")


ALL_SCORED = (
    "evaluated_hash IS NOT NULL AND entailed_score IS NOT NULL AND coverage_score IS NOT NULL "
    "AND decontextualization_score IS NOT NULL"
)
"""An edge scored with three values (SQLite matches a partial index only on these words)."""
NULL_SCORED = (
    "evaluated_hash IS NOT NULL AND (entailed_score IS NULL OR coverage_score IS NULL "
    "OR decontextualization_score IS NULL)"
)
"""An edge evaluated with at least one failed (null) score."""


# Every stamp column, by table.
_STAMP_COLUMNS = (
    ("blocks", "updated_at"),
    ("blocks", "deleted_at"),
    ("edges", "evaluated_at"),
    (MIGRATIONS_TABLE, "applied_at"),
)


def m005_utc_stamps(conn: sqlite3.Connection) -> None:
    # Earlier versions stamped ``2024-06-03T09:00:00.123456+00:00`` beside the consumer's
    # ``...Z``: mixed, the two do not compare as text. Every stamp was UTC, so the first 19
    # characters are the second it names.
    for table, column in _STAMP_COLUMNS:
        conn.execute(
            f"UPDATE {table} SET {column} = substr({column}, 1, 19) || 'Z' "
            f"WHERE {column} LIKE '%+00:00' OR ({column} LIKE '%Z' AND length({column}) > 20)"
        )


def m006_edges_by_score_state(conn: sqlite3.Connection) -> None:
    # ``counts`` (every resync's summary, ``aclarai status``) counts the distinct claims that are
    # scored and those with a null score: without these it sorts every claim id, most of an
    # unchanged resync's time. The WHERE clauses are the ones ``counts`` uses, word for word.
    conn.execute(f"CREATE INDEX edges_scored ON edges (claim_id) WHERE {ALL_SCORED}")
    conn.execute(f"CREATE INDEX edges_null_score ON edges (claim_id) WHERE {NULL_SCORED}")


def m007_drop_blocks_hash(conn: sqlite3.Connection) -> None:
    # No query looks a block up by its hash (a score write checks the hash on the row it finds
    # by id), and a hash is a random key: the index cost a write to a random page per block
    # synced, 60% of a cold sync's store time.
    conn.execute("DROP INDEX IF EXISTS blocks_hash")


def m008_note_scoped_block_keys(conn: sqlite3.Connection) -> None:
    # A block is its note plus its id (Obsidian's ids are note-scoped): ``blocks.id`` and
    # ``edges.block_id`` become ``id@file`` (graph.base.block_key), each block keeping its
    # claims and scores. Ids were unique vault-wide before, so every edge finds its block.
    # The deferral lets the edges point at the new keys before the blocks carry them.
    conn.execute("PRAGMA defer_foreign_keys = ON")
    conn.execute(
        "UPDATE edges SET block_id = block_id || '@' || "
        "(SELECT b.file FROM blocks b WHERE b.id = edges.block_id) "
        "WHERE EXISTS (SELECT 1 FROM blocks b WHERE b.id = edges.block_id)"
    )
    conn.execute("UPDATE blocks SET id = id || '@' || file")


def m009_search_index(conn: sqlite3.Connection) -> None:
    # Search (issue #37): the index tables, filled from the live blocks and their claims. The
    # headings and aliases each block is about come with the next parse of its note.
    from aclarai.graph.search_index import create_schema, reconcile

    create_schema(conn)
    reconcile(conn, live_search_docs(conn), live_claim_texts(conn))


def live_search_docs(conn: sqlite3.Connection) -> list[SearchDoc]:
    """The live blocks of an embedded store as the search index holds them (``about`` left to
    the index: the store does not keep it)."""
    from aclarai.graph.search_index import SearchDoc

    rows = conn.execute(
        "SELECT id, file, hash, text FROM blocks WHERE deleted_at IS NULL ORDER BY file, position"
    )
    return [SearchDoc(key, file, hash_, None, text) for key, file, hash_, text in rows]


def live_claim_texts(
    conn: sqlite3.Connection, block_ids: str | None = None
) -> dict[str, list[str]]:
    """Claim texts of live blocks (of the JSON list ``block_ids`` if given), in claim order."""
    query = (
        "SELECT e.block_id, c.text FROM edges e JOIN claims c ON c.id = e.claim_id "
        "JOIN blocks b ON b.id = e.block_id WHERE b.deleted_at IS NULL"
    )
    params: tuple[str, ...] = ()
    if block_ids is not None:
        query += " AND e.block_id IN (SELECT value FROM json_each(?))"
        params = (block_ids,)
    texts: dict[str, list[str]] = {}
    for block_id, text in conn.execute(query + " ORDER BY e.block_id, e.ordinal", params):
        texts.setdefault(block_id, []).append(text)
    return texts


MIGRATIONS: tuple[Migration, ...] = (
    m001_files_and_blocks,
    m002_claims_and_edges,
    m003_edges_by_block,
    m004_edges_by_quality,
    m005_utc_stamps,
    m006_edges_by_score_state,
    m007_drop_blocks_hash,
    m008_note_scoped_block_keys,
    m009_search_index,
)


def applied_migrations(conn: sqlite3.Connection) -> list[str]:
    """Names of the migrations recorded in ``conn``, in the order they were applied."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
        "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    rows = conn.execute(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY rowid").fetchall()
    return [name for (name,) in rows]


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Apply the migrations ``conn`` lacks, each in its own transaction.

    Args:
        conn: A connection in autocommit mode (``isolation_level=None``), so that this function
            controls the transactions.
        migrations: The ordered migrations to bring the database to; tests pass a prefix to
            build the older states.

    Returns:
        The names of the migrations applied by this call.

    Raises:
        StoreError: The database records a migration this code does not know, i.e. it was
            written by a newer aclarai; opening it could corrupt it.
    """
    applied = applied_migrations(conn)
    known = {fn.__name__ for fn in MIGRATIONS}
    unknown = [name for name in applied if name not in known]
    if unknown:
        raise StoreError(
            f"the graph database has schema migrations this aclarai does not know ({unknown[0]}); "
            "it was written by a newer version: upgrade aclarai or rebuild it with resync"
        )
    done = set(applied)
    ran: list[str] = []
    for fn in migrations:
        if fn.__name__ in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            fn(conn)
            conn.execute(
                f"INSERT INTO {MIGRATIONS_TABLE} (name, applied_at) VALUES (?, ?)",
                (fn.__name__, utc_now()),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        ran.append(fn.__name__)
    return ran
