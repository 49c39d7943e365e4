"""The README's first steps on a vault of ordinary notes (a copy of kepano's real vault): resync
before adopting says how to adopt, then adopt and resync grade it."""

from __future__ import annotations

import shutil
from pathlib import Path

from aclarai.daemon.config import load_config
from aclarai.daemon.loop.resync import format_summary, resync
from tests.helpers.cli import cli, daemon_env
from tests.helpers.vault import KEPANO

ROOT = Path(__file__).resolve().parents[2]


def files_of(vault: Path) -> dict[str, bytes]:
    """Every file of the vault but the lock aclarai holds it by (``.aclarai/lock``)."""
    return {
        path.relative_to(vault).as_posix(): path.read_bytes()
        for path in vault.rglob("*")
        if path.is_file() and path.relative_to(vault).parts[0] != ".aclarai"
    }


def test_resync_on_a_vault_with_no_blocks_says_how_to_adopt_it(tmp_path: Path) -> None:
    vault = tmp_path / "my vault"
    shutil.copytree(KEPANO, vault)
    notes = sum(1 for _ in vault.rglob("*.md"))
    env = daemon_env(ACLARAI_STATE_DIR=str(tmp_path / "state"))
    before = files_of(vault)

    printed = cli("resync", str(vault), env=env)

    # Nothing to grade, nothing written: no dashboard; only the vault's lock, in its dot folder.
    assert files_of(vault) == before
    assert not (vault / "aclarai").exists()

    assert printed.splitlines()[2:] == [
        f"{notes} note(s), none with aclarai blocks yet: nothing to grade.",
        "To grade your own notes, give each paragraph a block id first, then resync:",
        f"  aclarai adopt '{vault}'",
        f"  aclarai resync '{vault}'",
        "`aclarai adopt FOLDER` adopts one folder only, `aclarai unadopt` takes the ids out",
        "again, and adopt.folders in the config has resync and the daemon adopt new notes.",
    ]
    assert "blocks parsed" not in printed

    cli("adopt", str(vault), env=env)
    graded = cli("resync", str(vault), env=env)
    assert "none with aclarai blocks" not in graded
    assert "blocks parsed" in graded and "claims evaluated" in graded


def test_a_graph_with_blocks_is_reported_as_usual_even_when_no_note_was_read(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(ROOT / "sample_vault", vault)
    config = load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state")})
    resync(config, vault)

    again = format_summary(resync(config, vault))

    assert "nothing to grade" not in again
    assert "graph: blocks / claims" in again


def test_the_resync_after_unadopt_reports_the_blocks_it_removed(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(KEPANO, vault)
    env = daemon_env(ACLARAI_STATE_DIR=str(tmp_path / "state"))
    cli("adopt", str(vault), env=env)
    cli("resync", str(vault), env=env)
    cli("unadopt", str(vault), env=env)

    after = cli("resync", str(vault), env=env)
    again = cli("resync", str(vault), env=env)

    removed = next(line for line in after.splitlines() if line.startswith("blocks marked deleted"))
    assert int(removed.split()[-1]) > 0
    assert "nothing to grade" not in after
    assert "nothing to grade" in again
