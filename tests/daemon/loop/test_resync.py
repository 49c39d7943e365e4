"""End-to-end ``resync`` over real files and a real SQLite store."""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from aclarai.agents import EvalItem, Evaluator, Score
from aclarai.daemon.config import Config, ProcessingSettings, load_config
from aclarai.daemon.factory import build_agents, build_queue, build_store, build_vault
from aclarai.daemon.loop.consumer import DirtyBlockConsumer
from aclarai.daemon.loop.resync import format_summary, resync
from aclarai.daemon.vault.notesync import NoteSync
from aclarai.graph import block_key
from aclarai.parsers import SCORE_NAMES, parse_note
from tests.helpers.cli import run_cli
from tests.helpers.vault import DASHBOARD, vault_snapshot

ROOT = Path(__file__).resolve().parents[3]


def test_sample_vault_end_to_end(vault: Path, config: Config) -> None:
    before = vault_snapshot(vault, mask_times=False)
    summary = resync(config, vault)
    assert summary.ok
    after = vault_snapshot(vault, mask_times=False)
    assert after["Ideas.md"] == before["Ideas.md"]
    assert after[".obsidian/app.json"] == before[".obsidian/app.json"]
    # sample_vault/aclarai/inbox holds a ChatGPT export (2 conversations) and a Slack day file.
    assert summary.imported is not None and summary.imported.created == 3
    imported = set(summary.imported.notes)
    assert not (vault / "aclarai" / "inbox" / "conversations.json").exists()
    assert summary.synced.files_with_markers == 10
    assert summary.drain.files_written == 10
    assert summary.counts is not None and summary.counts.blocks == summary.synced.blocks_seen
    assert summary.counts.scored_claims > 30

    store = build_store(config, config.state_dir_for(vault))
    try:
        for rel in (r for r in after if r.endswith(".md") and r not in ("Ideas.md", DASHBOARD)):
            text = after[rel].decode()
            note = parse_note(text)
            if rel in imported:
                # Imported by this resync: every block written at ver=1, then scored.
                assert all(b.version in (1, 2) for b in note.blocks)
                continue
            old = {b.id: b for b in parse_note(before[rel].decode()).blocks}
            claims = store.claims_of_blocks([block_key(rel, b.id) for b in note.blocks])
            for block in note.blocks:
                assert block.hash == old[block.id].hash
                found = claims[block_key(rel, block.id)]
                scored = [c for c in found if c.score is not None]
                if not scored:
                    assert block.scores == {} and block.version == old[block.id].version
                    continue
                assert block.version == old[block.id].version + 1
                for name in SCORE_NAMES:
                    values = [
                        getattr(c.score, name) for c in scored if getattr(c.score, name) is not None
                    ]
                    assert block.scores[name] == pytest.approx(round(min(values), 2))
        assert "blk-notreal" not in store.get_blocks(["blk-notreal"])
    finally:
        store.close()
    crlf = after["meetings/2024-06-17 Retro.md"]
    assert crlf.count(b"\r\n") == crlf.count(b"\n")
    assert "aclarai:entailed_score=" in crlf.decode()


def test_second_run_does_nothing(vault: Path, config: Config) -> None:
    resync(config, vault)
    first = vault_snapshot(vault, mask_times=False)
    again = resync(config, vault)
    assert again.synced.files_parsed == 0
    assert again.drain.claims_evaluated == 0
    assert again.drain.files_written == 0
    assert vault_snapshot(vault, mask_times=False) == first


def test_scores_visibly_differ_on_context_dependent_utterances(vault: Path, config: Config) -> None:
    resync(config, vault)
    note = parse_note((vault / "meetings/2024-06-05 Planning.md").read_text())
    by_text = {b.text.split(":", 1)[1].strip(): b for b in note.blocks}
    vague = by_text["He said it would be done by Friday."]
    concrete = by_text["We have 42 story points planned for sprint 18, which ends on June 19."]
    assert vague.scores["decontextualization_score"] < concrete.scores["decontextualization_score"]


