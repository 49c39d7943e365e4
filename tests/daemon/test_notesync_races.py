"""Races between the note-sync path's callers (the walk, the watch path, the consumer) and a
user editing meanwhile: each ends with the store in step with the note, nothing lost, nothing
deleted that a note holds, and one extraction per edit. Real files, a real SQLite store and
queue; the user's edits run at the exact moment each race needs."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import aclarai.daemon.notesync as notesync
import aclarai.daemon.writer as writer
from aclarai.agents import EvalItem, Evaluator, Score
from aclarai.daemon.config import ProcessingSettings, load_config
from aclarai.daemon.consumer import DirtyBlockConsumer
from aclarai.daemon.factory import build_agents, build_queue, build_store, build_vault
from aclarai.daemon.notesync import NoteSync
from aclarai.daemon.watcher import OwnWrites, note_signature
from aclarai.graph import GraphStore
from aclarai.parsers import parse_note


class Fixed(Evaluator):
    name = "fixed"
    version = "1"

    def __init__(self) -> None:
        self.before_next: Callable[[], None] | None = None

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        if self.before_next is not None:
            hook, self.before_next = self.before_next, None
            hook()
        return [Score(0.9, 0.9, 0.9) for _ in items]


def X(text: str, bid: str) -> str:
    return f"{text}\n<!-- aclarai:id={bid} ver=1 -->\n^{bid}\n\n"


@dataclass
class Rig:
    vault: Path
    store: GraphStore
    notes: NoteSync
    consumer: DirtyBlockConsumer
    evaluator: Fixed


def rig(tmp_path: Path, files: dict[str, str], own: OwnWrites | None = None) -> Rig:
    vault = tmp_path / "vault"
    vault.mkdir()
    for rel, text in files.items():
        (vault / rel).write_text(text)
    config = load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state")})
    state = config.state_dir_for(vault)
    store, queue = build_store(config, state), build_queue(config, state)
    notes = NoteSync(build_vault(config, vault), store, queue)
    ev = Fixed()
    consumer = DirtyBlockConsumer(
        notes,
        queue,
        build_agents(config, state).extractor,
        ev,
        ProcessingSettings(workers=1),
        on_write=None if own is None else own.remember,
    )
    notes.sync_vault()
    consumer.drain()
    return Rig(vault, store, notes, consumer, ev)


def settle(notes: NoteSync, *rels: str):
    return notes.sync_notes([n for r in rels if (n := notes.vault.note(r)) is not None])


def age(path: Path) -> None:
    """Make the file's mtime old enough not to be racy (a later read records it)."""
    t = time.time_ns() - 10_000_000_000
    os.utime(path, ns=(t, t))


