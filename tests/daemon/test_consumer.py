"""DirtyBlockConsumer edge cases: edits that race the consumer are never lost."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from aclarai.agents import Claim, ClaimExtractor, EvalItem, Evaluator, ExtractionInput, Score
from aclarai.daemon.config import load_config
from aclarai.daemon.consumer import ConsumerSettings, DirtyBlockConsumer
from aclarai.daemon.factory import build_agents, build_queue, build_store, build_vault
from aclarai.daemon.queue import DurableQueue
from aclarai.daemon.scan import Scanner
from aclarai.graph import GraphStore
from aclarai.parsers import EvaluationError, parse_note


class FixedEvaluator(Evaluator):
    """Gives every claim ``value``; ``before_next`` runs once, as the user acting mid-way."""

    name = "fixed"
    version = "1"

    def __init__(self) -> None:
        self.value = 0.9
        self.before_next: Callable[[], None] | None = None

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        if self.before_next is not None:
            hook, self.before_next = self.before_next, None
            hook()
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


@dataclass
class Rig:
    vault: Path
    store: GraphStore
    queue: DurableQueue
    scanner: Scanner
    consumer: DirtyBlockConsumer
    evaluator: FixedEvaluator
    extractor: FlakyExtractor

    def settle(self, *rels: str) -> None:
        """What the watcher does once a note is quiet: sync it and enqueue what changed."""
        notes = [n for rel in rels if (n := self.scanner.vault.note(rel)) is not None]
        self.scanner.scan(notes, full=False, force_read=True)

    def drain_all(self) -> None:
        """Drain until nothing is left, waiting out backoffs (the daemon's run loop)."""
        deadline = time.monotonic() + 30
        while (due := self.queue.next_due_in_s()) is not None:
            assert time.monotonic() < deadline, self.queue.entries()
            time.sleep(min(due, 3.0))
            self.consumer.drain()

    def claims(self, block_id: str) -> list[str]:
        return [c.text for c in self.store.claims_of_blocks([block_id])[block_id]]


@pytest.fixture
def make_rig(tmp_path: Path) -> Iterator[Callable[[dict[str, str]], Rig]]:
    made: list[Rig] = []

    def create(files: dict[str, str]) -> Rig:
        vault = tmp_path / "vault"
        vault.mkdir()
        for rel, text in files.items():
            (vault / rel).write_text(text)
        config = load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state")})
        state = config.state_dir_for(vault)
        store, queue = build_store(config, state), build_queue(config, state)
        v = build_vault(config, vault)
        evaluator = FixedEvaluator()
        extractor = FlakyExtractor(build_agents(config, state).extractor)
        consumer = DirtyBlockConsumer(
            v, store, queue, extractor, evaluator, ConsumerSettings(workers=1)
        )
        rig = Rig(vault, store, queue, Scanner(v, store, queue), consumer, evaluator, extractor)
        rig.scanner.scan()
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
    assert [e.block_id for e in rig.queue.entries()] == ["Y"]
    b.write_text(b.read_text() + "\n" + text[cut:])
    rig.settle("b.md")
    rig.drain_all()
    block = rig.store.get_blocks(["Y"])["Y"]
    assert (block.file, block.deleted_at) == ("b.md", None)
    assert rig.claims("Y") == ["Bob shipped v4.0."]