def test_editing_one_block_rescores_it_and_the_blocks_whose_window_holds_it(
    vault: Path, config: Config
) -> None:
    resync(config, vault)
    rel = "meetings/2024-06-07 Incident review.md"
    path = vault / rel
    text = path.read_text()
    path.write_text(text.replace("roughly 1,200 orders", "roughly 3,400 orders"))
    others = {k: v for k, v in vault_snapshot(vault, mask_times=False).items() if k != rel}
    blocks = [block_key(rel, b.id) for b in parse_note(path.read_text()).blocks]
    at = next(i for i, b in enumerate(parse_note(path.read_text()).blocks) if "3,400" in b.text)
    window = config.window.claimify
    neighbours = blocks[max(0, at - window.f) : at] + blocks[at + 1 : at + 1 + window.p]
    store = build_store(config, config.state_dir_for(vault))
    try:
        neighbour_claims = sum(len(c) for c in store.claims_of_blocks(neighbours).values())
    finally:
        store.close()
    summary = resync(config, vault)
    assert summary.synced.dirty_blocks == 1
    assert neighbour_claims > 0
    assert summary.drain.claims_evaluated == 1 + neighbour_claims
    assert {k: v for k, v in vault_snapshot(vault, mask_times=False).items() if k != rel} == others
    edited = next(b for b in parse_note(path.read_text()).blocks if "3,400" in b.text)
    store = build_store(config, config.state_dir_for(vault))
    try:
        key = block_key(rel, edited.id)
        [claim] = store.claims_of_blocks([key])[key]
        assert claim.score is not None and claim.score.evaluated_hash == edited.hash
        assert "3,400" in claim.text
    finally:
        store.close()


def test_dry_run_changes_nothing(vault: Path, config: Config) -> None:
    before = vault_snapshot(vault, mask_times=False)
    summary = resync(config, vault, dry_run=True)
    assert summary.synced.dirty_blocks == 54
    assert vault_snapshot(vault, mask_times=False) == before
    printed = format_summary(summary)
    assert "meetings/2024-06-03 Standup.md: 9 block(s)" in printed
    assert "Ideas.md" not in printed
    # A dry run leaves the inbox alone; the real run imports its 11 messages first.
    assert resync(config, vault).synced.dirty_blocks == 54 + 11


