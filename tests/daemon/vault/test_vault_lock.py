"""The vault lock after a crash (issue #22, items 1 and 2): a lock is held by the process that
took it, never by its children; one whose recorded holder is gone is taken over at once, in
one line; a command that must wait says at once whom it waits for and how long."""

from __future__ import annotations

import fcntl
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aclarai.daemon.vault.lock import (
    LOCK_NAME,
    VAULT_DIR,
    VAULT_LOCK_NAME,
    Holder,
    VaultLock,
    is_held,
    live_holder,
    read_holder,
)
from aclarai.daemon.vault.processes import current, is_alive
from aclarai.parsers import VaultBusy
from tests.helpers.cli import daemon_env
from tests.helpers.vault import note_text

HOLD = """
import sys, time
from pathlib import Path
from aclarai.daemon.vault.lock import VaultLock
lock = VaultLock(Path(sys.argv[1]), sys.argv[3], vault=Path(sys.argv[2]))
lock.acquire()
print("ready", flush=True)
time.sleep(120)
"""


def hold(state: Path, vault: Path, role: str = "resync") -> subprocess.Popen[str]:
    """A process holding the vault's lock until killed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(state), str(vault), role],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    vault, state = tmp_path / "vault", tmp_path / "state"
    vault.mkdir()
    (vault / "a.md").write_text(note_text([("blk-a1", "alice: The deploy failed.")]))
    yield state, vault


def test_a_lock_whose_holder_was_killed_is_taken_over_at_once_in_one_line(
    dirs: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    state, vault = dirs
    holder = hold(state, vault)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    # The files still name the dead holder: status must not take it for a running one.
    assert (state / LOCK_NAME).read_text().startswith(f"{holder.pid} resync")
    assert not is_held(state) and read_holder(state / LOCK_NAME) == "nobody"
    caplog.set_level(logging.WARNING, logger="aclarai")
    lock = VaultLock(state, "resync", vault=vault)
    lock.acquire(timeout_s=0.0)
    try:
        now = live_holder(state)
        assert now is not None and (now.pid, now.role, now.state_dir, now.start) == (
            os.getpid(),
            "resync",
            str(state),
            current().start,
        )
    finally:
        lock.release()
    assert not is_held(state)
    [line] = [r.getMessage() for r in caplog.records if "took over" in r.getMessage()]
    assert f"pid {holder.pid} (" in line and str(vault) in line
    assert "ended without releasing it" in line


def test_a_lock_kept_open_by_a_leftover_process_is_taken_over(
    dirs: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's case: the holder died, a process it left behind still has the lock file
    ``flock``-ed (here one that took it itself, as an older aclarai's worker did)."""
    state, vault = dirs
    dead = Holder(999_999_999, "resync", "aclarai resync vault", str(state), "1", "then")
    lock_file = vault / VAULT_DIR / VAULT_LOCK_NAME
    lock_file.parent.mkdir()
    lock_file.write_text(dead.record())
    leftover = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('ready', flush=True)\n"
            "time.sleep(120)\n",
            str(lock_file),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert leftover.stdout is not None and leftover.stdout.readline() == "ready\n"
        caplog.set_level(logging.WARNING, logger="aclarai")
        lock = VaultLock(state, "resync", vault=vault)
        lock.acquire(timeout_s=0.0)
        try:
            assert lock_file.read_text().startswith(f"{os.getpid()} resync\n")
            # A third comer finds the lock held by us, not free.
            fd = os.open(lock_file, os.O_RDWR)
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.close(fd)
        finally:
            lock.release()
        assert leftover.poll() is None
    finally:
        leftover.kill()
        leftover.wait()
    assert sum("took over the lock" in r.getMessage() for r in caplog.records) == 1


def test_waiting_for_a_live_holder_says_who_and_how_long_at_once(
    dirs: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    state, vault = dirs
    holder = hold(state, vault)
    try:
        caplog.set_level(logging.WARNING, logger="aclarai")
        with pytest.raises(VaultBusy) as busy:
            VaultLock(state, "resync", vault=vault).acquire(timeout_s=0.6, poll_s=0.05)
        [line] = [r.getMessage() for r in caplog.records]
        assert line.startswith(f"waiting for pid {holder.pid} (")
        assert re.search(r": up to 0\.[56] s; Ctrl-C to give up$", line), line
        assert f"pid {holder.pid} (" in str(busy.value)
    finally:
        holder.kill()
        holder.wait()


def test_plain_resync_says_at_once_whom_it_waits_for(dirs: tuple[Path, Path]) -> None:
    """Plain ``aclarai resync VAULT`` waits for a live holder: never in silence."""
    state, vault = dirs
    holder = hold(state, vault)
    env = daemon_env(ACLARAI_STATE_DIR=str(state))
    waiting = subprocess.Popen(
        [sys.executable, "-m", "aclarai.daemon.cli", "resync", str(vault)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert waiting.stderr is not None
        line = waiting.stderr.readline()
        assert f"waiting for pid {holder.pid} (" in line
        assert line.rstrip().endswith("until it ends; Ctrl-C to give up")
        assert waiting.poll() is None
        # Once the holder dies, the waiting resync takes over and finishes.
        holder.kill()
        holder.wait()
        assert waiting.wait(timeout=60) == 0
        assert "took over the lock" in waiting.stderr.read()
    finally:
        for proc in (holder, waiting):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_resync_wait_still_exits_75_naming_a_live_holder(dirs: tuple[Path, Path]) -> None:
    state, vault = dirs
    holder = hold(state, vault)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "aclarai.daemon.cli", "resync", str(vault), "--wait", "0.5"],
            env=daemon_env(ACLARAI_STATE_DIR=str(state)),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 75
    waiting, refused = done.stderr.splitlines()
    assert f"waiting for pid {holder.pid} (" in waiting and re.search(r"up to 0\.[45] s", waiting)
    assert "another aclarai holds this vault" in refused and f"pid {holder.pid} (" in refused


def test_a_reused_pid_is_not_its_former_holder() -> None:
    me = current()
    assert is_alive(me.pid, me.start)
    assert not is_alive(me.pid, me.start + "0")
    assert is_alive(me.pid, None)
    assert not Holder(me.pid, "resync", start=me.start + "0").alive()


def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while Path(f"/proc/{child.pid}/stat").read_text().split(")")[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not is_alive(child.pid, None)
    child.wait()
