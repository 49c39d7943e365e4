"""The embedded schema builds from a blank file and from every older state, and only forward."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from aclarai.graph import BlockRecord, FileState, FileSync, SqliteStore, migrations
from aclarai.graph.migrations import MIGRATIONS, MIGRATIONS_TABLE, applied_migrations, migrate
from aclarai.parsers import StoreError
from tests.graph.builders import claim, note, score

ALL_NAMES = [fn.__name__ for fn in MIGRATIONS]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(tmp_path / "graph.sqlite", isolation_level=None)
    try:
        yield connection
    finally:
        connection.close()


def _tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {name for (name,) in rows}


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def _indexes(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA index_list({table})")}


def test_names_are_numbered_in_order() -> None:
    assert sorted(ALL_NAMES) == ALL_NAMES
    assert [name[:4] for name in ALL_NAMES] == [f"m{i:03d}" for i in range(1, len(ALL_NAMES) + 1)]


def test_blank_database_gets_the_whole_schema(conn: sqlite3.Connection) -> None:
    assert migrate(conn) == ALL_NAMES

    assert applied_migrations(conn) == ALL_NAMES
    assert {"files", "blocks", "claims", "edges", MIGRATIONS_TABLE} <= _tables(conn)
    assert _columns(conn, "files") == ["path", "mtime_ns", "size", "sha256"]
    assert {"id", "file", "text", "hash", "version", "position", "updated_at", "deleted_at"} == set(
        _columns(conn, "blocks")
    )
    assert {
        "claim_id",
        "block_id",
        "entailed_score",
        "coverage_score",
        "decontextualization_score",
        "quality",
        "verdict",
        "justification",
        "status",
        "model",
        "evaluated_hash",
        "evaluated_at",
        "omitted",
    } <= set(_columns(conn, "edges"))
    assert {"edges_block", "edges_quality"} <= _indexes(conn, "edges")
    assert "blocks_hash" not in _indexes(conn, "blocks"), "no query reads it; every sync wrote it"
    assert "blocks_file" in _indexes(conn, "blocks")
    assert migrate(conn) == [], "a second run applies nothing"


@pytest.mark.parametrize("done", range(len(MIGRATIONS)))
def test_every_older_state_upgrades_on_open_and_keeps_its_rows(tmp_path: Path, done: int) -> None:
    path = tmp_path / "graph.sqlite"
    old = sqlite3.connect(path, isolation_level=None)
    try:
        migrate(old, MIGRATIONS[:done])
        assert applied_migrations(old) == ALL_NAMES[:done]
        if "blocks" in _tables(old):
            # Keys are note-scoped from m008 on.
            key = "old-0@old.md" if done >= 8 else "old-0"
            old.execute(
                f"INSERT INTO blocks VALUES ('{key}', 'old.md', 'kept.', 'h', 3, 0, 't', NULL)"
            )
    finally:
        old.close()

    with SqliteStore(path) as store:
        store.sync_files([note("a.md", "alpha.")])
        store.replace_claims({"a-0": [claim("c", "a-0")]})
        # Every older state ends with note-scoped keys: the old block is keyed by id and note.
        blocks = store.get_blocks(["old-0@old.md", "a-0"])
        assert [c.id for c in store.claims_of_blocks(["a-0"])["a-0"]] == ["c"]
        # m009 indexed the blocks the store held; the new ones are indexed as they are written.
        found = store.search.match_words('"kept"', 5, weights=(1.0, 1.0, 1.0, 1.0))
        assert [m.block_id for m in found] == (["old-0@old.md"] if done >= 1 else [])
        assert store.search.blocks(["a-0"])["a-0"].claims == (claim("c", "a-0").text,)

    assert ("old-0@old.md" in blocks) is (done >= 1)
    if done >= 1:
        assert (blocks["old-0@old.md"].text, blocks["old-0@old.md"].version) == ("kept.", 3)
    check = sqlite3.connect(path)
    try:
        assert applied_migrations(check) == ALL_NAMES
    finally:
        check.close()


def test_a_graph_of_vault_wide_ids_opens_with_note_scoped_keys_keeping_claims_and_scores(
    tmp_path: Path,
) -> None:
    path = tmp_path / "graph.sqlite"
    old = sqlite3.connect(path, isolation_level=None)
    try:
        migrate(old, MIGRATIONS[: ALL_NAMES.index("m008_note_scoped_block_keys")])
        old.execute("PRAGMA foreign_keys = ON")
        old.execute("INSERT INTO files VALUES ('Daily/a.md', 1, 10, 'f'), ('b.md', 1, 10, 'f')")
        old.executemany(
            "INSERT INTO blocks VALUES (?, ?, ?, ?, 2, ?, '2024-06-03T09:00:00Z', ?)",
            [
                ("summary", "Daily/a.md", "alpha.", "ha", 0, None),
                ("blk-1", "Daily/a.md", "beta.", "hb", 1, None),
                ("blk-2", "b.md", "gamma.", "hc", 0, "2024-06-04T09:00:00Z"),
            ],
        )
        old.execute("INSERT INTO claims VALUES ('c1', 'Alpha.'), ('c2', 'Beta.'), ('c3', 'G.')")
        old.executemany(
            "INSERT INTO edges (claim_id, block_id, ordinal, entailed_score, coverage_score,"
            " decontextualization_score, quality, status, model, evaluated_hash, evaluated_at)"
            " VALUES (?, ?, 0, 0.9, 0.8, 0.1, 0.42, 'ok', 'm', ?, '2024-06-03T09:00:00Z')",
            [("c1", "summary", "ha"), ("c2", "blk-1", "hb"), ("c3", "blk-2", "hc")],
        )
    finally:
        old.close()

    keys = ["summary@Daily/a.md", "blk-1@Daily/a.md", "blk-2@b.md"]
    with SqliteStore(path) as store:
        blocks = store.get_blocks(keys)
        claims = store.claims_of_blocks(keys)
        low = store.low_quality_claims(0.7, None)
        [result] = store.sync_files(
            [
                FileSync(
                    FileState("Daily/a.md", 1, 10, "f"),
                    [
                        BlockRecord(keys[0], "Daily/a.md", "alpha.", "ha", 2, 0),
                        BlockRecord(keys[1], "Daily/a.md", "beta.", "hb", 2, 1),
                    ],
                )
            ]
        )
        counts = store.counts()

    assert [(b.block_id, b.file, b.text, b.deleted_at) for b in map(blocks.get, keys) if b] == [
        ("summary", "Daily/a.md", "alpha.", None),
        ("blk-1", "Daily/a.md", "beta.", None),
        ("blk-2", "b.md", "gamma.", "2024-06-04T09:00:00Z"),
    ]
    for key, claim_id in zip(keys, ["c1", "c2", "c3"], strict=True):
        [c] = claims[key]
        assert (c.id, c.block_id) == (claim_id, key)
        assert c.score is not None and (c.score.block_id, c.score.entailed_score) == (key, 0.9)
    assert [(c.id, c.block_id) for c in low] == [("c1", keys[0]), ("c2", keys[1])]
    assert (result.changed, result.unchanged) == ((), tuple(keys[:2])), "nothing to grade again"
    # c3 stays with its deleted block, for a restore, and counts nowhere.
    assert (counts.blocks, counts.deleted_blocks, counts.claims) == (2, 1, 2)
    assert counts.scored_claims == 2


def test_a_database_from_a_newer_aclarai_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "graph.sqlite"
    newer = sqlite3.connect(path, isolation_level=None)
    try:
        migrate(newer)
        newer.execute(
            f"INSERT INTO {MIGRATIONS_TABLE} VALUES ('m999_from_the_future', '2030-01-01')"
        )
    finally:
        newer.close()

    with pytest.raises(StoreError, match="m999_from_the_future"):
        SqliteStore(path)

    check = sqlite3.connect(path)
    try:
        assert applied_migrations(check) == [*ALL_NAMES, "m999_from_the_future"]
    finally:
        check.close()


def test_a_failing_migration_leaves_the_previous_state(conn: sqlite3.Connection) -> None:
    def m999_breaks_halfway(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("crash in the middle")

    with pytest.raises(RuntimeError, match="crash in the middle"):
        migrate(conn, [*MIGRATIONS, m999_breaks_halfway])

    assert "half_done" not in _tables(conn)
    assert applied_migrations(conn) == ALL_NAMES
    assert not conn.in_transaction


def test_listing_low_quality_claims_reads_the_quality_index(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "graph.sqlite") as store:
        store.sync_files([note("a.md", "alpha.")])
        store.replace_claims({"a-0": [claim("c", "a-0")]})
        store.write_scores([score("c", "a-0", store.get_blocks(["a-0"])["a-0"].hash, 0.1)])
        assert [c.id for c in store.low_quality_claims(0.7, 10)] == ["c"]

    conn = sqlite3.connect(tmp_path / "graph.sqlite")
    try:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT claim_id FROM edges WHERE quality < ? "
            "ORDER BY quality LIMIT 10",
            (0.7,),
        ).fetchall()
    finally:
        conn.close()
    assert any("edges_quality" in row[3] for row in plan)


def test_stamps_of_an_older_database_are_rewritten_to_utc_seconds_with_z(tmp_path: Path) -> None:
    path = tmp_path / "graph.sqlite"
    old = sqlite3.connect(path, isolation_level=None)
    try:
        migrate(old, MIGRATIONS[: ALL_NAMES.index("m005_utc_stamps")])
        old.execute(f"UPDATE {MIGRATIONS_TABLE} SET applied_at = '2024-06-01T08:00:00.5+00:00'")
        old.executemany(
            "INSERT INTO blocks VALUES (?, 'a.md', 'text.', 'h', 1, ?, ?, ?)",
            [
                ("live", 0, "2024-06-03T09:00:00.123456+00:00", None),
                ("gone", 1, "2024-06-03T09:00:01.999999+00:00", "2024-06-04T10:30:00+00:00"),
                ("odd", 2, "not a stamp", None),
            ],
        )
        old.execute("INSERT INTO claims VALUES ('c1', 'claim'), ('c2', 'claim')")
        old.executemany(
            "INSERT INTO edges (claim_id, block_id, ordinal, evaluated_hash, evaluated_at) "
            "VALUES (?, 'live', ?, 'h', ?)",
            [("c1", 0, "2024-06-05T23:59:59.999999+00:00"), ("c2", 1, "2024-06-05T12:00:00Z")],
        )
    finally:
        old.close()

    with SqliteStore(path) as store:
        keyed = store.get_blocks(["live@a.md", "gone@a.md", "odd@a.md"])
        claims = store.claims_of_blocks(["live@a.md"])["live@a.md"]
    blocks = {b.block_id: b for b in keyed.values()}

    assert (blocks["live"].updated_at, blocks["live"].deleted_at) == ("2024-06-03T09:00:00Z", None)
    assert (blocks["gone"].updated_at, blocks["gone"].deleted_at) == (
        "2024-06-03T09:00:01Z",
        "2024-06-04T10:30:00Z",
    )
    assert blocks["odd"].updated_at == "not a stamp"
    assert [c.score.evaluated_at for c in claims if c.score is not None] == [
        "2024-06-05T23:59:59Z",
        "2024-06-05T12:00:00Z",
    ]
    check = sqlite3.connect(path)
    try:
        stamps = [at for (at,) in check.execute(f"SELECT applied_at FROM {MIGRATIONS_TABLE}")]
    finally:
        check.close()
    before = ALL_NAMES.index("m005_utc_stamps")
    assert stamps[:before] == ["2024-06-01T08:00:00Z"] * before
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", at) for at in stamps[before:])


@pytest.mark.parametrize(
    ("where", "index"), [("ALL_SCORED", "edges_scored"), ("NULL_SCORED", "edges_null_score")]
)
def test_counting_scored_and_failed_claims_reads_a_partial_index(
    conn: sqlite3.Connection, where: str, index: str
) -> None:
    """An unchanged resync's summary counts these on every run: the planner must use the
    index, not sort every claim id (which it does the moment the WHERE clause drifts)."""
    migrate(conn)
    clause = getattr(migrations, where)
    plan = conn.execute(
        f"EXPLAIN QUERY PLAN SELECT count(DISTINCT claim_id) FROM edges WHERE {clause}"
    ).fetchall()
    assert any(f"USING INDEX {index}" in row[-1] for row in plan), plan
    assert not any("TEMP B-TREE" in row[-1] for row in plan), plan
