"""Issue 21, "Done means": adopt, resync and undo return every note byte for byte.

Generated notes (paragraphs, lists, headings, code, math, ``%%`` comments, a BOM, CRLF, the
user's own ``^ids``) go through ``adopt`` and a real ``resync`` (the library function, in
process, for speed: real store, real scores written back) and ``unadopt``; then the vendored
kepano vault does the same through the command line.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from aclarai.daemon.cli import main
from aclarai.daemon.config import load_config
from aclarai.daemon.intake.adopt import adopt_files
from aclarai.daemon.intake.unadopt import unadopt_files
from aclarai.daemon.loop.resync import resync
from aclarai.parsers import CommentKind, parse_note, scan_line
from tests.helpers.cli import cli
from tests.helpers.notes import ordinary_notes
from tests.helpers.vault import ACLARAI_FOLDERS, KEPANO, vault_snapshot


def score_lines(text: str) -> int:
    return sum(
        any(c.kind is CommentKind.SCORE for c in scan_line(line).comments)
        for line in text.split("\n")
    )


@given(st.lists(ordinary_notes(), min_size=1, max_size=3))
def test_adopt_resync_unadopt_gives_every_note_back(texts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        vault, state = Path(tmp) / "vault", Path(tmp) / "state"
        vault.mkdir()
        notes = {vault / f"note {i}.md": text.encode("utf-8") for i, text in enumerate(texts)}
        for path, data in notes.items():
            path.write_bytes(data)
        adopted = adopt_files([vault])
        assert not adopted.errors
        env = {"ACLARAI_STATE_DIR": str(state), "XDG_CONFIG_HOME": str(state / "config")}
        summary = resync(load_config(env=env), vault)
        assert summary.store_error is None
        scored = {path: path.read_text(encoding="utf-8") for path in notes}
        for text in scored.values():
            blocks = parse_note(text).blocks
            assert score_lines(text) == sum(len(b.scores) for b in blocks)
        undone = unadopt_files([vault])
        assert not undone.errors
        assert undone.blocks == adopted.blocks
        for path, data in notes.items():
            assert path.read_bytes() == data, path.name


def test_kepano_vault_adopt_resync_unadopt_round_trip(tmp_path: Path) -> None:
    vault = tmp_path / "kepano"
    shutil.copytree(KEPANO, vault)
    before = vault_snapshot(vault, skip=ACLARAI_FOLDERS)
    assert main(["adopt", str(vault)]) == 0
    cli("resync", str(vault))
    scored = vault_snapshot(vault, skip=ACLARAI_FOLDERS)
    changed = [rel for rel in before if scored[rel] != before[rel]]
    # Most of its 104 notes are properties and embeds only; the notes with prose are adopted.
    assert changed == [rel for rel in before if parse_note(scored[rel].decode()).blocks]
    assert len(changed) >= 10
    assert sum(score_lines(scored[rel].decode("utf-8")) > 0 for rel in changed) >= 5
    assert main(["unadopt", str(vault)]) == 0
    assert vault_snapshot(vault, skip=ACLARAI_FOLDERS) == before
