"""The watcher: debounce rules on an injected clock, then a real watchdog observer on real files."""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aclarai.daemon.config import WatchSettings
from aclarai.daemon.loop.watcher import (
    Changes,
    Debouncer,
    OwnWrites,
    VaultWatcher,
    file_signature,
    watch_vault,
)
from aclarai.daemon.vault.notes import Vault
from aclarai.daemon.vault.writer import TEMP_PREFIX
from tests.helpers.vault import start_watcher

QUIET_S = 0.25


class Looks:
    """A note's file signature as a dict, counting looks (the debouncer's injected look)."""

    def __init__(self) -> None:
        self.content: dict[str, str | None] = {}
        self.count = 0

    def __call__(self, rel: str) -> str | None:
        self.count += 1
        return self.content.get(rel)


def test_a_note_is_released_once_after_the_quiet_period_and_two_equal_looks() -> None:
    reads = Looks()
    reads.content["a.md"] = "v1"
    debouncer = Debouncer(WatchSettings(quiet_period_s=3.0), reads)
    for t in (0.0, 1.0, 2.0):  # saves while typing: each restarts the quiet period
        debouncer.touch("a.md", t)
        assert debouncer.step(t + 0.5) == []
    assert debouncer.step(4.9) == []
    assert debouncer.step(5.0) == [("a.md", "v1")]
    assert debouncer.step(9.0) == []
    assert len(debouncer) == 0


def test_bytes_that_change_without_an_event_hold_the_note_back() -> None:
    reads = Looks()
    reads.content["a.md"] = "partial"
    debouncer = Debouncer(WatchSettings(quiet_period_s=1.0), reads)
    debouncer.touch("a.md", 0.0)
    assert debouncer.step(0.2) == []  # first read: "partial"
    reads.content["a.md"] = "complete"
    assert debouncer.step(1.0) == []  # second read differs: not settled
    assert debouncer.step(1.05) == []  # too soon for a third read
    assert debouncer.step(1.2) == [("a.md", "complete")]


def test_a_vanished_note_settles_as_none() -> None:
    reads = Looks()
    debouncer = Debouncer(WatchSettings(quiet_period_s=0.5), reads)
    debouncer.touch("gone.md", 0.0)
    debouncer.step(0.2)
    assert debouncer.step(0.6) == [("gone.md", None)]


def test_each_file_has_its_own_quiet_period() -> None:
    reads = Looks()
    reads.content.update({"a.md": "a", "b.md": "b"})
    debouncer = Debouncer(WatchSettings(quiet_period_s=1.0), reads)
    debouncer.touch("a.md", 0.0)
    debouncer.touch("b.md", 0.0)
    for t in (0.1, 0.5, 0.9):
        debouncer.touch("b.md", t)
        debouncer.step(t)
    assert debouncer.step(1.0) == [("a.md", "a")]
    assert debouncer.step(1.5) == []
    assert debouncer.step(2.0) == [("b.md", "b")]


def test_a_note_that_never_goes_quiet_is_reported_not_forced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reads = Looks()
    reads.content["log.md"] = "x"
    debouncer = Debouncer(WatchSettings(quiet_period_s=1.0, max_wait_s=5.0), reads)
    caplog.set_level(logging.WARNING, "aclarai.daemon.loop.watcher")
    t = 0.0
    while t < 8.0:
        debouncer.touch("log.md", t)
        debouncer.step(t + 0.1)
        assert debouncer.step(t + 0.5) == []
        t += 0.6
    warnings = [r for r in caplog.records if "kept changing" in r.getMessage()]
    assert len(warnings) == 1


def test_own_writes_are_recognised_by_path_and_file_signature(tmp_path: Path) -> None:
    note = tmp_path / "a.md"
    note.write_text("ours")
    first = note.stat()
    own = OwnWrites()
    own.remember("a.md", first)
    assert own.is_own("a.md", file_signature(first))
    # The same file moved elsewhere is a move to sync.
    assert not own.is_own("b.md", file_signature(first))
    note.write_text("ours, then the user's")
    assert not own.is_own("a.md", file_signature(note.stat()))
    own.remember("a.md", note.stat())
    assert not own.is_own("a.md", file_signature(first))
    assert not own.is_own("a.md", None)


# --- a real observer on a real vault -------------------------------------------------------


@pytest.fixture
def watcher(tmp_path: Path) -> Iterator[VaultWatcher]:
    w = start_watcher(tmp_path, polling=False)
    yield w
    w.stop()


def test_the_polling_observer_sees_edits_moves_and_deletes(tmp_path: Path) -> None:
    w = start_watcher(tmp_path, polling=True)
    try:
        root = w.vault.root
        time.sleep(0.2)  # the first snapshot
        (root / "a.md").write_text("a")
        (root / "b.md").write_text("b")
        assert sorted(collect(w).touched) == ["a.md", "b.md"]
        (root / "a.md").write_text("a2")
        os.rename(root / "b.md", root / "c.md")
        changes = collect(w)
        assert sorted(changes.touched) == ["a.md", "c.md"]
        assert changes.gone == ("b.md",)
    finally:
        w.stop()


