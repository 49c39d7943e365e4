"""The dashboard note of a real vault: written by resync and the daemon, rendered by a real
Markdown renderer, every link resolving to a note and a block anchor; and ``aclarai claims``."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from aclarai.daemon.cli import main
from aclarai.daemon.config import Config, load_config
from aclarai.daemon.factory import build_queue, build_store, build_vault
from aclarai.daemon.loop.resync import format_summary, resync
from aclarai.daemon.reports.dashboard import DashboardRefresher
from aclarai.graph import GraphStore, key_block_id
from aclarai.parsers import ConfigError, shown_threshold
from tests.helpers.cli import DaemonProcess, wait_until
from tests.helpers.vault import DASHBOARD, note_text

ROOT = Path(__file__).resolve().parents[3]
WIKILINK = re.compile(r"\[\[([^\]|]+?)(?:\|([^\]]*))?\]\]")
# A block of hostile text: everything a wikilink's display text or a table cell must survive.
ODD_NOTE = note_text(
    [("blk-odd1", "carol: The cache | proxy on host #12 ^failed [[twice]] on Monday.")],
    title="Odd",
)


pytestmark = pytest.mark.vault(files={"odd/Pipes and hashes.md": ODD_NOTE})


def _links(markdown: str) -> list[tuple[str, str]]:
    """Every wikilink (target, display) in the text a Markdown renderer shows, table cells
    included. Wikilinks are not CommonMark: they are found in the rendered inline text, so a
    link the renderer broke apart (by a table cell or emphasis) is not found whole."""
    md = MarkdownIt("commonmark").enable("table")
    texts = []
    for token in md.parse(markdown):
        if token.type == "inline":
            texts.append("".join(c.content for c in token.children or [] if c.type == "text"))
    return [(m.group(1), m.group(2) or "") for text in texts for m in WIKILINK.finditer(text)]


def _anchor_lines(note: Path) -> set[str]:
    return {
        line.strip()[1:]
        for line in note.read_text(encoding="utf-8").splitlines()
        if re.fullmatch(r"\^[A-Za-z0-9_-]+", line.strip())
    }


def test_resync_writes_a_dashboard_whose_every_link_resolves(vault: Path, config: Config) -> None:
    summary = resync(config, vault)

    assert summary.dashboard is not None and summary.dashboard.written
    assert summary.dashboard.path == vault / DASHBOARD
    assert re.search(
        rf"\ndashboard +{re.escape(str(vault / DASHBOARD))} \(written\)\n",
        (format_summary(summary)),
    )
    text = (vault / DASHBOARD).read_text(encoding="utf-8")
    links = _links(text)
    block_links = [(t, d) for t, d in links if "#^" in t]
    assert len(block_links) >= 4 + 8, "the low-quality list and one weakest claim per note"
    for target, display in links:
        path, _, anchor = target.partition("#^")
        note = vault / f"{path}.md"
        assert note.is_file(), f"{target} names no note"
        if anchor:
            assert anchor in _anchor_lines(note), f"{target}: no ^{anchor} line in {note}"
            assert display.startswith(note.stem + " › "), display
    odd = [d for t, d in block_links if t == "odd/Pipes and hashes#^blk-odd1"]
    assert odd == ["Pipes and hashes › carol: The cache ¦ proxy on …"]
    assert "## Notes" in text and "| [[odd/Pipes and hashes]] | 1 | " in text


def test_unchanged_vault_leaves_the_dashboard_alone(vault: Path, config: Config) -> None:
    resync(config, vault)
    before = (vault / DASHBOARD).stat()
    content = (vault / DASHBOARD).read_bytes()

    again = resync(config, vault)

    assert again.dashboard is not None and not again.dashboard.written
    assert (vault / DASHBOARD).read_bytes() == content
    assert (vault / DASHBOARD).stat().st_mtime_ns == before.st_mtime_ns


def test_the_dashboard_is_never_a_note(vault: Path, config: Config) -> None:
    resync(config, vault)
    # Even with text that looks like a Tier 1 block, it is never scanned or graded.
    dashboard = vault / DASHBOARD
    dashboard.write_text(note_text([("blk-dash1", "eve: The dashboard is a note.")]))

    again = resync(config, vault)

    store = build_store(config, config.state_dir_for(vault))
    try:
        assert DASHBOARD not in store.file_states()
        assert store.live_blocks_with_ids(["blk-dash1"]) == []
    finally:
        store.close()
    notes = [note.rel for note in build_vault(config, vault).iter_notes()]
    assert DASHBOARD not in notes
    assert again.synced.files_seen == len(notes)
    assert again.dashboard is not None and again.dashboard.written
    assert "blk-dash1" not in dashboard.read_text()


def test_null_path_turns_the_dashboard_off(vault: Path, tmp_path: Path) -> None:
    config = load_config(
        env={"ACLARAI_STATE_DIR": str(tmp_path / "state"), "ACLARAI_DASHBOARD__PATH": "null"}
    )
    summary = resync(config, vault)
    assert summary.dashboard is None
    assert not (vault / "aclarai" / "Dashboard.md").exists()
    with pytest.raises(ConfigError, match=r"dashboard\.path"):
        load_config(env={"ACLARAI_DASHBOARD__PATH": "aclarai/Dashboard.txt"})
    outside = load_config(env={"ACLARAI_DASHBOARD__PATH": "../outside.md"})
    with pytest.raises(ConfigError, match=r"dashboard\.path: '../outside.md' is outside"):
        resync(outside, vault)
    assert not (vault.parent / "outside.md").exists()


def _fail_one_claim(store: GraphStore, block_id: str) -> str:
    """Record a failed evaluation (null entailment) on the block's first claim; its id."""
    [block] = store.live_blocks_with_ids([block_id])
    [first, *_] = store.claims_of_blocks([block.id])[block.id]
    assert first.score is not None
    store.write_scores(
        [dataclasses.replace(first.score, entailed_score=None, status="timeout", verdict=None)]
    )
    return first.id


