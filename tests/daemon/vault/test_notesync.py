"""The one note-sync path, counted: what one edit on the watch path costs, end to end, in reads
of the note, parses and store syncs, through the real daemon loop with a real watchdog observer,
a real SQLite store and the real files."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import aclarai.daemon.loop.daemon
import aclarai.daemon.vault.queue
from aclarai.daemon.config import load_config
from aclarai.daemon.factory import build_queue, build_store, build_vault
from aclarai.daemon.loop.daemon import run_daemon
from aclarai.daemon.vault.notesync import NoteSync
from aclarai.graph import FileSync, GraphStore
from aclarai.parsers import blocks, parse_note
from tests.helpers.cli import QUIET_S, daemon_env, wait_until
from tests.helpers.vault import note_text

ALICE = "alice: The deploy to staging failed twice on Tuesday."
BOB = "bob: I rolled back to v2.3 and it is stable now."
CAROL = "erin: The database migration took 40 minutes on Friday."
EDITED = "erin: The database migration took 55 minutes on Friday."


@dataclass
class Counts:
    """What the daemon's threads did to one note while ``on`` is set (the test's own looks
    at the note, from its own thread, are not counted)."""

    path: str
    test_thread: int = field(default_factory=threading.get_ident)
    on: bool = False

    def counting(self) -> bool:
        return self.on and threading.get_ident() != self.test_thread

    reads: int = 0
    parses: int = 0
    syncs: int = 0
    whole_vault_states: int = 0
    synced_paths: list[list[str]] = field(default_factory=list)


_watched: list[Counts] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Every open of the note for reading in this process, whatever opens it.
    if event != "open" or not _watched:
        return
    counts = _watched[-1]
    path, mode, flags = args
    if (
        not counts.counting()
        or not isinstance(path, str | os.PathLike)
        or os.fspath(path) != counts.path
    ):
        return
    reading = ("r" in mode) if isinstance(mode, str) else (flags & os.O_ACCMODE) == os.O_RDONLY
    if reading:
        counts.reads += 1


sys.addaudithook(_audit)


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Counts]:
    note = tmp_path / "vault" / "a.md"
    found = Counts(str(note))
    original = blocks.scan_note

    def counted_scan(text: str) -> blocks.NoteLayout:
        if found.counting():
            found.parses += 1
        return original(text)

    # ``parse_note`` goes through ``scan_note`` too, so every parse in any module is counted.
    for name, module in list(sys.modules.items()):
        if name.startswith("aclarai.") and getattr(module, "scan_note", None) is original:
            monkeypatch.setattr(module, "scan_note", counted_scan)
    real_build_store = aclarai.daemon.loop.daemon.build_store

    def counted_store(*args: Any, **kwargs: Any) -> GraphStore:
        store = real_build_store(*args, **kwargs)
        sync_files, file_states = store.sync_files, store.file_states

        def sync(files: Sequence[FileSync]) -> Any:
            paths = [f.state.path for f in files]
            if found.counting() and "a.md" in paths:
                found.syncs += 1
                found.synced_paths.append(paths)
            return sync_files(files)

        def states(paths: Any = None) -> Any:
            if found.counting() and paths is None:
                found.whole_vault_states += 1
            return file_states(paths)

        store.sync_files = sync  # type: ignore[method-assign]
        store.file_states = states  # type: ignore[method-assign]
        return store

    monkeypatch.setattr(aclarai.daemon.loop.daemon, "build_store", counted_store)
    _watched.append(found)
    yield found
    _watched.remove(found)


def versions(path: Path) -> dict[str, int]:
    return {b.id: b.version for b in parse_note(path.read_text(encoding="utf-8")).blocks}


def test_one_edit_on_the_watch_path_reads_the_note_three_times_parses_twice_syncs_once(
    tmp_path: Path, counts: Counts
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    note = vault / "a.md"
    note.write_text(
        note_text([("blk-a1", ALICE), ("blk-a2", BOB), ("blk-a3", CAROL)]), encoding="utf-8"
    )
    for n in range(20):
        other = note_text([(f"blk-o{n}", f"dave: Note {n} says the build took {n} minutes.")])
        (vault / f"other-{n}.md").write_text(other, encoding="utf-8")
    config = load_config(env=daemon_env())
    stop = threading.Event()
    runner = threading.Thread(target=lambda: run_daemon(config, vault, stop_event=stop))
    runner.start()
    try:
        wait_until(lambda: versions(note)["blk-a3"] == 2, timeout_s=30)
        time.sleep(QUIET_S * 4)  # our own write-back settles in the watcher first
        counts.on = True
        note.write_text(note.read_text(encoding="utf-8").replace(CAROL, EDITED), encoding="utf-8")
        wait_until(lambda: versions(note)["blk-a3"] == 3, timeout_s=QUIET_S + 20)
        # The write-back's own events settle too, and must cost nothing.
        time.sleep(QUIET_S * 4)
        counts.on = False
    finally:
        stop.set()
        runner.join(timeout=15)
    assert "55 minutes" in note.read_text(encoding="utf-8")
    assert counts.reads <= 3, counts
    assert counts.parses <= 2, counts
    assert counts.syncs == 1, counts
    assert counts.synced_paths == [["a.md"]]
    assert counts.whole_vault_states == 0, counts


def test_the_consumer_takes_the_note_the_sync_just_made_without_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text(note_text([("blk-a1", ALICE)]), encoding="utf-8")
    config = load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state")})
    state = config.state_dir_for(vault)
    store, queue = build_store(config, state), build_queue(config, state)
    try:
        notes = NoteSync(build_vault(config, vault), store, queue)
        report = notes.sync_vault()
        assert report.dirty_blocks == 1
        reads: list[str] = []
        real_read = notes.vault.read
        monkeypatch.setattr(notes.vault, "read", lambda n: reads.append(n.rel) or real_read(n))
        synced = notes.current("a.md")
        assert synced is not None and [r.id for r in synced.records] == ["blk-a1@a.md"]
        assert reads == []
        # Once the file changes, ``current`` reads it again and syncs what changed.
        (vault / "a.md").write_text(note_text([("blk-a1", BOB)]), encoding="utf-8")
        again = notes.current("a.md")
        assert reads == ["a.md"]
        assert again is not None and again.changed == ("blk-a1@a.md",)
        assert [e.block_id for e in queue.entries()] == ["blk-a1@a.md"]
        assert store.get_blocks(["blk-a1@a.md"])["blk-a1@a.md"].text == BOB
    finally:
        store.close()
        queue.close()


@pytest.fixture
def synced_vault(tmp_path: Path) -> Iterator[tuple[Path, NoteSync]]:
    """Notes a.md (blocks X and Y) and b.md (block Z), synced; no grading."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text(note_text([("blk-x", ALICE), ("blk-y", BOB)]), encoding="utf-8")
    (vault / "b.md").write_text(note_text([("blk-z", ALICE)], title="B"), encoding="utf-8")
    config = load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state")})
    state = config.state_dir_for(vault)
    store, queue = build_store(config, state), build_queue(config, state)
    try:
        notes = NoteSync(build_vault(config, vault), store, queue)
        notes.sync_vault()
        yield vault, notes
    finally:
        store.close()
        queue.close()


