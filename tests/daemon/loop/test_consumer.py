"""DirtyBlockConsumer edge cases: edits that race the consumer are never lost, score comments
describe the block's current text, and one failing block fails alone."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

import aclarai.daemon.vault.notesync as notesync
import aclarai.daemon.vault.writer as writer
from aclarai.agents import Claim, ClaimExtractor, EvalItem, Evaluator, ExtractionInput, Score
from aclarai.daemon.config import ProcessingSettings, load_config
from aclarai.daemon.factory import build_agents, build_queue, build_store, build_vault
from aclarai.daemon.loop.consumer import DirtyBlockConsumer
from aclarai.daemon.loop.take import DrainStats
from aclarai.daemon.loop.watcher import OwnWrites, note_signature
from aclarai.daemon.vault.notesync import NoteSync, SyncReport
from aclarai.daemon.vault.queue import Dirty, DurableQueue
from aclarai.graph import FileState, GradeWrite, GraphStore, SqliteStore
from aclarai.parsers import EvaluationError, StoreError, parse_note


class FixedEvaluator(Evaluator):
    """Gives every claim ``value``; ``before_next`` runs once, as the user acting mid-way."""

    name = "fixed"
    version = "1"

    def __init__(self) -> None:
        self.value: float | None = 0.9
        self.failure = "unparseable_output: scripted"
        self.before_next: Callable[[], None] | None = None

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        if self.before_next is not None:
            hook, self.before_next = self.before_next, None
            hook()
        if self.value is None:
            return [Score.failed(self.failure) for _ in items]
        return [Score(self.value, self.value, self.value) for _ in items]


class FlakyExtractor(ClaimExtractor):
    """The offline extractor, failing the next call when ``fail_next`` is set."""

    name = "flaky"

    def __init__(self, inner: ClaimExtractor) -> None:
        self.inner = inner
        self.fail_next = False

    def extract_batch(self, inputs: Sequence[ExtractionInput]) -> list[list[Claim]]:
        if self.fail_next:
            self.fail_next = False
            raise EvaluationError("model returned garbage")
        return self.inner.extract_batch(inputs)


class PoisonExtractor(FlakyExtractor):
    """Fails, block by block, every block whose text holds ``poison`` (as the LLM one does)."""

    poison = "POISON"

    def extract_each(
        self, inputs: Sequence[ExtractionInput]
    ) -> list[list[Claim] | EvaluationError]:
        return [
            EvaluationError("input too long: scripted")
            if self.poison in item.block.text
            else self.inner.extract_batch([item])[0]
            for item in inputs
        ]


@dataclass
class Rig:
    vault: Path
    store: GraphStore
    queue: DurableQueue
    notes: NoteSync
    consumer: DirtyBlockConsumer
    evaluator: FixedEvaluator
    extractor: FlakyExtractor

    def settle(self, *rels: str) -> SyncReport:
        """What the watcher does once a note is quiet: sync it and enqueue what changed."""
        notes = [n for rel in rels if (n := self.notes.vault.note(rel)) is not None]
        return self.notes.sync_notes(notes)

    def drain_all(self) -> None:
        """Drain until nothing is left, waiting out backoffs (the daemon's run loop)."""
        deadline = time.monotonic() + 30
        while (due := self.queue.next_due_in_s()) is not None:
            assert time.monotonic() < deadline, self.queue.entries()
            time.sleep(min(due, 3.0))
            self.consumer.drain()

    def claims(self, block_id: str) -> list[str]:
        """The claims of the live block of this id (each test gives an id to one note)."""
        [block] = self.store.live_blocks_with_ids([block_id])
        return [c.text for c in self.store.claims_of_blocks([block.id])[block.id]]

    def edit(self, rel: str, old: str, new: str) -> None:
        """The user replaces ``old`` by ``new`` and the watcher settles the note."""
        note = self.vault / rel
        note.write_text(note.read_text().replace(old, new))
        self.settle(rel)

    def block(self, rel: str, block_id: str) -> tuple[int, dict[str, float]]:
        """The block's ``ver`` and score comments as the note holds them."""
        found = {b.id: b for b in parse_note((self.vault / rel).read_text()).blocks}[block_id]
        return found.version, dict(found.scores)


@pytest.fixture
def make_rig(tmp_path: Path) -> Iterator[Callable[..., Rig]]:
    """``make_rig(files, extractor_class=FlakyExtractor, on_write=None, store_class=None)``: a
    vault synced and drained once (``store_class``: a SqliteStore subclass in the state folder)."""
    made: list[Rig] = []

    def create(
        files: dict[str, str],
        extractor_class: type[FlakyExtractor] = FlakyExtractor,
        on_write: Callable[[str, os.stat_result], None] | None = None,
        store_class: type[SqliteStore] | None = None,
    ) -> Rig:
        vault = tmp_path / "vault"
        vault.mkdir()
        for rel, text in files.items():
            (vault / rel).write_text(text)
        config = load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state")})
        state = config.state_dir_for(vault)
        store = build_store(config, state) if store_class is None else store_class(state / "g.db")
        queue = build_queue(config, state)
        notes = NoteSync(build_vault(config, vault), store, queue)
        evaluator = FixedEvaluator()
        extractor = extractor_class(build_agents(config, state).extractor)
        consumer = DirtyBlockConsumer(
            notes,
            queue,
            extractor,
            evaluator,
            ProcessingSettings(concurrent_notes=1),
            on_write=on_write,
        )
        rig = Rig(vault, store, queue, notes, consumer, evaluator, extractor)
        rig.notes.sync_vault()
        consumer.drain()
        made.append(rig)
        return rig

    yield create
    for rig in made:
        rig.store.close()
        rig.queue.close()


def queued_x_then_unqueued_y(make_rig: Callable[[dict[str, str]], Rig], y: str) -> Rig:
    """A note of blocks X, Y, Z; X is edited and settled (queued), then Y is edited before the
    watcher settles the note again, so nothing is queued for Y yet."""
    rig = make_rig(
        {
            "n.md": "alice: The deploy failed on Tuesday.\n<!-- aclarai:id=X ver=1 -->\n\n"
            "bob: Bob rolled back to v2.3.\n<!-- aclarai:id=Y ver=1 -->\n\n"
            "carol: The build is green.\n<!-- aclarai:id=Z ver=1 -->\n"
        }
    )
    note = rig.vault / "n.md"
    note.write_text(note.read_text().replace("Tuesday", "Wednesday"))
    rig.settle("n.md")
    note.write_text(note.read_text().replace("Bob rolled back to v2.3.", y))
    return rig


def test_an_edit_the_consumer_meets_unqueued_survives_a_write_conflict(make_rig) -> None:
    rig = queued_x_then_unqueued_y(make_rig, "Bob broke v2.1.")
    note = rig.vault / "n.md"
    rig.evaluator.value = 0.1
    rig.evaluator.before_next = lambda: note.write_text(note.read_text().replace("green", "red"))
    stats = rig.consumer.drain()
    assert stats.conflicts == 1
    rig.settle("n.md")
    rig.drain_all()
    blocks = {b.id: b for b in parse_note(note.read_text()).blocks}
    assert "Bob broke v2.1." in blocks["Y"].text and "red" in blocks["Z"].text
    assert blocks["Y"].scores["entailed_score"] == pytest.approx(0.1)
    assert rig.claims("Y") == ["Bob broke v2.1."]


def test_claims_follow_an_edit_whose_extraction_failed(make_rig) -> None:
    rig = queued_x_then_unqueued_y(make_rig, "Bob shipped v4.0.")
    rig.extractor.fail_next = True
    assert rig.consumer.drain().failures == 1
    rig.drain_all()
    assert rig.claims("Y") == ["Bob shipped v4.0."]
    assert any("Wednesday" in claim for claim in rig.claims("X"))


def test_an_edited_block_cut_and_pasted_into_another_note_keeps_its_edit(make_rig) -> None:
    rig = make_rig(
        {
            "a.md": "alice: The deploy failed on Tuesday.\n<!-- aclarai:id=X ver=1 -->\n\n"
            "bob: Bob rolled back to v2.3.\n<!-- aclarai:id=Y ver=1 -->\n",
            "b.md": "carol: The build is green.\n<!-- aclarai:id=Z ver=1 -->\n",
        }
    )
    a, b = rig.vault / "a.md", rig.vault / "b.md"
    a.write_text(a.read_text().replace("Bob rolled back to v2.3.", "Bob shipped v4.0."))
    rig.settle("a.md")
    text = a.read_text()
    cut = text.index("bob:")
    a.write_text(text[:cut])
    rig.settle("a.md")
    rig.consumer.drain()
    assert [e.block_id for e in rig.queue.entries()] == ["Y@a.md"]
    b.write_text(b.read_text() + "\n" + text[cut:])
    rig.settle("b.md")
    rig.drain_all()
    block = rig.store.get_blocks(["Y@b.md"])["Y@b.md"]
    assert (block.file, block.deleted_at) == ("b.md", None)
    assert rig.store.get_blocks(["Y@a.md"]) == {}, "moved, not copied"
    assert rig.claims("Y") == ["Bob shipped v4.0."]


THREE = {
    "n.md": "alice: The deploy failed on Tuesday.\n<!-- aclarai:id=X ver=1 -->\n\n"
    "bob: Bob rolled back to v2.3.\n<!-- aclarai:id=Y ver=1 -->\n\n"
    "carol: The build is green.\n<!-- aclarai:id=Z ver=1 -->\n"
}
SCORED = {"entailed_score": 0.9, "coverage_score": 0.9, "decontextualization_score": 0.9}


def test_an_edit_scored_the_same_gets_exactly_one_ver_bump(make_rig) -> None:
    rig = make_rig(THREE)
    assert rig.block("n.md", "X") == (2, SCORED)

    rig.edit("n.md", "Tuesday", "Wednesday")
    stats = rig.consumer.drain()

    assert stats.files_written == 1
    assert rig.block("n.md", "X") == (3, SCORED), "same scores, new text: ver follows the text"
    assert rig.block("n.md", "Y") == (2, SCORED)
    before = (rig.vault / "n.md").read_bytes()
    rig.notes.sync_vault()
    assert rig.consumer.drain().files_written == 0, "a pass with no text change writes nothing"
    assert (rig.vault / "n.md").read_bytes() == before


def test_a_rescore_with_equal_scores_writes_nothing(make_rig) -> None:
    rig = make_rig(THREE)
    before = (rig.vault / "n.md").read_bytes()
    rig.consumer.grader.reevaluate = True
    rig.queue.enqueue(Dirty(f"{bid}@n.md", "n.md", None, "rescore") for bid in "XYZ")

    stats = rig.consumer.drain()

    assert stats.claims_evaluated == 3 and stats.files_written == 0
    assert (rig.vault / "n.md").read_bytes() == before


def test_an_edit_that_cannot_be_scored_loses_its_old_comments_until_scoring_succeeds(
    make_rig,
) -> None:
    rig = make_rig(THREE)
    rig.evaluator.value = None
    rig.edit("n.md", "Tuesday", "Wednesday on the Frankfurt cluster")

    assert rig.consumer.drain().null_scores == 1
    assert rig.block("n.md", "X") == (3, {}), "scores of the old text go, one ver +1"
    assert rig.block("n.md", "Y") == (2, SCORED), "a neighbour's failed re-score keeps its own"

    rig.notes.sync_vault()
    assert rig.consumer.drain().files_written == 0, "still failing: nothing more to remove"
    assert rig.block("n.md", "X") == (3, {})

    rig.evaluator.value = 0.5
    rig.notes.sync_vault()
    rig.consumer.drain()
    halves = dict.fromkeys(SCORED, 0.5)
    assert rig.block("n.md", "X") == (4, halves), "back once scoring succeeds"


def test_a_failed_reevaluation_of_unchanged_text_keeps_the_comments(make_rig) -> None:
    rig = make_rig(THREE)
    before = (rig.vault / "n.md").read_bytes()
    rig.evaluator.value = None
    rig.consumer.grader.reevaluate = True
    rig.queue.enqueue([Dirty("X@n.md", "n.md", None, "rescore")])

    assert rig.consumer.drain().null_scores == 1
    assert (rig.vault / "n.md").read_bytes() == before


def test_one_failing_block_fails_alone(make_rig) -> None:
    rig = make_rig(THREE, extractor_class=PoisonExtractor)
    rig.edit("n.md", "Tuesday", "Tuesday POISON")
    rig.edit("n.md", "Bob rolled back to v2.3.", "Bob rolled back to v2.4.")

    stats = rig.consumer.drain()

    assert (stats.extraction_failures, stats.blocks_extracted) == (1, 1)
    assert rig.claims("Y") == ["Bob rolled back to v2.4."]
    assert rig.block("n.md", "Y") == (3, SCORED)
    assert rig.block("n.md", "X") == (3, {}), "its scores described the old text"
    [entry] = rig.queue.entries()
    assert (entry.block_id, entry.attempts) == ("X@n.md", 1)
    assert "input too long" in (entry.last_error or "")
    assert stats.model_failure() is None

    rig.edit("n.md", "Tuesday POISON", "Thursday")
    rig.drain_all()
    assert rig.block("n.md", "X") == (4, SCORED)
    assert rig.queue.entries() == []


class RefusingStore(SqliteStore):
    """A real store that refuses, for one test, the take-wide writes naming one note's blocks."""

    refuse: tuple[str, str] | None = None
    """(method, block id): ``write_grades`` or ``record_writes`` fails when it names the block."""

    def write_grades(self, grades: Sequence[GradeWrite]) -> list[int]:
        if (
            self.refuse is not None
            and self.refuse[0] == "write_grades"
            and any(self.refuse[1] in g.claims for g in grades)
        ):
            raise StoreError(f"refused block {self.refuse[1]}")
        return super().write_grades(grades)

    def record_writes(self, writes: Sequence[tuple[FileState, Mapping[str, int]]]) -> None:
        if (
            self.refuse is not None
            and self.refuse[0] == "record_writes"
            and any(self.refuse[1] in versions for _, versions in writes)
        ):
            raise StoreError(f"refused block {self.refuse[1]}")
        super().record_writes(writes)


@pytest.mark.parametrize("method", ["write_grades", "record_writes"])
def test_a_note_the_store_refuses_fails_alone_in_its_take(make_rig, method: str) -> None:
    rig = make_rig(
        {
            "a.md": "alice: The deploy failed on Tuesday.\n<!-- aclarai:id=A ver=1 -->\n",
            "b.md": "bob: Bob rolled back to v2.3.\n<!-- aclarai:id=B ver=1 -->\n",
        },
        store_class=RefusingStore,
    )
    rig.store.refuse = (method, "B@b.md")
    rig.edit("a.md", "Tuesday", "Wednesday")
    rig.edit("b.md", "v2.3", "v2.4")

    stats = rig.consumer.drain()

    assert (stats.failures, stats.files_processed) == (1, 2)
    assert rig.block("a.md", "A") == (3, SCORED), "the other note of the take went through"
    [entry] = rig.queue.entries()
    assert (entry.block_id, entry.attempts) == ("B@b.md", 1)
    assert "refused block B@b.md" in (entry.last_error or "")
    assert "v2.4" in (rig.vault / "b.md").read_text(), "the user's edit is kept"

    rig.store.refuse = None
    rig.drain_all()
    assert rig.queue.entries() == []
    assert rig.block("b.md", "B") == (3, SCORED)
    assert rig.claims("B") == ["Bob rolled back to v2.4."]


def test_drain_stats_say_when_the_model_did_nothing_useful() -> None:
    assert DrainStats(model_outages=2).model_failure() is not None
    assert DrainStats(extraction_failures=3).model_failure() is not None
    assert DrainStats(claims_evaluated=4, null_scores=4).model_failure() is not None
    assert DrainStats(claims_evaluated=4, null_scores=3).model_failure() is None
    assert DrainStats(extraction_failures=1, blocks_extracted=1).model_failure() is None


def test_an_edit_scored_the_same_after_an_outage_still_gets_its_ver_bump(make_rig) -> None:
    rig = make_rig(THREE)
    rig.evaluator.value = None
    rig.evaluator.failure = "llm_unavailable: scripted outage"
    rig.edit("n.md", "The deploy failed on Tuesday.", "The rollout stalled on Friday.")

    assert rig.consumer.drain().model_outages == 1
    assert rig.block("n.md", "X") == (2, SCORED), "nothing written while the model is away"
    assert rig.claims("X") == ["The rollout stalled on Friday."], "every old claim replaced"

    rig.evaluator.value = 0.9
    rig.queue.make_due()
    rig.consumer.drain()
    assert rig.block("n.md", "X") == (3, SCORED)


# --- races between the note-sync path's callers and a user editing meanwhile -----------------
# The user's edit runs at the exact moment each race needs (between two batches of a walk,
# during a model call, right after our rename). Each ends with the store in step with the note,
# nothing deleted that a note holds, and one extraction per edit.


def block(text: str, bid: str) -> str:
    return f"{text}\n<!-- aclarai:id={bid} ver=1 -->\n^{bid}\n\n"


def age(path: Path, by_s: float = 10.0) -> None:
    """Set the file's mtime back, out of the racy window, so a read records it."""
    t = time.time_ns() - int(by_s * 1e9)
    os.utime(path, ns=(t, t))


def test_a_block_moved_between_two_batches_of_a_walk_is_not_deleted(
    make_rig: Callable[..., Rig], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk saw X in a.md; the watch path then synced its move to b.md: b.md's X is the
    block itself, not a copy, and stays live."""
    monkeypatch.setattr(notesync, "BATCH_FILES", 1)
    r = make_rig(
        {
            "a.md": block("alice: The deploy failed on Tuesday.", "X")
            + block("bob: ok then.", "Y"),
            "b.md": block("carol: The build is green.", "Z"),
        }
    )
    a, b = r.vault / "a.md", r.vault / "b.md"
    a.write_text(a.read_text().replace("ok then", "fine then"))  # so the walk parses a.md
    age(a)
    moved = False

    def between_batches() -> bool:
        nonlocal moved
        if not moved:
            moved = True
            text = a.read_text()
            start, end = text.index("alice:"), text.index("^X\n\n") + len("^X\n\n")
            a.write_text(text[:start] + text[end:])
            b.write_text(b.read_text() + text[start:end])
            r.settle("a.md", "b.md")
            assert r.store.get_blocks(["X@b.md"])["X@b.md"].file == "b.md"
        return True

    r.notes.sync_vault(on_batch=between_batches)
    assert "X" in {blk.id for blk in parse_note(b.read_text()).blocks}
    assert r.store.get_blocks(["X@b.md"])["X@b.md"].deleted_at is None


def test_an_edit_undone_between_two_batches_of_a_walk_leaves_the_store_on_the_note(
    make_rig: Callable[..., Rig], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk loaded b.md's state before the watch path synced an edit the user then undid:
    the walk's matching hash is checked against the store's state of now, not of then."""
    monkeypatch.setattr(notesync, "BATCH_FILES", 1)
    r = make_rig(
        {
            "a.md": block("alice: The deploy failed on Tuesday.", "X"),
            "b.md": block("carol: The build is green.", "Z"),
        }
    )
    a, b = r.vault / "a.md", r.vault / "b.md"
    age(b)
    r.notes.sync_vault()  # records b.md's mtime
    before = b.read_bytes()
    a.write_text(a.read_text().replace("Tuesday", "Monday"))
    done = False

    def between_batches() -> bool:
        nonlocal done
        if not done:
            done = True
            b.write_text(before.decode().replace("green", "red"))
            age(b)
            r.settle("b.md")
            b.write_bytes(before)  # undone before the watcher settles it
            age(b, 5.0)
        return True

    r.notes.sync_vault(on_batch=between_batches)
    r.settle("b.md")
    r.consumer.drain()
    r.notes.sync_vault()
    r.consumer.drain()
    on_disk = {blk.id: blk for blk in parse_note(b.read_text()).blocks}["Z"]
    assert r.store.get_blocks(["Z@b.md"])["Z@b.md"].hash == on_disk.hash


def test_an_edit_undone_during_the_model_call_leaves_the_store_on_the_note(
    make_rig: Callable[..., Rig],
) -> None:
    """The conditional write goes through (the bytes are back to what was read), while the
    store was synced to the undone edit meanwhile: the write-back syncs the note in full."""
    own = OwnWrites()
    r = make_rig(
        {"n.md": block("alice: The deploy failed on Tuesday.", "X")}, on_write=own.remember
    )
    n = r.vault / "n.md"
    n.write_text(n.read_text().replace("Tuesday", "Wednesday"))
    r.settle("n.md")
    read = n.read_bytes()

    def user() -> None:
        n.write_text(read.decode().replace("Wednesday", "Friday"))
        r.settle("n.md")
        n.write_bytes(read)

    r.evaluator.before_next = user
    assert r.consumer.drain().files_written >= 1
    # The watcher drops the write-back's echo as our own: nothing else repairs the store.
    assert own.is_own("n.md", note_signature(r.notes.vault, "n.md"))
    on_disk = {blk.id: blk for blk in parse_note(n.read_text()).blocks}["X"]
    assert r.store.get_blocks(["X@n.md"])["X@n.md"].hash == on_disk.hash
    for _ in range(2):
        assert r.notes.sync_vault().rescore_blocks == 0
        assert r.consumer.drain().claims_evaluated == 0


def test_a_user_save_right_after_our_rename_is_not_taken_for_our_write(
    make_rig: Callable[..., Rig], monkeypatch: pytest.MonkeyPatch
) -> None:
    own = OwnWrites()
    r = make_rig(
        {"n.md": block("alice: The deploy failed on Tuesday.", "X")}, on_write=own.remember
    )
    n = r.vault / "n.md"
    n.write_text(n.read_text().replace("Tuesday", "Wednesday"))
    r.settle("n.md")
    real_replace = os.replace

    def replace_then_user_saves(src: str, dst: str) -> None:
        real_replace(src, dst)
        with open(dst, "r+b") as f:  # saved in place, as Obsidian does: same inode
            data = f.read().replace(b"Wednesday", b"Thursday")
            f.seek(0)
            f.write(data)
            f.truncate()

    monkeypatch.setattr(writer.os, "replace", replace_then_user_saves)
    r.consumer.drain()
    monkeypatch.setattr(writer.os, "replace", real_replace)
    assert "Thursday" in n.read_text()
    assert not own.is_own("n.md", note_signature(r.notes.vault, "n.md"))


def test_a_queued_block_edited_again_before_its_take_is_extracted_once(
    make_rig: Callable[..., Rig],
) -> None:
    r = make_rig({"n.md": block("alice: The deploy failed on Tuesday.", "X")})
    calls: list[str] = []
    inner = r.extractor.extract_each

    def counting(inputs: Sequence[ExtractionInput]) -> list[list[Claim] | EvaluationError]:
        calls.extend(i.block.block_id for i in inputs)
        return inner(inputs)

    r.extractor.extract_each = counting  # type: ignore[method-assign]
    n = r.vault / "n.md"
    n.write_text(n.read_text().replace("Tuesday", "Wednesday"))
    r.settle("n.md")
    n.write_text(n.read_text().replace("Wednesday", "Thursday"))  # not settled yet
    r.consumer.drain()
    r.consumer.drain()
    assert calls == ["X@n.md"]


def test_a_block_deleted_before_the_consumer_takes_its_note_is_settled(
    make_rig: Callable[..., Rig],
) -> None:
    """The consumer's sync of the note is the one that sees Y gone; the watch path then finds
    the store already holding the note's bytes, and Y is still marked deleted when the note
    settles."""
    r = make_rig(
        {
            "n.md": block("alice: The deploy failed on Tuesday.", "X")
            + block("bob: Rolled back.", "Y")
        }
    )
    n = r.vault / "n.md"
    n.write_text(n.read_text().replace("Tuesday", "Wednesday"))
    r.settle("n.md")
    text = n.read_text()
    n.write_text(text[: text.index("bob:")])  # Y deleted, not settled yet
    r.consumer.drain()
    r.settle("n.md")
    assert r.notes.settle() == {"Y@n.md": "n.md"}
    assert r.store.get_blocks(["Y@n.md"])["Y@n.md"].deleted_at is not None