def test_failed_evaluations_and_the_queue_are_shown(vault: Path, config: Config) -> None:
    resync(config, vault)
    state = config.state_dir_for(vault)
    store, queue = build_store(config, state), build_queue(config, state)
    try:
        _fail_one_claim(store, "blk-a5cd68")
        queue.set_meta("paused", "1")
        refresher = DashboardRefresher(config, vault, store, queue, model="scripted:1")
        result = refresher.maybe_write()
    finally:
        store.close()
        queue.close()

    assert result is not None and result.written
    text = (vault / DASHBOARD).read_text()
    failed = text.split("## Failed evaluations", 1)[1]
    assert failed.startswith("\n\n1, retried on every resync.\n")
    assert "[[meetings/2024-06-03 Standup#^blk-a5cd68|" in failed
    assert "entailed null · coverage 0." in failed or "entailed null · coverage 1." in failed
    assert "status: timeout" in failed
    assert "- paused: yes" in text and "- model: scripted:1" in text


def test_refresher_writes_at_most_once_per_interval(vault: Path, tmp_path: Path) -> None:
    config = load_config(
        env={
            "ACLARAI_STATE_DIR": str(tmp_path / "state"),
            "ACLARAI_DASHBOARD__MIN_INTERVAL_S": "30",
        }
    )
    resync(config, vault)
    (vault / DASHBOARD).unlink()
    now = [1000.0]
    state = config.state_dir_for(vault)
    store, queue = build_store(config, state), build_queue(config, state)
    try:
        refresher = DashboardRefresher(config, vault, store, queue, model="m", clock=lambda: now[0])
        first = refresher.maybe_write()
        assert first is not None and first.written
        assert refresher.maybe_write() is None, "nothing marked"
        refresher.mark()
        now[0] += 29.0
        queue.set_meta("paused", "1")
        assert refresher.maybe_write() is None, "within the interval"
        assert "- paused: no" in (vault / DASHBOARD).read_text()
        now[0] += 1.0
        later = refresher.maybe_write()
        assert later is not None and later.written
        assert "- paused: yes" in (vault / DASHBOARD).read_text()
    finally:
        store.close()
        queue.close()


def test_the_daemon_rewrites_the_dashboard_after_a_drain(
    vault: Path, start_daemon: Callable[..., DaemonProcess]
) -> None:
    daemon = start_daemon(vault, ACLARAI_DASHBOARD__MIN_INTERVAL_S="0.2")
    dashboard = vault / DASHBOARD
    wait_until(dashboard.exists, timeout_s=20)
    note = vault / "odd" / "Pipes and hashes.md"
    note.write_text(
        ODD_NOTE + note_text([("blk-odd2", "dave: He fixed it there yesterday.")], title="x")
    )

    wait_until(lambda: "blk-odd2" in dashboard.read_text(), timeout_s=30)
    assert "| [[odd/Pipes and hashes]] | 2 | " in dashboard.read_text()
    assert daemon.stop() == 0


# --- aclarai claims ------------------------------------------------------------------------


