from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from aclarai.daemon.vault.queue import Backoff, Dirty, DurableQueue


def make_queue(tmp_path: Path, **backoff: float) -> DurableQueue:
    return DurableQueue(tmp_path / "queue.sqlite", backoff=Backoff(**backoff))  # type: ignore[arg-type]


def test_repeated_edits_coalesce_into_one_entry(tmp_path: Path) -> None:
    q = make_queue(tmp_path)
    q.enqueue([Dirty("blk-1", "a.md", "h1")])
    q.enqueue([Dirty("blk-1", "a.md", "h2")])
    q.enqueue([Dirty("blk-1", "b.md", "h3")])
    [entry] = q.entries()
    assert (entry.file, entry.hash, entry.generation) == ("b.md", "h3", 3)
    assert q.depth() == 1


def test_complete_keeps_an_entry_edited_while_in_flight(tmp_path: Path) -> None:
    q = make_queue(tmp_path)
    q.enqueue([Dirty("blk-1", "a.md", "h1"), Dirty("blk-2", "a.md", "h1")])
    taken = q.take(10)
    assert {e.block_id for e in taken} == {"blk-1", "blk-2"}
    assert q.take(10) == []
    q.enqueue([Dirty("blk-1", "a.md", "h2")])
    q.complete(taken)
    [left] = q.take(10)
    assert (left.block_id, left.hash) == ("blk-1", "h2")


def test_failures_back_off_then_become_dead_letters(tmp_path: Path) -> None:
    q = make_queue(tmp_path, base_s=10.0, max_s=60.0, max_attempts=3)
    q.enqueue([Dirty("poison", "a.md", "h"), Dirty("fine", "b.md", "h")])
    entries = {e.block_id: e for e in q.take(10)}
    assert q.fail([entries["poison"]], "boom") == []
    q.complete([entries["fine"]])
    assert q.take(10) == []  # backing off
    [again] = q.take(10, now=time.time() + 20)
    assert again.attempts == 1
    q.fail([again], "boom 2")
    [third] = q.take(10, now=time.time() + 100)
    dead = q.fail([third], "boom 3")
    assert [d.block_id for d in dead] == ["poison"]
    assert q.depth() == 0
    [letter] = q.dead_letters()
    assert (letter.attempts, letter.last_error) == (3, "boom 3")
    q.enqueue([Dirty("poison", "a.md", "h-new")])
    [revived] = q.take(10)
    assert (revived.attempts, revived.hash) == (0, "h-new")


def test_backoff_grows_and_is_capped() -> None:
    b = Backoff(base_s=1.0, max_s=8.0, max_attempts=10)
    assert 0.5 <= b.delay_s(1) <= 1.0
    assert 2.0 <= b.delay_s(3) <= 4.0
    assert 4.0 <= b.delay_s(9) <= 8.0


def test_entries_survive_reopen_and_inflight_is_recovered(tmp_path: Path) -> None:
    q = make_queue(tmp_path)
    q.enqueue([Dirty("blk-1@a.md", "a.md", "h1")])
    q.take(10)
    q.close()
    q2 = make_queue(tmp_path)
    assert q2.take(10) == []
    assert q2.recover_inflight() == 1
    [entry] = q2.take(10)
    assert entry.block_id == "blk-1@a.md"


def test_meta_round_trip(tmp_path: Path) -> None:
    q = make_queue(tmp_path)
    assert q.get_meta("last_resync") is None
    q.set_meta("last_resync", "2024-01-01T00:00:00Z")
    q.set_meta("last_resync", "2024-01-02T00:00:00Z")
    assert q.get_meta("last_resync") == "2024-01-02T00:00:00Z"


def test_an_edit_made_while_in_flight_is_not_charged_for_the_failure(tmp_path: Path) -> None:
    q = make_queue(tmp_path, base_s=10.0, max_s=60.0, max_attempts=1)
    q.enqueue([Dirty("blk-1", "a.md", "h1")])
    [taken] = q.take(10)
    q.enqueue([Dirty("blk-1", "a.md", "h2")])
    assert q.fail([taken], "boom") == []
    assert q.dead_letters() == []
    [again] = q.take(10)
    assert (again.hash, again.attempts) == ("h2", 0)


def test_take_returns_every_ready_entry_of_the_notes_it_reaches(tmp_path: Path) -> None:
    q = make_queue(tmp_path)
    q.enqueue([Dirty("s-1", "short.md", "h")])
    q.enqueue([Dirty(f"l-{i}", "long.md", "h") for i in range(500)])
    q.enqueue([Dirty("t-1", "third.md", "h")])
    first = q.take(2)
    # One entry of long.md is among the two oldest: all 500 come, note by note, oldest first.
    assert [e.file for e in first] == ["short.md"] + ["long.md"] * 500
    assert [e.block_id for e in first[1:4]] == ["l-0", "l-1", "l-2"]
    assert [e.file for e in q.take(2)] == ["third.md"]


def test_an_entry_queued_before_ids_were_note_scoped_is_keyed_by_its_note_on_open(
    tmp_path: Path,
) -> None:
    q = make_queue(tmp_path)
    q.close()
    old = sqlite3.connect(tmp_path / "queue.sqlite")
    with old:
        old.execute(
            "INSERT INTO outbox (block_id, file, hash, reason, next_attempt_at, enqueued_at,"
            " updated_at) VALUES ('summary', 'Daily/a.md', 'h1', 'changed', 0, 0, 0)"
        )
    old.close()

    q2 = make_queue(tmp_path)
    [entry] = q2.take(10)
    assert (entry.block_id, entry.file, entry.hash) == ("summary@Daily/a.md", "Daily/a.md", "h1")


def test_an_entry_follows_its_block_to_the_note_it_moved_to(tmp_path: Path) -> None:
    q = make_queue(tmp_path)
    q.enqueue([Dirty("x@a.md", "a.md", "h1"), Dirty("y@a.md", "a.md", "h2")])
    q.enqueue([Dirty("y@b.md", "b.md", "h3")])
    taken = q.take(1)
    assert [e.block_id for e in taken] == ["x@a.md", "y@a.md"]

    q.follow([("x@a.md", "x@b.md", "b.md"), ("y@a.md", "y@b.md", "b.md")])

    assert [(e.block_id, e.file, e.hash, e.state) for e in q.entries()] == [
        ("x@b.md", "b.md", "h1", "pending"),
        ("y@b.md", "b.md", "h3", "pending"),
    ]
    q.complete(taken)
    assert q.depth() == 2, "finishing the entries under their old keys leaves the moved ones"
