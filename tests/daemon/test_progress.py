"""Progress bars of ``adopt``, ``resync`` and ``import``: on a terminal (a real pty) a tqdm bar
on stderr; in a pipe or a log, not a byte of it. Real subprocesses on a copy of a real vault."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.helpers.cli import daemon_env
from tests.helpers.vault import KEPANO

ROOT = Path(__file__).resolve().parents[2]
CHAT = (
    "alice: The deploy to staging failed twice on Tuesday.\n"
    "bob: I rolled back to v2.3 and it is stable now.\n"
    "alice: Then we ship on Thursday.\n"
    "bob: Agreed, Thursday it is.\n"
)


pytestmark = pytest.mark.vault(base=KEPANO)


def _env(tmp_path: Path) -> dict[str, str]:
    return daemon_env(ACLARAI_STATE_DIR=str(tmp_path / "state"))


def _on_a_pipe(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "aclarai.daemon.cli", *args],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def _on_a_terminal(tmp_path: Path, *args: str) -> tuple[str, str]:
    """Run with stderr on a pty (stdout stays a pipe); return (stdout, what the pty showed)."""
    leader, follower = os.openpty()
    # A new pty is 0 columns wide; a terminal window is not.
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "aclarai.daemon.cli", *args],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=follower,
        text=True,
    )
    os.close(follower)
    shown = bytearray()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the pty is closed once the process and its children are gone
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    stdout, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, shown.decode("utf-8", "replace")
    return stdout, shown.decode("utf-8", "replace")


def test_adopt_and_resync_show_progress_on_a_terminal(tmp_path: Path, vault: Path) -> None:
    notes = sum(1 for _ in vault.rglob("*.md"))

    stdout, shown = _on_a_terminal(tmp_path, "adopt", str(vault))
    assert "adopting: 100%" in shown and f"{notes}/{notes}" in shown
    assert "\r" in shown, "the bar is redrawn in place"
    assert "adopting" not in stdout, "the summary on stdout stays clean"

    stdout, shown = _on_a_terminal(tmp_path, "resync", str(vault))
    assert "syncing: " in shown and " notes" in shown
    assert "syncing" not in stdout
    assert stdout.startswith("aclarai resync")


def test_no_progress_in_a_pipe(tmp_path: Path, vault: Path) -> None:
    adopt = _on_a_pipe(tmp_path, "adopt", str(vault))
    resync = _on_a_pipe(tmp_path, "resync", str(vault))

    for done in (adopt, resync):
        assert "\r" not in done.stderr + done.stdout
        assert "adopting" not in done.stderr and "syncing" not in done.stderr
        assert "%|" not in done.stderr
    assert "blocks marked" in adopt.stdout
    assert resync.stdout.startswith("aclarai resync")


def test_import_shows_a_tqdm_bar_on_a_terminal_and_a_line_in_a_pipe(
    tmp_path: Path, vault: Path
) -> None:
    chat = tmp_path / "meeting.txt"
    chat.write_text(CHAT, encoding="utf-8")

    _, shown = _on_a_terminal(tmp_path, "import", str(chat), "--vault", str(vault), "--dry-run")
    assert "importing: 100%" in shown and "1/1" in shown

    piped = _on_a_pipe(tmp_path, "import", str(chat), "--vault", str(vault), "--dry-run")
    assert piped.stderr.splitlines()[-1] == "importing: 1 conversation(s)"
    assert "\r" not in piped.stderr


def test_evaluate_counts_its_lines_on_a_terminal_only(tmp_path: Path) -> None:
    lines = tmp_path / "pairs.jsonl"
    pair = '{"id": "%d", "source": "The deploy failed twice.", "claim": "The deploy failed."}\n'
    lines.write_text("".join(pair % i for i in range(3)), encoding="utf-8")

    stdout, shown = _on_a_terminal(tmp_path, "evaluate", str(lines))
    assert "evaluating: 3 lines" in shown
    assert len(stdout.splitlines()) == 3 and "evaluating" not in stdout

    piped = _on_a_pipe(tmp_path, "evaluate", str(lines))
    assert "evaluating" not in piped.stderr and "\r" not in piped.stderr
