"""Which process is which: a pid and the kernel's start time of the process that has it.

A pid alone names nobody for long: after a crash the kernel hands it to the next process
started, so whatever records a holder (a lock file, a temp file's name) records both, and a
process counts as alive only while its pid is in use *by the same process*, not a zombie. On
Linux the start time comes from ``/proc/PID/stat`` (clock ticks since boot); where there is no
``/proc`` it is empty and the pid alone is checked.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_PROC = Path("/proc")


@dataclass(frozen=True)
class ProcessId:
    """One process: its pid and its start time (``""`` where it cannot be known)."""

    pid: int
    start: str

    def alive(self) -> bool:
        return is_alive(self.pid, self.start)


@cache
def _own_start(pid: int) -> str:
    return _stat_fields(pid)[1] if _PROC.is_dir() else ""


def current() -> ProcessId:
    """This process (looked up again in a forked child, whose pid is new)."""
    pid = os.getpid()
    return ProcessId(pid, _own_start(pid))


def is_alive(pid: int, start: str | None) -> bool:
    """Whether ``pid`` runs and, when ``start`` is given, is still the process started then."""
    if pid <= 0:
        return False
    if _PROC.is_dir():
        state, started = _stat_fields(pid)
        return state not in ("", "Z", "X") and (not start or started == start)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stat_fields(pid: int) -> tuple[str, str]:
    """The state letter and start time of ``pid`` from ``/proc``; empty when it is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return "", ""
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    fields = text[text.rfind(")") + 2 :].split()
    return fields[0], fields[19]
