"""The inbox: dropped exports are imported, archived, graded; failures stay with a reason."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from aclarai.daemon.config import load_config
from aclarai.daemon.intake.inbox import Inbox, InboxWatcher, drain_inbox, inbox_for
from aclarai.parsers import parse_note
from tests.helpers.cli import QUIET_S, DaemonProcess, cli, daemon_env, wait_until
from tests.helpers.import_samples import (
    SPRINT,
    VENDOR,
    chatgpt_conversation,
    chatgpt_export,
    slack_zip,
    write,
)

MakeVault = Callable[..., Path]
StartDaemon = Callable[..., DaemonProcess]
SPRINT_EXPORT = chatgpt_export(chatgpt_conversation("c-sprint", "Sprint planning", SPRINT))
NOTE = "conversations/2024-06-03 Sprint planning.md"


def _inbox(vault: Path) -> Inbox:
    inbox = inbox_for(load_config(env=daemon_env()), vault)
    assert inbox is not None
    return inbox


def test_drain_imports_archives_and_keeps_failures(make_vault: MakeVault) -> None:
    vault = make_vault(
        {"aclarai/inbox/conversations.json": SPRINT_EXPORT, "aclarai/inbox/broken.json": b"[{"}
    )
    slack_zip(vault / "aclarai/inbox/slack.zip")
    report, waiting = drain_inbox(_inbox(vault))
    assert (report.sources, report.sources_failed, report.created, waiting) == (3, 1, 2, False)
    assert sorted(p.name for p in (vault / "aclarai/inbox").iterdir()) == [
        "broken.json",
        "broken.json.error.txt",
    ]
    reason = (vault / "aclarai/inbox/broken.json.error.txt").read_text()
    assert reason.startswith(f"{vault / 'aclarai/inbox/broken.json'}: not a known export format")
    assert sorted(p.name for p in (vault / ".aclarai/imported").iterdir()) == [
        "conversations.json",
        "slack.zip",
    ]
    assert (vault / NOTE).is_file()
    # The failed file is not retried until it changes; then it is, and the reason goes.
    assert drain_inbox(_inbox(vault))[0].sources == 0
    fixed = chatgpt_export(chatgpt_conversation("c2", "Fixed", VENDOR))
    write(vault / "aclarai/inbox/broken.json", fixed)
    earlier = time.time() - 60
    os.utime(vault / "aclarai/inbox/broken.json.error.txt", (earlier, earlier))
    assert drain_inbox(_inbox(vault))[0].created == 1
    assert list((vault / "aclarai/inbox").iterdir()) == []
    assert sorted(p.name for p in (vault / ".aclarai/imported").iterdir()) == [
        "broken.json",
        "conversations.json",
        "slack.zip",
    ]


def test_archive_name_collision_gets_a_suffix(make_vault: MakeVault) -> None:
    vault = make_vault({"aclarai/inbox/conversations.json": SPRINT_EXPORT})
    drain_inbox(_inbox(vault))
    write(vault / "aclarai/inbox/conversations.json", SPRINT_EXPORT)
    report, _ = drain_inbox(_inbox(vault))
    assert (report.created, report.unchanged) == (0, 1)
    assert sorted(p.name for p in (vault / ".aclarai/imported").iterdir()) == [
        "conversations (2).json",
        "conversations.json",
    ]


def test_a_file_still_being_written_waits(make_vault: MakeVault) -> None:
    vault = make_vault({"aclarai/inbox/conversations.json": SPRINT_EXPORT})
    report, waiting = drain_inbox(_inbox(vault), quiet_s=60)
    assert (report.sources, waiting) == (0, True)
    assert (vault / "aclarai/inbox/conversations.json").exists()


def test_inbox_off(make_vault: MakeVault) -> None:
    vault = make_vault({"aclarai/inbox/conversations.json": SPRINT_EXPORT})
    config = load_config(env={**daemon_env(), "ACLARAI_IMPORT__INBOX": "null"})
    assert inbox_for(config, vault) is None


def test_inbox_watcher_sees_a_drop_and_waits_for_quiet(make_vault: MakeVault) -> None:
    vault = make_vault({"aclarai/inbox/.keep": ""})
    watcher = InboxWatcher(vault / "aclarai/inbox", quiet_s=QUIET_S)
    try:
        assert watcher.due(time.monotonic())  # at start: drain what is there
        assert not watcher.due(time.monotonic())
        write(vault / "aclarai/inbox/conversations.json", SPRINT_EXPORT)
        wait_until(lambda: watcher._last_event is not None, timeout_s=5)
        assert not watcher.due(time.monotonic())
        wait_until(lambda: watcher.due(time.monotonic()), timeout_s=QUIET_S + 5)
    finally:
        watcher.stop()


def test_resync_imports_the_inbox_then_grades(make_vault: MakeVault) -> None:
    vault = make_vault(
        {"aclarai/inbox/conversations.json": SPRINT_EXPORT, "aclarai/inbox/notes.md": "alice: hi"}
    )
    out = cli("resync", str(vault))
    assert "step 1, import the inbox:" in out and "step 2, sync and grade:" in out
    assert re.search(r"^  notes created +1$", out, re.MULTILINE)
    assert re.search(r"^  sources +1 \(0 failed\)$", out, re.MULTILINE)
    note = parse_note((vault / NOTE).read_text())
    assert len(note.blocks) == 3
    assert any(block.scores for block in note.blocks)
    # A Markdown file in the inbox is a note, read like any other, and never an export.
    assert (vault / "aclarai/inbox/notes.md").read_text() == "alice: hi"
    assert not (vault / "aclarai/inbox/notes.md.error.txt").exists()
    assert re.search(r"^notes seen +2$", out, re.MULTILINE)


def test_the_daemon_imports_what_is_dropped(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    vault = make_vault({"aclarai/inbox/.keep": "", "a.md": "just prose\n", "journal/.keep": ""})
    daemon = start_daemon(vault, ACLARAI_ADOPT__FOLDERS='["journal"]')
    write(vault / "aclarai/inbox/conversations.json", SPRINT_EXPORT)
    wait_until(lambda: (vault / ".aclarai/imported/conversations.json").exists(), timeout_s=20)
    wait_until(
        lambda: (
            (vault / NOTE).exists()
            and any(b.scores for b in parse_note((vault / NOTE).read_text()).blocks)
        ),
        timeout_s=30,
    )
    daemon.wait_for_log("inbox: imported conversations.json")
    write(vault / "aclarai/inbox/bad.json", b"\xff\xfe")
    wait_until(lambda: (vault / "aclarai/inbox/bad.json.error.txt").exists(), timeout_s=20)
    assert (vault / "aclarai/inbox/bad.json").exists()
    # A note written into an adopt folder gets block ids, then scores.
    write(vault / "journal/day.md", "# Monday\n\nThe backup took 52 minutes on Monday.\n")
    wait_until(
        lambda: any(b.scores for b in parse_note((vault / "journal/day.md").read_text()).blocks),
        timeout_s=30,
    )
    assert (vault / "a.md").read_text() == "just prose\n"
