from __future__ import annotations

import hashlib
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aclarai.daemon.vault.processes import current
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


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def test_remove_stale_temp_files_leaves_those_a_live_writer_writes(tmp_path: Path) -> None:
    me = current()
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "note.md").write_text("real")
    names = {
        "dead": f"{TEMP_PREFIX}{dead_pid()}-1-0123abcd-note.md.tmp",
        "pid reused": f"{TEMP_PREFIX}{me.pid}-1{me.start}-0123abcd-note.md.tmp",
        "unnamed, old": f"{TEMP_PREFIX}0123456789ab-note.md.tmp",
        "live": f"{TEMP_PREFIX}{me.pid}-{me.start}-0123abcd-note.md.tmp",
        "unnamed, fresh": f"{TEMP_PREFIX}ba9876543210-note.md.tmp",
    }
    for name in names.values():
        (sub / name).write_text("partial")
    hour_ago = time.time() - 3600
    os.utime(sub / names["unnamed, old"], (hour_ago, hour_ago))
    assert remove_stale_temp_files(tmp_path) == 3
    assert sorted(p.name for p in sub.iterdir()) == sorted(
        ["note.md", names["live"], names["unnamed, fresh"]]
    )


def test_remove_stale_temp_files_of_one_note_leaves_its_neighbours_alone(tmp_path: Path) -> None:
    gone = dead_pid()
    for name in ("a [1].md", "b.md"):
        (tmp_path / f"{TEMP_PREFIX}{gone}-7-0123abcd-{name}.tmp").write_text("partial")
    assert remove_stale_temp_files(tmp_path / "a [1].md") == 1
    assert [p.name for p in tmp_path.iterdir()] == [f"{TEMP_PREFIX}{gone}-7-0123abcd-b.md.tmp"]


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


@pytest.mark.slow
def test_kill_9_at_random_moments_leaves_old_or_new(tmp_path: Path) -> None:
    """A crash at any instant leaves the old or the new note, never a mix."""
    note = tmp_path / "note.md"
    versions = {
        hashlib.sha256(b"A" * 300_000 + b"\n").hexdigest(),
        hashlib.sha256(b"B" * 300_000 + b"\n").hexdigest(),
    }
    note.write_bytes(b"A" * 300_000 + b"\n")
    earlier: set[str] = set()
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
        left = {p.name for p in tmp_path.iterdir() if p.name.startswith(TEMP_PREFIX)}
        # What a crash leaves names its writer, so the next command knows it is stale.
        assert all(name.startswith(f"{TEMP_PREFIX}{proc.pid}-") for name in left - earlier)
        earlier = left
    remove_stale_temp_files(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["note.md"]