# ---------------------------------------------------------------------------------------------
# R1: `owners` kept across batches of a walk, while the watch path syncs between batches (the
# lock is released for on_batch): a block moved A -> B mid-walk is taken for a copy in B, and
# the walk marks it deleted at once (no grace), though B holds it.
def test_move_during_walk_is_not_deleted(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(notesync, "BATCH_FILES", 1)
    r = rig(
        tmp_path,
        {
            "a.md": X("alice: The deploy failed on Tuesday.", "X") + X("bob: ok then.", "Y"),
            "b.md": X("carol: The build is green.", "Z"),
        },
    )
    vault, store, notes = r.vault, r.store, r.notes
    a, b = vault / "a.md", vault / "b.md"
    # An edit in a.md before the walk, so the walk parses it (owners[X] = a.md).
    a.write_text(a.read_text().replace("ok then", "fine then"))
    age(a)
    moved = False

    def between_batches() -> bool:
        nonlocal moved
        if not moved:
            moved = True
            # The user cuts X from a.md and pastes it into b.md; the daemon's watch path syncs
            # both (NoteSync.lock is free while on_batch runs).
            text = a.read_text()
            start = text.index("alice:")
            end = text.index("^X\n\n") + len("^X\n\n")
            x = text[start:end]
            a.write_text(text[:start] + text[end:])
            b.write_text(b.read_text() + x)
            settle(notes, "a.md", "b.md")
            assert store.get_blocks(["X"])["X"].file == "b.md"
        return True

    notes.sync_vault(on_batch=between_batches)
    x = store.get_blocks(["X"])["X"]
    assert "X" in {blk.id for blk in parse_note(b.read_text()).blocks}
    assert x.deleted_at is None, f"X marked deleted though b.md holds it: {x}"


# ---------------------------------------------------------------------------------------------
# R2: sync_vault loads `states` once, outside the lock; a note the watch path synced meanwhile
# and that is back to its old bytes matches the stale sha and only gets record_write: the store
# keeps the intermediate blocks under the reverted file's sha, and no later sync repairs it.
def test_edit_then_undo_during_walk(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(notesync, "BATCH_FILES", 1)
    r = rig(
        tmp_path,
        {
            "a.md": X("alice: The deploy failed on Tuesday.", "X"),
            "b.md": X("carol: The build is green.", "Z"),
        },
    )
    vault, notes, consumer = r.vault, r.notes, r.consumer
    a, b = vault / "a.md", vault / "b.md"
    age(b)
    notes.sync_vault()  # records b.md's non-racy mtime
    c0 = b.read_bytes()
    a.write_text(a.read_text().replace("Tuesday", "Monday"))
    done = False

    def between_batches() -> bool:
        nonlocal done
        if not done:
            done = True
            b.write_text(c0.decode().replace("green", "red"))
            age(b)
            settle(notes, "b.md")  # watch path: store now has "red"
            b.write_bytes(c0)  # the user undoes; the watcher has not settled it yet
            t = time.time_ns() - 5_000_000_000
            os.utime(b, ns=(t, t))
        return True

    notes.sync_vault(on_batch=between_batches)
    settle(notes, "b.md")  # the watcher settles the undo
    consumer.drain()
    notes.sync_vault()
    consumer.drain()
    on_disk = {blk.id: blk for blk in parse_note(b.read_text()).blocks}["Z"]
    stored = r.store.get_blocks(["Z"])["Z"]
    assert stored.hash == on_disk.hash, "store keeps the undone text for good"


# ---------------------------------------------------------------------------------------------
# R3: written() records the new file state with record_write, assuming the store's blocks are
# still `before.records`; the watch path may have synced an intermediate edit meanwhile (the
# user then undid it, so the conditional write succeeds).
def test_edit_undo_while_consumer_works(tmp_path: Path) -> None:
    own = OwnWrites()
    r = rig(tmp_path, {"n.md": X("alice: The deploy failed on Tuesday.", "X")}, own)
    vault, store, notes, consumer, ev = r.vault, r.store, r.notes, r.consumer, r.evaluator
    n = vault / "n.md"
    n.write_text(n.read_text().replace("Tuesday", "Wednesday"))
    settle(notes, "n.md")
    c0 = n.read_bytes()

    def user() -> None:
        n.write_text(c0.decode().replace("Wednesday", "Friday"))
        settle(notes, "n.md")  # the watch path syncs the intermediate edit
        n.write_bytes(c0)  # and the user undoes it before the write-back

    ev.before_next = user
    stats = consumer.drain()
    assert stats.files_written >= 1
    # The watcher's last look at n.md is our own write: dropped as own.
    assert own.is_own("n.md", note_signature(notes.vault, "n.md"))
    notes.sync_vault()
    consumer.drain()
    on_disk = {blk.id: blk for blk in parse_note(n.read_text()).blocks}["X"]
    stored = store.get_blocks(["X"])["X"]
    for _ in range(2):
        assert notes.sync_vault().rescore_blocks == 0
        assert consumer.drain().claims_evaluated == 0
    assert stored.hash == on_disk.hash, "store holds the undone 'Friday' text"


# ---------------------------------------------------------------------------------------------
# R4: OwnWrites records the stat taken *after* os.replace: a user write landing between the
# rename and that stat (or in place, same size, within the same timestamp tick) is dropped by
# the watcher as our own write.
def test_user_write_after_rename_taken_for_own(tmp_path: Path, monkeypatch) -> None:
    own = OwnWrites()
    r = rig(tmp_path, {"n.md": X("alice: The deploy failed on Tuesday.", "X")}, own)
    vault, notes, consumer = r.vault, r.notes, r.consumer
    n = vault / "n.md"
    n.write_text(n.read_text().replace("Tuesday", "Wednesday"))
    settle(notes, "n.md")
    real_replace = os.replace

    def replace_then_user_types(src, dst):
        real_replace(src, dst)
        with open(dst, "r+b") as f:  # Obsidian saves in place (same inode)
            data = f.read().replace(b"Wednesday", b"Thursday")
            f.seek(0)
            f.write(data)
            f.truncate()

    monkeypatch.setattr(writer.os, "replace", replace_then_user_types)
    consumer.drain()
    monkeypatch.setattr(writer.os, "replace", real_replace)
    assert "Thursday" in n.read_text()
    assert not own.is_own("n.md", note_signature(notes.vault, "n.md")), (
        "the user's edit is dropped by the watcher as our own write"
    )


# ---------------------------------------------------------------------------------------------
# R5: current() re-enqueues blocks that are already in flight (old code skipped `queued` ids):
# the in-flight entry's generation is bumped, complete() leaves it pending, and the next take
# extracts the block again (a second model call for one edit).
def test_queued_block_edited_again_extracted_once(tmp_path: Path) -> None:
    r = rig(tmp_path, {"n.md": X("alice: The deploy failed on Tuesday.", "X")})
    vault, notes, consumer = r.vault, r.notes, r.consumer
    calls: list[str] = []
    inner = consumer.extractor.extract_each

    def counting(inputs):
        calls.extend(i.block.block_id for i in inputs)
        return inner(inputs)

    consumer.extractor.extract_each = counting
    n = vault / "n.md"
    n.write_text(n.read_text().replace("Tuesday", "Wednesday"))
    settle(notes, "n.md")
    n.write_text(n.read_text().replace("Wednesday", "Thursday"))  # not settled yet
    consumer.drain()
    consumer.drain()
    assert calls == ["X"], calls


# ---------------------------------------------------------------------------------------------
# R6: a block the user deletes while the consumer works on the note: current() syncs the note
# and drops `removed`; the watch path then finds the store already holding the bytes and
# reports nothing, so the block is never a delete candidate and stays live for good.
def test_block_deleted_before_consumer_takes_note(tmp_path: Path) -> None:
    r = rig(
        tmp_path,
        {"n.md": X("alice: The deploy failed on Tuesday.", "X") + X("bob: Rolled back.", "Y")},
    )
    vault, notes, consumer = r.vault, r.notes, r.consumer
    n = vault / "n.md"
    n.write_text(n.read_text().replace("Tuesday", "Wednesday"))
    settle(notes, "n.md")  # X queued
    text = n.read_text()
    n.write_text(text[: text.index("bob:")])  # the user deletes Y; not settled yet
    consumer.drain()  # current() syncs the note
    time.sleep(2.1)  # past the racy window, as the watcher's quiet period is
    report = settle(notes, "n.md")  # the watcher settles the deletion
    notes.sync_vault()
    assert report.vanished == {"Y": "n.md"} or r.store.get_blocks(["Y"])["Y"].deleted_at