def test_cli_resync_prints_a_summary(vault: Path, tmp_path: Path) -> None:
    env = {
        "ACLARAI_STATE_DIR": str(tmp_path / "cli-state"),
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    out = run_cli("resync", str(vault), env=env)
    assert out.returncode == 0, out.stderr
    assert "notes rewritten" in out.stdout and "time" in out.stdout
    missing = run_cli("resync", str(tmp_path / "nope"), env=env)
    assert missing.returncode != 0
    assert "does not exist" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1


def test_a_copied_note_has_blocks_of_its_own_ids_being_note_scoped(
    vault: Path, config: Config
) -> None:
    src = vault / "meetings/2024-06-03 Standup.md"
    copy = vault / "zz-copy.md"
    shutil.copy(src, copy)
    summary = resync(config, vault)
    assert summary.synced.duplicates == []
    ids = [b.id for b in parse_note(copy.read_text()).blocks]
    store = build_store(config, config.state_dir_for(vault))
    try:
        for rel in ("meetings/2024-06-03 Standup.md", "zz-copy.md"):
            held = store.get_blocks(block_key(rel, i) for i in ids)
            assert [b.file for b in held.values()] == [rel] * len(ids)
    finally:
        store.close()
    assert "aclarai:entailed_score" in copy.read_text()


class FlakyEvaluator(Evaluator):
    """Fails every evaluation while ``failing`` is set, like an unreachable model."""

    name = "flaky"
    version = "1"

    def __init__(self) -> None:
        self.failing = True
        self.calls = 0

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        self.calls += len(items)
        if self.failing:
            return [Score.failed("endpoint unreachable") for _ in items]
        return [Score(0.8, 0.6, 0.9) for _ in items]


def _pipeline(config: Config, vault: Path, evaluator: Evaluator):
    state = config.state_dir_for(vault)
    store, queue = build_store(config, state), build_queue(config, state)
    notes = NoteSync(build_vault(config, vault), store, queue)
    consumer = DirtyBlockConsumer(
        notes,
        queue,
        build_agents(config, state).extractor,
        evaluator,
        ProcessingSettings(concurrent_notes=1),
    )
    return notes, consumer, store, queue


def test_null_scores_write_nothing_and_are_retried(vault: Path, config: Config) -> None:
    evaluator = FlakyEvaluator()
    notes, consumer, store, queue = _pipeline(config, vault, evaluator)
    before = vault_snapshot(vault, mask_times=False)
    notes.sync_vault()
    stats = consumer.drain()
    assert stats.null_scores == stats.claims_evaluated > 0
    assert vault_snapshot(vault, mask_times=False) == before
    assert store.counts().null_scores == stats.claims_evaluated
    evaluator.failing = False
    report = notes.sync_vault()
    assert report.rescore_blocks > 0 and report.dirty_blocks == 0
    consumer.drain()
    assert store.counts().null_scores == 0
    assert "aclarai:entailed_score=0.80" in (vault / "meetings/2024-06-03 Standup.md").read_text()
    store.close()
    queue.close()


class EditingEvaluator(FlakyEvaluator):
    """Simulates the user typing into the note while its claims are being evaluated."""

    def __init__(self, note: Path) -> None:
        super().__init__()
        self.failing = False
        self.note = note
        self.edited = False

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        if not self.edited:
            self.edited = True
            with self.note.open("a") as handle:
                handle.write("\nuser typed this while aclarai was busy\n")
        return super().evaluate_batch(items)


def test_a_note_edited_during_evaluation_is_never_overwritten(vault: Path, config: Config) -> None:
    for other in vault.rglob("*.md"):
        if other.name != "2024-06-03 Standup.md":
            other.unlink()
    note = vault / "meetings/2024-06-03 Standup.md"
    notes, consumer, store, queue = _pipeline(config, vault, EditingEvaluator(note))
    notes.sync_vault()
    stats = consumer.drain()
    assert stats.conflicts == 1
    assert note.read_text().endswith("user typed this while aclarai was busy\n")
    assert queue.depth() > 0
    consumer.drain()
    while queue.next_due_in_s() is not None:
        time.sleep(queue.next_due_in_s() or 0)
        consumer.drain()
    text = note.read_text()
    assert "user typed this while aclarai was busy" in text
    assert "aclarai:entailed_score=0.80" in text
    store.close()
    queue.close()


def test_a_paragraph_copied_into_a_dirty_note_never_takes_over_the_original(
    vault: Path, config: Config
) -> None:
    resync(config, vault)
    source = vault / "meetings/2024-06-03 Standup.md"
    original = parse_note(source.read_text()).blocks[1]
    planning = vault / "meetings/2024-06-05 Planning.md"
    text = planning.read_text()
    lines = source.read_text().splitlines()
    copied = "\n".join(lines[original.line - 1 : original.line + 1])
    planning.write_text(
        text.replace("Let's keep the buffer at 10 percent.", "Let's keep the buffer at 15 percent.")
        + "\n"
        + copied
        + "\n"
    )
    summary = resync(config, vault)
    assert summary.synced.duplicates == []
    original_key = block_key("meetings/2024-06-03 Standup.md", original.id)
    store = build_store(config, config.state_dir_for(vault))
    try:
        kept = store.get_blocks([original_key])[original_key]
        assert (kept.text, kept.deleted_at) == (original.text, None)
        copies = [
            b
            for b in store.blocks_of_file("meetings/2024-06-05 Planning.md")
            if b.block_id == original.id
        ]
        assert [b.id for b in copies] == [block_key("meetings/2024-06-05 Planning.md", original.id)]
    finally:
        store.close()


def score_comments(root: Path) -> dict[str, dict[str, dict[str, float]]]:
    """Each note's blocks' score comments (what a reader of the note sees), without ``ver``."""
    return {
        p.relative_to(root).as_posix(): {
            b.id: dict(b.scores) for b in parse_note(p.read_text()).blocks
        }
        for p in sorted(root.rglob("*.md"))
        if p.relative_to(root).as_posix() != DASHBOARD
    }


def test_scores_that_read_the_neighbours_follow_an_edit_of_the_neighbour(
    tmp_path: Path,
) -> None:
    """Decontextualization reads the blocks around a claim's block: editing a neighbour
    re-scores it, so an incremental pass ends where a fresh resync of the same text does."""
    note = (
        "<!-- aclarai:title=Ops -->\n\n"
        "alice: We moved the server to Frankfurt last week.\n<!-- aclarai:id=blk-a ver=1 -->\n\n"
        "bob: The server now restarts every night at 02:00.\n<!-- aclarai:id=blk-b ver=1 -->\n\n"
        "carol: Backups run at 03:00 on the same host.\n<!-- aclarai:id=blk-c ver=1 -->\n"
    )
    incremental, fresh = tmp_path / "incremental", tmp_path / "fresh"
    for root in (incremental, fresh):
        root.mkdir()
        (root / "ops.md").write_text(note)
    config = load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state-incremental")})
    resync(config, incremental)
    before = score_comments(incremental)["ops.md"]["blk-b"]

    edited = note.replace("We moved the server to Frankfurt", "We moved to Frankfurt")
    (incremental / "ops.md").write_text(
        (incremental / "ops.md")
        .read_text()
        .replace("We moved the server to Frankfurt", "We moved to Frankfurt")
    )
    summary = resync(config, incremental)
    assert summary.synced.dirty_blocks == 1

    (fresh / "ops.md").write_text(edited)
    resync(load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state-fresh")}), fresh)
    after = score_comments(incremental)["ops.md"]["blk-b"]
    assert after != before, "the edit took the antecedent of 'the server' out of blk-b's window"
    assert score_comments(incremental) == score_comments(fresh)
    [b] = [b for b in parse_note((incremental / "ops.md").read_text()).blocks if b.id == "blk-b"]
    assert b.version == 3, "one ver +1 for its first scores, one for the re-score"
