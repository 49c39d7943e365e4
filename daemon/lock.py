"""One daemon per vault: an advisory lock file in the vault's state dir.

The lock is held with ``flock`` for the whole life of the holder, so a crashed holder never
leaves a stale lock behind; the file also records the holder's pid and role for ``status``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

LOCK_NAME = "vault.lock"


class LockBusy(Exception):
    """Another process holds the vault lock."""


class VaultLock:
    def __init__(self, state_dir: Path, role: str) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        self.path = state_dir / LOCK_NAME
        self.role = role
        self._fd: int | None = None

    def acquire(self, *, timeout_s: float | None = 0.0, poll_s: float = 0.2) -> None:
        """Take the lock, waiting up to ``timeout_s`` (``None``: forever).

        Raises:
            LockBusy: still held by another process when the wait ends.
        """
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockBusy(f"{self.path} is held by {read_holder(self.path)}") from None
                time.sleep(poll_s)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {self.role}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> VaultLock:
        if self._fd is None:
            self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def read_holder(path: Path) -> str:
    """``"<pid> <role>"`` of the holder, or ``"nobody"``."""
    try:
        text = path.read_text().strip()
    except OSError:
        return "nobody"
    return text or "nobody"


def is_held(state_dir: Path) -> bool:
    """Whether a live process holds the vault lock (tested by trying to take it)."""
    path = state_dir / LOCK_NAME
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