def test_claims_lists_the_low_quality_claims_worst_first(
    vault: Path, config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    resync(config, vault)
    capsys.readouterr()

    store = build_store(config, config.state_dir_for(vault))
    try:
        below = store.low_quality_claims(shown_threshold(0.70), None)
    finally:
        store.close()

    assert main(["claims", str(vault)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(below) > 0
    assert f"#^{key_block_id(below[0].block_id)}  " in lines[0]
    qualities = [float(line.split()[0]) for line in lines]
    assert qualities == sorted(qualities) and all(q < 0.70 for q in qualities), "as shown"
    assert "meetings/2024-06-05 Planning.md#^blk-de06ce  He said it would be done by Friday." in (
        "\n".join(lines)
    )

    assert main(["claims", str(vault), "--below", "0.8", "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(records) > 4
    assert all(r["quality"] < 0.8 for r in records)
    assert set(records[0]) == {
        "claim_id",
        "claim",
        "file",
        "block_id",
        "quality",
        "entailed_score",
        "coverage_score",
        "decontextualization_score",
        "verdict",
        "justification",
        "status",
    }

    standup = "meetings/2024-06-03 Standup"
    assert main(["claims", str(vault), "--below", "0.8", "--note", standup, "--json"]) == 0
    mine = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert mine and {r["file"] for r in mine} == {f"{standup}.md"}
    assert mine == [r for r in records if r["file"] == f"{standup}.md"]
    assert main(["claims", str(vault), "--note", standup]) == 0
    by_name = capsys.readouterr().out
    assert main(["claims", str(vault), "--note", str(vault / f"{standup}.md")]) == 0
    by_path = capsys.readouterr().out
    assert by_path == by_name and "Standup.md#^" in by_name
    assert set(by_name.splitlines()) <= set(lines)


def test_claims_null_lists_failed_evaluations_with_their_status(
    vault: Path, config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    resync(config, vault)
    store = build_store(config, config.state_dir_for(vault))
    try:
        claim_id = _fail_one_claim(store, "blk-a5cd68")
    finally:
        store.close()
    capsys.readouterr()

    assert main(["claims", str(vault), "--null", "--json"]) == 0
    [record] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (record["claim_id"], record["status"], record["quality"]) == (claim_id, "timeout", None)
    assert record["entailed_score"] is None and record["coverage_score"] is not None

    assert main(["claims", str(vault), "--null"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("(timeout)")


def test_claims_before_any_resync_is_one_error_line(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["claims", str(vault)]) == 1
    assert capsys.readouterr().err.strip() == "aclarai: no state yet: run `aclarai resync` first"


def test_a_pass_that_changes_nothing_leaves_the_dashboard_without_asking_the_store(
    vault: Path, config: Config
) -> None:
    first = resync(config, vault)
    assert first.dashboard is not None and first.dashboard.written
    written = (vault / DASHBOARD).stat().st_mtime_ns

    idle = resync(config, vault)

    assert idle.dashboard is not None and not idle.dashboard.written
    assert (vault / DASHBOARD).stat().st_mtime_ns == written
    (vault / DASHBOARD).unlink()
    assert resync(config, vault).dashboard.written, "a missing dashboard is written again"


def test_a_claim_shown_as_0_70_is_not_listed_below_0_70(
    vault: Path, config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    resync(config, vault)
    state = config.state_dir_for(vault)
    store, queue = build_store(config, state), build_queue(config, state)
    try:
        [first, *_] = store.low_quality_claims(1.01, 1)
        assert first.score is not None
        three = dict.fromkeys(("entailed_score", "coverage_score", "decontextualization_score"))
        store.write_scores([dataclasses.replace(first.score, **{k: 0.697 for k in three})])
        result = DashboardRefresher(config, vault, store, queue, model="m").maybe_write()
    finally:
        store.close()
        queue.close()

    assert result is not None and result.written
    text = (vault / DASHBOARD).read_text(encoding="utf-8")
    listed = text.split("## Claims below quality 0.70", 1)[1].split("\n## ", 1)[0]
    shown = re.findall(r"^- \*\*(\d\.\d\d)\*\*", listed, re.M)
    assert shown and "0.70" not in shown and all(float(q) < 0.70 for q in shown)
    assert main(["claims", str(vault)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(float(line.split()[0]) < 0.70 for line in lines)
    assert main(["claims", str(vault), "--below", "0.71", "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert first.id in {r["claim_id"] for r in records}, "shown as 0.70, it is below 0.71"
    assert main(["claims", str(vault), "--json"]) == 0
    ids = [json.loads(line)["claim_id"] for line in capsys.readouterr().out.splitlines()]
    assert first.id not in ids and len(ids) == len(lines)


def test_the_claims_below_the_threshold_are_counted_alike_everywhere(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # At 0.70 the sample vault has claims whose quality is below it and shows as 0.70; the
    # incident note's claims then stay in the graph with its deleted blocks.
    env = ["--log-level", "WARNING"]
    assert main([*env, "resync", str(vault)]) == 0
    capsys.readouterr()
    incident = vault / "meetings" / "2024-06-07 Incident review.md"
    incident.unlink()
    assert main([*env, "resync", str(vault)]) == 0
    summary = capsys.readouterr().out
    [row] = [line for line in summary.splitlines() if "claims below quality" in line]
    in_summary = int(row.split()[-1])
    assert main(["status", str(vault), "--json"]) == 0
    in_status = json.loads(capsys.readouterr().out)["counts"]["low_quality"]
    assert main(["claims", str(vault)]) == 0
    in_claims = len(capsys.readouterr().out.splitlines())
    dashboard = (vault / DASHBOARD).read_text()
    [shown] = re.findall(r"^- below quality 0\.70: (\d+)$", dashboard, flags=re.MULTILINE)
    assert in_summary == in_status == in_claims == int(shown) > 0
