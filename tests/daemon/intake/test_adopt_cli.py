"""``aclarai adopt`` and ``adopt.folders`` on real notes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aclarai.daemon.cli import main
from aclarai.parsers import parse_note
from tests.helpers.cli import cli, daemon_env

PROSE = (
    "# Retro\n\nThe release slipped by two days because the load test failed.\n\n"
    "- Dana fixes the test.\n"
)


def test_adopt_cli_dry_run_then_real(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "retro.md").write_text(PROSE)
    (notes / ".obsidian").mkdir()
    (notes / ".obsidian" / "x.md").write_text("not a note")
    assert main(["adopt", str(notes), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "blocks marked   2 (would be)" in out
    assert re.search(rf"{re.escape(str(notes / 'retro.md'))}:3: blk-[0-9a-f]{{16}}", out)
    assert (notes / "retro.md").read_text() == PROSE
    assert main(["adopt", str(notes / "retro.md")]) == 0
    adopted = (notes / "retro.md").read_text()
    assert [b.text for b in parse_note(adopted).blocks] == [
        "The release slipped by two days because the load test failed.",
        "- Dana fixes the test.",
    ]
    assert main(["adopt", str(notes)]) == 0
    assert (notes / "retro.md").read_text() == adopted
    assert (notes / ".obsidian" / "x.md").read_text() == "not a note"


def test_adopt_reports_a_note_it_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.md").write_bytes(b"caf\xe9\n")
    assert main(["adopt", str(tmp_path / "bad.md")]) == 1
    assert "bad.md" in capsys.readouterr().err


def test_resync_adopts_the_configured_folders(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "journal").mkdir(parents=True)
    (vault / "journal" / "day.md").write_text(PROSE)
    (vault / "other.md").write_text(PROSE)
    cli("resync", str(vault), env=daemon_env(ACLARAI_ADOPT__FOLDERS='["journal"]'))
    blocks = parse_note((vault / "journal" / "day.md").read_text()).blocks
    assert len(blocks) == 2 and any(b.scores for b in blocks)
    assert (vault / "other.md").read_text() == PROSE
