"""Issue 21, item 6: the import inbox never takes over a folder of the user's own notes.

The user's folder here is the ``Clippings/`` folder of kepano's real vault (copied to tmp_path).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from aclarai.daemon.config import load_config
from aclarai.daemon.factory import build_vault
from aclarai.daemon.intake.inbox import drain_inbox, inbox_for
from aclarai.parsers import parse_note
from tests.helpers.cli import cli, daemon_env
from tests.helpers.import_samples import SPRINT, chatgpt_conversation, chatgpt_export
from tests.helpers.vault import KEPANO, vault_snapshot

SPRINT_EXPORT = chatgpt_export(chatgpt_conversation("c-sprint", "Sprint planning", SPRINT))
IMPORTED = "conversations/2024-06-03 Sprint planning.md"


def _kepano(tmp_path: Path) -> Path:
    vault = tmp_path / "kepano"
    shutil.copytree(KEPANO, vault)
    return vault


def test_default_inbox_is_aclarai_owned(tmp_path: Path) -> None:
    config = load_config(env={})
    assert config.import_.inbox == "aclarai/inbox/"
    assert config.dashboard.path is not None
    # Beside the dashboard note, in the folder aclarai owns, and not a dot folder Obsidian hides.
    assert Path(config.dashboard.path).parent == Path(config.import_.inbox).parent
    vault = _kepano(tmp_path)
    inbox = inbox_for(config, vault)
    assert inbox is not None and inbox.folder == vault / "aclarai" / "inbox"
    # Nothing of the user's vault is in it: a drain of a vault that never used it does nothing.
    before = vault_snapshot(vault, mask_times=False)
    report, waiting = drain_inbox(inbox)
    assert (report.sources, report.errors, waiting) == (0, [], False)
    assert vault_snapshot(vault, mask_times=False) == before


def test_user_inbox_notes_are_notes(tmp_path: Path) -> None:
    vault = _kepano(tmp_path)
    clippings = vault / "Clippings"
    # Beside the notes: an attachment and a folder of notes, neither of them an export.
    (clippings / "whiteboard.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    shutil.copytree(vault / "Notes", clippings / "Notes")
    notes = sorted(p.name for p in clippings.iterdir())
    (clippings / "chatgpt.json").write_bytes(SPRINT_EXPORT)
    # An error file an earlier version wrote beside a note is ours, and wrong: it goes.
    stale = clippings / "Buy wisely.md.error.txt"
    stale.write_text(f"{clippings / 'Buy wisely.md'}: not a known export format\n")
    env = daemon_env(
        ACLARAI_IMPORT__INBOX="Clippings/",
        ACLARAI_ADOPT__FOLDERS='["Clippings"]',
        ACLARAI_STATE_DIR=str(tmp_path / "state"),
    )

    out = cli("resync", str(vault), env=env)

    assert re.search(r"^  sources +1 \(0 failed\)$", out, re.MULTILINE)
    assert (vault / IMPORTED).is_file()
    # The export was imported and archived; every note stayed, with no error file beside it.
    assert sorted(p.name for p in clippings.iterdir()) == notes
    assert not list(vault.rglob("*.error.txt"))
    # The notes are notes: adopted (adopt.folders) and graded like the rest of the vault.
    for name in [
        *(n for n in notes if n.endswith(".md")),
        "Notes/Evergreen notes turn ideas into objects that you can manipulate.md",
    ]:
        blocks = parse_note((clippings / name).read_text(encoding="utf-8")).blocks
        assert blocks, name
        assert any(block.scores for block in blocks), name
    config = load_config(env=env)
    seen = {note.rel for note in build_vault(config, vault).iter_notes()}
    assert {f"Clippings/{name}" for name in notes if name.endswith(".md")} <= seen


def test_dry_run_reports_inbox_notes(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    inbox = vault / "aclarai" / "inbox"
    inbox.mkdir(parents=True)
    (inbox / "conversations.json").write_bytes(SPRINT_EXPORT)
    (inbox / "broken.json").write_bytes(b"[{")
    (inbox / "standup.md").write_text(
        "<!-- aclarai:title=Standup -->\n\n"
        "alice: The deploy failed twice on Tuesday.\n"
        "<!-- aclarai:id=blk-inbox1 ver=1 -->\n^blk-inbox1\n",
        encoding="utf-8",
    )
    before = vault_snapshot(vault, mask_times=False)
    env = daemon_env(ACLARAI_STATE_DIR=str(tmp_path / "state"))

    out = cli("resync", "--dry-run", str(vault), env=env)

    assert vault_snapshot(vault, mask_times=False) == before
    assert "step 1, import the inbox:" in out
    assert re.search(r"^  sources +2 \(1 failed\)$", out, re.MULTILINE)
    assert re.search(r"^  notes created \(would be\) +1$", out, re.MULTILINE)
    assert re.search(r"^  error: .*broken\.json: not a known export format", out, re.MULTILINE)
    assert "nothing would change" not in out
    assert re.search(r"^would sync and evaluate:\n  aclarai/inbox/standup\.md: 1 block", out, re.M)

    real = cli("resync", str(vault), env=env)
    assert re.search(r"^  notes created +1$", real, re.MULTILINE)
    assert (vault / IMPORTED).is_file()
    assert sorted(p.name for p in inbox.iterdir()) == [
        "broken.json",
        "broken.json.error.txt",
        "standup.md",
    ]
    assert any(b.scores for b in parse_note((inbox / "standup.md").read_text()).blocks)
