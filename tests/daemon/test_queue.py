from __future__ import annotations

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
    q.enqueue([Dirty("blk-1", "a.md", "h1")])
    q.take(10)
    q.close()
    q2 = make_queue(tmp_path)
    assert q2.take(10) == []
    assert q2.recover_inflight() == 1
    [entry] = q2.take(10)
    assert entry.block_id == "blk-1"


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