def collect(w: VaultWatcher, *, idle_s: float = 0.6, limit_s: float = 8.0) -> Changes:
    """Every change until nothing settled for ``idle_s`` (and nothing is pending)."""
    touched: list[str] = []
    gone: list[str] = []
    started = last = time.monotonic()
    while time.monotonic() - started < limit_s:
        changes = w.next_changes(0.05)
        if changes.touched or changes.gone or len(w.debouncer):
            last = time.monotonic()
        touched += changes.touched
        gone += changes.gone
        if time.monotonic() - last > idle_s:
            break
    return Changes(tuple(touched), tuple(gone))


def test_a_new_note_is_touched_once(watcher: VaultWatcher) -> None:
    note = watcher.vault.root / "a.md"
    note.write_text("one")
    note.write_text("one two")
    assert collect(watcher) == Changes(("a.md",), ())


def test_saves_while_typing_are_one_change_after_the_quiet_period(
    watcher: VaultWatcher,
) -> None:
    note = watcher.vault.root / "typing.md"
    started = time.monotonic()
    text = ""
    for word in ["the", "deploy", "to", "staging", "failed", "twice"]:
        text += word + " "
        note.write_text(text)
        time.sleep(QUIET_S / 3)
    last_save = time.monotonic()
    settled_at = None
    while settled_at is None and time.monotonic() - started < 8:
        if watcher.next_changes(0.05).touched:
            settled_at = time.monotonic()
    assert settled_at is not None
    assert settled_at - last_save >= QUIET_S
    assert collect(watcher) == Changes()


def test_save_by_temp_file_and_rename_is_a_touch_of_the_note(watcher: VaultWatcher) -> None:
    note = watcher.vault.root / "n.md"
    note.write_text("v1")
    collect(watcher)
    for tmp_name in (".n.md.swp", "n.md.tmp~", f"{TEMP_PREFIX}abc-n.md.tmp"):
        tmp = watcher.vault.root / tmp_name
        tmp.write_text("v2 " + tmp_name)
        os.replace(tmp, note)
        assert collect(watcher) == Changes(("n.md",), ())


def test_dot_folders_temp_files_and_other_files_are_ignored(watcher: VaultWatcher) -> None:
    root = watcher.vault.root
    for folder in (".obsidian", ".trash", ".git", "notes/.hidden"):
        (root / folder).mkdir(parents=True)
        (root / folder / "x.md").write_text("ignored")
    (root / f"{TEMP_PREFIX}123-a.md.tmp").write_text("ignored")
    (root / "image.png").write_bytes(b"\x89PNG")
    (root / "notes" / "kept.md").write_text("seen")
    assert collect(watcher) == Changes(("notes/kept.md",), ())


def test_delete_and_move(watcher: VaultWatcher) -> None:
    root = watcher.vault.root
    (root / "a.md").write_text("a")
    (root / "b.md").write_text("b")
    collect(watcher)
    (root / "a.md").unlink()
    (root / "sub").mkdir()
    os.rename(root / "b.md", root / "sub" / "b.md")
    changes = collect(watcher)
    assert sorted(changes.gone) == ["a.md", "b.md"]
    assert changes.touched == ("sub/b.md",)


def test_moving_a_note_into_the_trash_is_a_delete(watcher: VaultWatcher) -> None:
    root = watcher.vault.root
    (root / ".trash").mkdir()
    (root / "a.md").write_text("a")
    collect(watcher)
    os.rename(root / "a.md", root / ".trash" / "a.md")
    assert collect(watcher) == Changes((), ("a.md",))


def test_a_folder_moved_out_of_the_vault_loses_its_known_notes(
    watcher: VaultWatcher, tmp_path: Path
) -> None:
    root = watcher.vault.root
    (root / "proj").mkdir()
    (root / "proj" / "p.md").write_text("p")
    collect(watcher)
    watcher.known.append("proj/p.md")  # type: ignore[attr-defined]
    shutil.move(root / "proj", tmp_path / "elsewhere")
    assert collect(watcher) == Changes((), ("proj/p.md",))


def test_own_write_is_dropped_and_a_user_edit_after_it_is_not(watcher: VaultWatcher) -> None:
    note = watcher.vault.root / "a.md"
    note.write_text("user")
    collect(watcher)
    ours = b"user\n<!-- aclarai:entailed_score=0.50 -->\n"
    tmp = watcher.vault.root / f"{TEMP_PREFIX}1-a.md.tmp"
    tmp.write_bytes(ours)
    os.replace(tmp, note)
    watcher.own_writes.remember("a.md", note.stat())
    assert collect(watcher) == Changes()
    note.write_bytes(ours + b"more from the user\n")
    assert collect(watcher) == Changes(("a.md",), ())


def test_a_fifo_named_like_a_note_is_logged_and_skipped(
    watcher: VaultWatcher, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "aclarai.daemon.loop.watcher")
    os.mkfifo(watcher.vault.root / "pipe.md")
    (watcher.vault.root / "real.md").write_text("r")
    changes = collect(watcher)
    assert changes.touched == ("real.md",)
    assert any("pipe.md is not a regular file" in r.getMessage() for r in caplog.records)


def test_watch_vault_yields_until_stopped(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    stop = threading.Event()
    seen: list[str] = []

    def edit_then_stop() -> None:
        time.sleep(0.3)
        (root / "a.md").write_text("a")
        deadline = time.monotonic() + 8
        while not seen and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()

    editor = threading.Thread(target=edit_then_stop)
    editor.start()
    for changes in watch_vault(Vault(root), WatchSettings(quiet_period_s=0.2), stop_event=stop):
        seen += changes.touched
    editor.join()
    assert seen == ["a.md"]
