"""One writer per vault: advisory ``flock`` locks, one in the vault and one in its state dir.

The lock inside the vault, ``<vault>/.aclarai/lock``, is what keeps two writers apart whatever
state dir each was given (``ACLARAI_STATE_DIR`` differs, two configs …); the one in the state dir
tells ``status`` and ``resync`` of that state dir whether a daemon serves it. Both are taken, the
vault's first, or neither.

A lock is held by the process that took it and by no other. ``flock`` belongs to the open file,
which a forked child (an evaluation worker) shares: so every child closes its copies of our lock
files the moment it is forked, and the holder's death, however it dies, ends its lock even while
a child lives on. Each file records its holder (pid, role, command line, state dir, the
process's start time and when it took the lock), written under a short ``flock`` of the file's
folder that every taker holds too, so the one refused is told who to look for, and so that a
holder that is gone can be told from one that is not: a pid counts only while the same process
(same start time, not a zombie) has it. A recorded holder that is gone holds no lock: the next
command takes the lock over at once, saying so in one line, even when some leftover process
still has the file open (the file is then replaced). A command that must wait for a live holder
says at once whom it waits for and for how long.

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
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from aclarai.daemon.vault.processes import current, is_alive
from aclarai.parsers import VaultBusy, format_utc

log = logging.getLogger(__name__)

LOCK_NAME = "vault.lock"
VAULT_DIR = ".aclarai"
"""Our folder inside the vault (a dot folder: never walked, never watched)."""
VAULT_LOCK_NAME = "lock"
ONE_SHOT_ROLE = "resync"
"""The role of a holder that ends by itself; any other (the daemon) holds the vault until
stopped."""

_open_fds: dict[int, _LockFile | None] = {}
"""Every lock-related descriptor this process has open, and the lock file holding it."""
_fds_lock = threading.Lock()


def _open(path: Path, flags: int, owner: _LockFile | None = None) -> int:
    with _fds_lock:
        fd = os.open(path, flags, 0o644)
        _open_fds[fd] = owner
    return fd


def _close(fd: int) -> None:
    with _fds_lock:
        _open_fds.pop(fd, None)
        os.close(fd)


def _close_in_child() -> None:
    """A forked child closes its copies at once (never unlocking: the lock is its parent's)."""
    for fd, owner in _open_fds.items():
        with contextlib.suppress(OSError):
            os.close(fd)
        if owner is not None:
            owner.forget()
    _open_fds.clear()
    _fds_lock.release()


# Holding the registry's lock across fork: a child never inherits a descriptor not yet listed.
os.register_at_fork(
    before=_fds_lock.acquire,
    after_in_parent=_fds_lock.release,
    after_in_child=_close_in_child,
)


@dataclass(frozen=True)
class Holder:
    """Who a lock file says holds it. ``start`` is ``None`` in a file an older aclarai wrote."""

    pid: int
    role: str
    command: str | None = None
    state_dir: str | None = None
    start: str | None = None
    since: str | None = None

    def alive(self) -> bool:
        """Whether the process that took the lock still runs (its pid not reused meanwhile)."""
        return is_alive(self.pid, self.start)

    def describe(self) -> str:
        """For a person: pid, command line (else role), when it took the lock, state dir."""
        text = f"pid {self.pid} ({self.command or self.role}"
        if self.since:
            text += f", since {self.since}"
        text += ")"
        if self.state_dir:
            text += f", state dir {self.state_dir}"
        return text

    def record(self) -> str:
        return (
            f"{self.pid} {self.role}\n{self.command or ''}\n{self.state_dir or ''}\n"
            f"{self.start or '-'} {self.since or '-'}\n"
        )


def parse_holder(text: str) -> Holder | None:
    """The holder a lock file's ``text`` records; ``None`` when it records none."""
    lines = text.splitlines()
    pid, _, role = (lines[0] if lines else "").partition(" ")
    if not pid.isdigit():
        return None
    start, _, since = (lines[3] if len(lines) > 3 else "").partition(" ")
    return Holder(
        int(pid),
        role,
        lines[1] if len(lines) > 1 and lines[1] else None,
        lines[2] if len(lines) > 2 and lines[2] else None,
        start if start and start != "-" else None,
        since if since and since != "-" else None,
    )


def _read_fd(fd: int) -> Holder | None:
    try:
        return parse_holder(os.pread(fd, 4096, 0).decode(errors="replace"))
    except OSError:
        return None


def _same_file(fd: int, path: Path) -> bool:
    try:
        mine, now = os.fstat(fd), path.stat()
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (now.st_dev, now.st_ino)


class _LockFile:
    """One ``flock``-ed file whose content names its holder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self.took_over_from: Holder | None = None
        """The gone holder whose lock the last :meth:`try_take` took over."""

    def forget(self) -> None:
        self._fd = None

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """The folder's ``flock``: a holder's record is written, and a gone holder's file
        replaced, by one process at a time."""
        fd = _open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            _close(fd)

    def holder(self) -> Holder | None:
        try:
            return parse_holder(self.path.read_text(errors="replace"))
        except OSError:
            return None

    def try_take(self, me: Holder) -> bool:
        """Take the lock without waiting; ``False`` when a live process holds it. A lock
        whose recorded holder is gone is taken over (:attr:`took_over_from`).

        Raises:
            OSError: the file cannot be created or opened.
        """
        self.took_over_from = None
        while True:
            fd = _open(self.path, os.O_RDWR | os.O_CREAT, self)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                recorded = _read_fd(fd)
                _close(fd)
                # No record yet: its taker is writing it.
                if recorded is None or recorded.alive():
                    return False
                if self._replace(recorded, me):
                    return True
                continue
            with self._guard():
                if not _same_file(fd, self.path):
                    # Replaced since it was opened: the lock now lives in the new file.
                    _close(fd)
                    continue
                gone = _read_fd(fd)
                os.ftruncate(fd, 0)
                os.pwrite(fd, me.record().encode(), 0)
            self._fd = fd
            if gone is not None and gone.pid != me.pid and not gone.alive():
                self.took_over_from = gone
            return True

    def _replace(self, gone: Holder, me: Holder) -> bool:
        """Replace the file that ``gone`` (not alive) still records, which a leftover process
        keeps ``flock``-ed; ``False`` when someone else changed it first."""
        with self._guard():
            if self.holder() != gone:
                return False
            fresh = self.path.with_name(f"{self.path.name}.{me.pid}.new")
            fd = _open(fresh, os.O_RDWR | os.O_CREAT | os.O_TRUNC, self)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(fd, me.record().encode())
            os.replace(fresh, self.path)
        self._fd = fd
        self.took_over_from = gone
        return True

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            _close(self._fd)
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
        """Take the lock, waiting up to ``timeout_s`` (``None``: forever); before waiting, one
        warning says for whom and how long (again only if another holder takes its place).

        Raises:
            VaultBusy: still held by another process when the wait ends.
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        me = current()
        holder = Holder(
            me.pid,
            self.role,
            # One line of the record: a ``python -c`` script spans several.
            " ".join(shlex.join(sys.orig_argv).split()),
            str(self.state_dir),
            me.start or None,
            format_utc(time.time()),
        )
        announced: Holder | None = None
        while True:
            busy = self._try_take_both(holder)
            if busy is None:
                self._held = True
                self._say_took_over()
                return
            if (deadline is not None and time.monotonic() >= deadline) or self._never_free(busy):
                raise VaultBusy(describe_holder(busy.path))
            waiting_for = busy.holder()
            if waiting_for is not None and waiting_for != announced:
                announced = waiting_for
                log.warning(
                    "waiting for %s to release %s: %s; Ctrl-C to give up",
                    waiting_for.describe(),
                    busy.path,
                    "until it ends"
                    if deadline is None
                    else f"up to {round(max(deadline - time.monotonic(), 0.0), 1):g} s",
                )
            time.sleep(poll_s)

    def _say_took_over(self) -> None:
        gone = next(
            (f.took_over_from for f in (self._vault, self._state) if f and f.took_over_from),
            None,
        )
        if gone is not None:
            log.warning(
                "took over the lock of %s from %s, which ended without releasing it",
                self.state_dir if self._vault is None else self._vault.path.parent.parent,
                gone.describe(),
            )

    def _never_free(self, busy: _LockFile) -> bool:
        """Whether waiting is pointless: a service with another state dir holds the vault (it
        neither ends nor takes hand-overs sent to ours)."""
        if busy is not self._vault:
            return False
        holder = busy.holder()
        return (
            holder is not None
            and holder.role != ONE_SHOT_ROLE
            and holder.state_dir not in (None, str(self.state_dir))
        )

    def _try_take_both(self, holder: Holder) -> _LockFile | None:
        """Take both locks, or none; return the busy one."""
        vault = self._vault
        if vault is not None:
            try:
                if not vault.try_take(holder):
                    return vault
            except OSError as exc:
                log.warning("cannot open %s (%s); skipping it", vault.path, exc.strerror or exc)
                self._vault = None
        if not self._state.try_take(holder):
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


def describe_holder(path: Path) -> str:
    """Who holds the lock file at ``path``, for a person: pid, command line, state dir."""
    holder = _LockFile(path).holder()
    if holder is None:
        return f"{path} is held by another process"
    return f"{holder.describe()}; lock file {path}"


def live_holder(state_dir: Path) -> Holder | None:
    """The live process holding the vault lock of ``state_dir``; ``None`` when none does.

    A holder counts only while its process runs and the lock is really held: a record left by
    a crash names nobody.
    """
    path = state_dir / LOCK_NAME
    holder = _LockFile(path).holder()
    if holder is None or not holder.alive():
        return None
    try:
        fd = _open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return holder
    finally:
        _close(fd)
    return None


def read_holder(path: Path) -> str:
    """``"<pid> <role>"`` of the live holder of the state dir lock at ``path``, or ``"nobody"``."""
    holder = live_holder(path.parent) if path.name == LOCK_NAME else None
    return "nobody" if holder is None else f"{holder.pid} {holder.role}"


def is_held(state_dir: Path) -> bool:
    """Whether a live process holds the vault lock."""
    return live_holder(state_dir) is not None
