"""One writer per vault: advisory ``flock`` locks, one in the vault and one in its state dir.

The lock inside the vault, ``<vault>/.aclarai/lock``, is what keeps two writers apart whatever
state dir each was given (``ACLARAI_STATE_DIR`` differs, two configs …); the one in the state dir
tells ``status`` and ``resync`` of that state dir whether a daemon serves it. Both are taken, the
vault's first, or neither. They are held with ``flock`` for the whole life of the holder, so a
crashed holder never leaves a stale lock behind. Each file records its holder: pid and role in
the state dir (``"<pid> <role>"``), plus the command line and the state dir in the vault's, so
the one refused is told who to look for.

A vault whose ``.aclarai/`` folder cannot be written (a read-only mount) is locked through its
state dir only, with a warning.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shlex
import sys
import time
from pathlib import Path
from types import TracebackType

from aclarai.parsers import VaultBusy

log = logging.getLogger(__name__)

LOCK_NAME = "vault.lock"
VAULT_DIR = ".aclarai"
"""Our folder inside the vault (a dot folder: never walked, never watched)."""
VAULT_LOCK_NAME = "lock"
ONE_SHOT_ROLE = "resync"
"""The role of a holder that ends by itself; any other (the daemon) holds the vault until
stopped."""


class _LockFile:
    """One ``flock``-ed file whose content names its holder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def try_take(self, holder: str) -> bool:
        """Take the lock without waiting; ``False`` when another process holds it.

        Raises:
            OSError: the file cannot be created or opened.
        """
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, holder.encode())
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None


class VaultLock:
    """Both locks of a vault, taken together (see the module docstring)."""

    def __init__(self, state_dir: Path, role: str, *, vault: Path | None = None) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        self.path = state_dir / LOCK_NAME
        self.role = role
        self.state_dir = state_dir
        self._state = _LockFile(self.path)
        self._vault: _LockFile | None = None
        if vault is not None:
            folder = vault / VAULT_DIR
            try:
                folder.mkdir(exist_ok=True)
                self._vault = _LockFile(folder / VAULT_LOCK_NAME)
            except OSError as exc:
                log.warning(
                    "cannot create %s (%s): only the state dir's lock keeps other aclarai "
                    "processes out of this vault",
                    folder,
                    exc.strerror or exc,
                )
        self._held = False

    def acquire(self, *, timeout_s: float | None = 0.0, poll_s: float = 0.2) -> None:
        """Take the lock, waiting up to ``timeout_s`` (``None``: forever).

        Raises:
            VaultBusy: still held by another process when the wait ends.
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        pid = os.getpid()
        command = shlex.join(sys.orig_argv)
        while True:
            busy = self._try_take_both(
                f"{pid} {self.role}\n",
                f"{pid} {self.role}\n{command}\n{self.state_dir}\n",
            )
            if busy is None:
                self._held = True
                return
            if (deadline is not None and time.monotonic() >= deadline) or self._never_free(busy):
                raise VaultBusy(describe_holder(busy.path))
            time.sleep(poll_s)

    def _never_free(self, busy: _LockFile) -> bool:
        """Whether waiting is pointless: a service with another state dir holds the vault (it
        neither ends nor takes hand-overs sent to ours)."""
        if busy is not self._vault:
            return False
        role, state_dir = _holder_fields(busy.path)
        return role != ONE_SHOT_ROLE and state_dir not in (None, str(self.state_dir))

    def _try_take_both(self, state_holder: str, vault_holder: str) -> _LockFile | None:
        """Take both locks, or none; return the busy one."""
        vault = self._vault
        if vault is not None:
            try:
                if not vault.try_take(vault_holder):
                    return vault
            except OSError as exc:
                log.warning("cannot open %s (%s); skipping it", vault.path, exc.strerror or exc)
                self._vault = None
        if not self._state.try_take(state_holder):
            if self._vault is not None:
                self._vault.release()
            return self._state
        return None

    def release(self) -> None:
        self._state.release()
        if self._vault is not None:
            self._vault.release()
        self._held = False

    def __enter__(self) -> VaultLock:
        if not self._held:
            self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _holder_fields(path: Path) -> tuple[str | None, str | None]:
    """The role and state dir a vault lock file records (``None`` where it says nothing)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None, None
    if not lines:
        return None, None
    role = lines[0].partition(" ")[2] or None
    return role, lines[2] if len(lines) > 2 else None


def describe_holder(path: Path) -> str:
    """Who holds the lock file at ``path``, for a person: pid, command line, state dir."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        lines = []
    if not lines or not lines[0].strip():
        return f"{path} is held by another process"
    pid, _, role = lines[0].partition(" ")
    text = f"pid {pid} ({lines[1] if len(lines) > 1 else role})"
    if len(lines) > 2:
        text += f", state dir {lines[2]}"
    return f"{text}; lock file {path}"


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
