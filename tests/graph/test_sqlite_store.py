"""What only the embedded store promises: a durable file, WAL, threads, and its error mapping."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from aclarai.graph import SqliteStore, StoreCounts
from aclarai.graph.sqlite import translate_error
from aclarai.parsers import StoreError, StoreUnavailable, TransientError
from tests.graph.builders import claim, note, score


def test_creates_parent_folders_and_reopens_with_every_row(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state" / "graph.sqlite"
    with SqliteStore(path) as store:
        store.sync_files([note("a.md", "alpha.", "beta.")])
        store.replace_claims({"a-0": [claim("c", "a-0")]})
        current = store.get_blocks(["a-0"])["a-0"].hash
        store.write_scores([score("c", "a-0", current, 0.5, None, 0.5, "coverage: error")])
        store.mark_deleted(["a-1"])
        states, blocks = store.file_states(), store.get_blocks(["a-0", "a-1"])
        claims = store.claims_of_blocks(["a-0"])

    with SqliteStore(path) as reopened:
        assert reopened.file_states() == states
        assert reopened.get_blocks(["a-0", "a-1"]) == blocks
        assert reopened.claims_of_blocks(["a-0"]) == claims
        assert reopened.counts() == StoreCounts(1, 1, 1, 1, 0, 1)


def test_database_is_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "graph.sqlite"
    SqliteStore(path).close()
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        raw.close()


def test_quality_column_holds_the_geometric_mean(tmp_path: Path) -> None:
    path = tmp_path / "graph.sqlite"
    with SqliteStore(path) as store:
        store.sync_files([note("a.md", "alpha.", "beta.")])
        store.replace_claims({"a-0": [claim("ok", "a-0")], "a-1": [claim("failed", "a-1")]})
        hashes = {i: b.hash for i, b in store.get_blocks(["a-0", "a-1"]).items()}
        store.write_scores(
            [
                score("ok", "a-0", hashes["a-0"], 0.8, 0.4, 0.2),
                score("failed", "a-1", hashes["a-1"], 0.8, None, 0.2, "coverage: timeout"),
            ]
        )
    raw = sqlite3.connect(path)
    try:
        rows = dict(raw.execute("SELECT claim_id, quality FROM edges").fetchall())
    finally:
        raw.close()
    assert rows["ok"] == pytest.approx(0.4)
    assert rows["failed"] is None


def test_a_second_store_on_the_same_file_sees_committed_writes(tmp_path: Path) -> None:
    path = tmp_path / "graph.sqlite"
    with SqliteStore(path) as writer, SqliteStore(path) as reader:
        writer.sync_files([note("a.md", "alpha.")])
        assert [b.id for b in reader.blocks_of_file("a.md")] == ["a-0"]


def test_threads_share_one_store(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "graph.sqlite")
    errors: list[BaseException] = []
    threads_n, files_n, blocks_n = 4, 15, 6

    def work(worker: int) -> None:
        try:
            for f in range(files_n):
                sync = note(
                    f"w{worker}/n{f}.md", *(f"text {worker} {f} {i}." for i in range(blocks_n))
                )
                store.sync_files([sync])
                ids = [b.id for b in sync.blocks]
                store.replace_claims({i: [claim(f"c-{i}", i)] for i in ids})
                hashes = {i: b.hash for i, b in store.get_blocks(ids).items()}
                store.write_scores([score(f"c-{i}", i, hashes[i]) for i in ids])
                store.counts()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(threads_n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert errors == []
        total = threads_n * files_n * blocks_n
        assert store.counts() == StoreCounts(threads_n * files_n, total, 0, total, total, 0)
        assert store.claims_needing_evaluation() == []
    finally:
        store.close()


def test_locked_database_is_unavailable_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "graph.sqlite"
    store = SqliteStore(path, busy_timeout_ms=50)
    store.sync_files([note("a.md", "alpha.")])
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreUnavailable) as caught:
            store.sync_files([note("a.md", "alpha, edited.", "beta.")])
        assert isinstance(caught.value, TransientError)
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        assert "locked" in str(caught.value)
        other.execute("ROLLBACK")

        assert store.get_blocks(["a-0"])["a-0"].text == "alpha."
        [retried] = store.sync_files([note("a.md", "alpha, edited.", "beta.")])
        assert retried.changed == ("a-0", "a-1")
    finally:
        other.close()
        store.close()


def test_a_file_that_is_not_a_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "graph.sqlite"
    path.write_bytes(b"this is a note, not a database\n" * 100)

    with pytest.raises(StoreError) as caught:
        SqliteStore(path)

    assert not isinstance(caught.value, StoreUnavailable)
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)
    assert str(path) in str(caught.value)


def test_a_folder_that_cannot_be_created_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where the folder should be")

    with pytest.raises(StoreError, match="cannot create the folder"):
        SqliteStore(tmp_path / "blocker" / "graph.sqlite")


@pytest.mark.parametrize(
    ("code", "message", "unavailable"),
    [
        (sqlite3.SQLITE_BUSY, "database is locked", True),
        (sqlite3.SQLITE_LOCKED, "database table is locked", True),
        (sqlite3.SQLITE_IOERR_WRITE, "disk I/O error", True),
        (sqlite3.SQLITE_IOERR_FSYNC, "disk I/O error", True),
        (sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY, "FOREIGN KEY constraint failed", False),
        (sqlite3.SQLITE_CORRUPT, "database disk image is malformed", False),
    ],
)
def test_translate_error(code: int, message: str, unavailable: bool) -> None:
    exc = sqlite3.OperationalError(message)
    exc.sqlite_errorcode = code

    translated = translate_error(exc, "graph store x: sync_files failed")

    assert isinstance(translated, StoreError)
    assert isinstance(translated, StoreUnavailable) is unavailable
    assert str(translated) == f"graph store x: sync_files failed: {message}"


def test_claims_for_an_unknown_block_are_refused_whole(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "graph.sqlite") as store:
        store.sync_files([note("a.md", "alpha.")])

        with pytest.raises(StoreError, match="no such block in the store: ghost"):
            store.replace_claims({"a-0": [claim("c", "a-0")], "ghost": [claim("g", "ghost")]})

        assert store.claims_of_blocks(["a-0"]) == {"a-0": []}
        assert store.counts().claims == 0


def test_a_closed_store_refuses_work(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "graph.sqlite")
    store.close()
    store.close()

    with pytest.raises(StoreError, match="is closed"):
        store.counts()
