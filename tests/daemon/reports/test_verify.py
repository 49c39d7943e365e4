"""Issue 36 §3: ``status --verify`` compares the graph's blocks and claims with a fresh parse of
the vault and names every difference; each one planted here is caught, by its note and block."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from aclarai.daemon.cli import main
from aclarai.daemon.config import Config
from aclarai.daemon.factory import build_queue, build_store, build_vault
from aclarai.daemon.loop.resync import resync
from aclarai.daemon.reports.status import collect_status, format_status
from aclarai.daemon.vault.notesync import SETTLED_ONCE, NoteSync
from aclarai.daemon.vault.queue import Dirty
from aclarai.graph import FileState, FileSync, block_key
from aclarai.graph.base import BlockRecord
from aclarai.parsers import parse_note

VENDOR = "research/2024-06-12 Vendor call.md"
PLANNING = "meetings/2024-06-05 Planning.md"


def found(config: Config, vault: Path) -> list[str]:
    return [str(d) for d in collect_status(config, vault, verify=True).differences or []]


def first_block(vault: Path, rel: str) -> str:
    return parse_note((vault / rel).read_text()).blocks[0].id


def test_a_resynced_vault_is_in_step(
    vault: Path, config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    resync(config, vault)
    assert found(config, vault) == []
    assert main(["status", str(vault), "--verify"]) == 0
    assert "verify       in step: the graph says what the vault says" in capsys.readouterr().out


def test_status_verify_rehashes_the_vault_against_the_graph(vault: Path, config: Config) -> None:
    resync(config, vault)
    assert collect_status(config, vault, verify=True).differences == []
    note = vault / "research/2024-06-12 Vendor call.md"
    text = note.read_text()
    note.write_text(text.replace("480 euros", "520 euros"))
    status = collect_status(config, vault, verify=True)
    [block] = [b for b in parse_note(note.read_text()).blocks if "520 euros" in b.text]
    assert [str(d) for d in status.differences or []] == [
        f"research/2024-06-12 Vendor call.md#^{block.id}: its text differs from the graph's"
    ]
    assert "verify       1 difference(s) between the graph and the vault:" in format_status(status)
    assert collect_status(config, vault).differences is None


def test_every_planted_difference_is_named(vault: Path, config: Config, tmp_path: Path) -> None:
    resync(config, vault)
    vendor, planning = first_block(vault, VENDOR), first_block(vault, PLANNING)
    store = build_store(config, tmp_path / "state")
    try:
        # A block of a note the vault never had, live in the graph.
        ghost = BlockRecord(block_key("ghost.md", "blk-ghost"), "ghost.md", "Boo.", "h", 1, 0)
        store.sync_files([FileSync(FileState("ghost.md", 1, 4, "f" * 64), [ghost])])
        # A block of the vault marked deleted in the graph.
        store.mark_deleted([block_key(PLANNING, planning)])
        # A claim whose scores in the graph are not what the note's comments say.
        key = block_key(VENDOR, vendor)
        [claim, *_] = store.claims_of_blocks([key])[key]
        assert claim.score is not None
        store.write_scores([dataclasses.replace(claim.score, entailed_score=0.01)])
    finally:
        store.close()
    # A paragraph's text edited, and no sync since.
    incident = vault / "meetings" / "2024-06-07 Incident review.md"
    [edited] = parse_note(incident.read_text()).blocks[:1]
    incident.write_text(incident.read_text().replace(edited.text, edited.text + " Twice."))

    differences = found(config, vault)

    assert "ghost.md#^blk-ghost: in the graph, not in the vault" in differences
    assert f"{PLANNING}#^{planning}: in the vault, not in the graph" in differences
    assert (
        f"meetings/2024-06-07 Incident review.md#^{edited.id}: its text differs from the graph's"
        in differences
    )
    [scores] = [d for d in differences if d.startswith(f"{VENDOR}#^{vendor}: ")]
    assert "the note says {'entailed_score': '0.86'" in scores
    assert "the graph says {'entailed_score': '0.01'" in scores
    assert len(differences) == 4


def test_a_block_whose_claims_left_the_graph_is_named(
    vault: Path, config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    resync(config, vault)
    vendor = first_block(vault, VENDOR)
    key = block_key(VENDOR, vendor)
    store = build_store(config, tmp_path / "state")
    try:
        store.replace_claims({key: []})
    finally:
        store.close()
    shown = {
        k: f"{v:.2f}" for k, v in parse_note((vault / VENDOR).read_text()).blocks[0].scores.items()
    }
    assert found(config, vault) == [
        f"{VENDOR}#^{vendor}: the note says {shown}, the graph says {{}}"
    ]
    assert main(["status", str(vault), "--verify", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verify"] == [
        {
            "file": VENDOR,
            "block_id": vendor,
            "difference": f"the note says {shown}, the graph says {{}}",
        }
    ]


def test_a_claim_graded_for_other_text_and_a_queued_block_are_named(
    vault: Path, config: Config, tmp_path: Path
) -> None:
    resync(config, vault)
    vendor, planning = first_block(vault, VENDOR), first_block(vault, PLANNING)
    with sqlite3.connect(tmp_path / "state" / "graph.sqlite") as db:
        db.execute(
            "UPDATE edges SET evaluated_hash = 'older' WHERE block_id = ?",
            (block_key(VENDOR, vendor),),
        )
    queue = build_queue(config, tmp_path / "state")
    try:
        queue.enqueue([Dirty(block_key(PLANNING, planning), PLANNING, None, "rescore")])
    finally:
        queue.close()
    differences = found(config, vault)
    assert f"{PLANNING}#^{planning}: waits in the queue to be graded" in differences
    assert [d for d in differences if d.startswith(VENDOR)] == [
        f"{VENDOR}#^{vendor}: 1 claim(s) not graded for its text"
    ]


def test_a_graph_left_by_an_older_aclarai_is_brought_in_step_by_one_resync(
    vault: Path, config: Config, tmp_path: Path
) -> None:
    """An older daemon stopped within the grace period left a deleted paragraph's block live,
    its note's bytes recorded: the first resync of this aclarai settles every note once."""
    resync(config, vault)
    note = vault / VENDOR
    block = parse_note(note.read_text()).blocks[0]
    text = note.read_text()
    start = text.index(block.text)
    end = text.index(f"^{block.id}\n") + len(f"^{block.id}\n")
    note.write_text(text[:start] + text[end:])
    store, queue = build_store(config, tmp_path / "state"), build_queue(config, tmp_path / "state")
    try:
        # What the older daemon did: sync the note, nothing written down to settle.
        vault_notes = build_vault(config, vault)
        [synced] = [n for n in vault_notes.iter_notes() if n.rel == VENDOR]
        NoteSync(vault_notes, store, None).sync_notes([synced])
        queue.delete_meta(SETTLED_ONCE)
    finally:
        store.close()
        queue.close()
    assert found(config, vault) == [f"{VENDOR}#^{block.id}: in the graph, not in the vault"]

    summary = resync(config, vault)

    assert summary.synced.deleted_blocks == 1
    assert found(config, vault) == []