def _sync(notes: NoteSync, *rels: str) -> None:
    notes.sync_notes([n for rel in rels if (n := notes.vault.note(rel)) is not None])


def _live(notes: NoteSync, key: str) -> bool:
    block = notes.store.get_blocks([key]).get(key)
    return block is not None and block.deleted_at is None


def test_each_block_that_leaves_its_note_has_its_own_grace(
    synced_vault: tuple[Path, NoteSync],
) -> None:
    """Issue 36 review: a block cut from a note whose earlier deletion was due did not get its
    grace; now the note waits for its own sync, and each block counts from when it left."""
    vault, notes = synced_vault
    a = vault / "a.md"
    a.write_text(note_text([("blk-y", BOB)]), encoding="utf-8")
    _sync(notes, "a.md")
    left_at = time.time()
    # Y is cut just before X's grace ends, and not synced yet: the note is left to that sync.
    a.write_text(note_text([]), encoding="utf-8")
    assert notes.settle(grace_s=60, now=left_at + 61) == {}
    assert _live(notes, "blk-x@a.md") and notes.unsettled
    # Pasted into b.md and both synced: Y moved, X is due, Y's grace has not begun.
    (vault / "b.md").write_text(
        note_text([("blk-z", ALICE), ("blk-y", BOB)], title="B"), encoding="utf-8"
    )
    _sync(notes, "a.md", "b.md")
    assert notes.settle(grace_s=60, now=left_at + 61) == {"blk-x@a.md": "a.md"}
    assert _live(notes, "blk-y@b.md") and not _live(notes, "blk-y@a.md")
    assert not notes.unsettled


def test_a_note_edited_more_often_than_the_grace_still_settles(
    synced_vault: tuple[Path, NoteSync], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36 review: a sync of the note restarted the grace of the blocks it had lost, so
    a note saved every few seconds (a log a script appends to) never settled."""
    vault, notes = synced_vault
    clock = [time.time()]
    monkeypatch.setattr(aclarai.daemon.vault.queue.time, "time", lambda: clock[0])
    a = vault / "a.md"
    a.write_text(note_text([("blk-y", BOB)]), encoding="utf-8")
    _sync(notes, "a.md")
    left_at = clock[0]
    for n in range(3):
        clock[0] += 25
        a.write_text(note_text([("blk-y", f"{BOB} Edit {n}.")]), encoding="utf-8")
        _sync(notes, "a.md")
    assert notes.settle(grace_s=60, now=left_at + 59) == {}
    assert notes.settle(grace_s=60, now=left_at + 61) == {"blk-x@a.md": "a.md"}
