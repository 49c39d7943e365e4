from __future__ import annotations

import hashlib
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aclarai.daemon.vault.writer import (
    TEMP_PREFIX,
    create_if_absent,
    remove_stale_temp_files,
    sha256_bytes,
    write_if_unchanged,
)
from aclarai.parsers import WriteConflict


def test_replaces_content_and_keeps_mode(tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_bytes(b"old\r\n")
    note.chmod(0o640)
    st = write_if_unchanged(note, b"new\r\n", expected_sha256=sha256_bytes(b"old\r\n"))
    assert note.read_bytes() == b"new\r\n"
    assert stat.S_IMODE(note.stat().st_mode) == 0o640
    assert st.st_size == 5
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(TEMP_PREFIX)]


def test_conflict_when_file_changed_since_read(tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_bytes(b"what we read")
    expected = sha256_bytes(b"what we read")
    note.write_bytes(b"what the user typed meanwhile")
    with pytest.raises(WriteConflict) as info:
        write_if_unchanged(note, b"ours", expected_sha256=expected)
    assert info.value.path == note
    assert note.read_bytes() == b"what the user typed meanwhile"
    assert list(tmp_path.iterdir()) == [note]


def test_conflict_when_file_vanished(tmp_path: Path) -> None:
    with pytest.raises(WriteConflict):
        write_if_unchanged(tmp_path / "gone.md", b"x", expected_sha256=sha256_bytes(b""))
    assert list(tmp_path.iterdir()) == []


def test_create_if_absent_creates_with_the_mode_and_no_temp_left(tmp_path: Path) -> None:
    st = create_if_absent(tmp_path / "new.md", b"fresh\n", mode=0o640)
    assert (tmp_path / "new.md").read_bytes() == b"fresh\n"
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640
    assert st.st_size == 6
    assert [p.name for p in tmp_path.iterdir()] == ["new.md"]


def test_create_if_absent_never_replaces_an_existing_file(tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_bytes(b"someone else's")
    with pytest.raises(WriteConflict) as info:
        create_if_absent(note, b"ours")
    assert info.value.path == note
    assert note.read_bytes() == b"someone else's"
    assert list(tmp_path.iterdir()) == [note]


def test_remove_stale_temp_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / f"{TEMP_PREFIX}abc-note.md.tmp").write_text("partial")
    (tmp_path / "sub" / "note.md").write_text("real")
    assert remove_stale_temp_files(tmp_path) == 1
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["note.md"]


WRITER_LOOP = """
import sys
from pathlib import Path
from aclarai.daemon.vault.writer import sha256_bytes, write_if_unchanged
note = Path(sys.argv[1])
versions = [b"A" * 300_000 + b"\\n", b"B" * 300_000 + b"\\n"]
print("ready", flush=True)
i = 0
while True:
    current = note.read_bytes()
    write_if_unchanged(note, versions[i % 2], expected_sha256=sha256_bytes(current))
    i += 1
"""


def test_kill_9_at_random_moments_leaves_old_or_new(tmp_path: Path) -> None:
    """A crash at any instant leaves the old or the new note, never a mix."""
    note = tmp_path / "note.md"
    versions = {
        hashlib.sha256(b"A" * 300_000 + b"\n").hexdigest(),
        hashlib.sha256(b"B" * 300_000 + b"\n").hexdigest(),
    }
    note.write_bytes(b"A" * 300_000 + b"\n")
    for trial in range(12):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER_LOOP, str(note)], stdout=subprocess.PIPE
        )
        assert proc.stdout is not None
        proc.stdout.readline()
        time.sleep(0.01 + (trial % 5) * 0.013)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert hashlib.sha256(note.read_bytes()).hexdigest() in versions
    remove_stale_temp_files(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["note.md"]
