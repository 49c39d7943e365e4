"""``aclarai status --wait-idle``: wait until every change seen so far is graded.

"Seen so far" means every edit made before the command started. The command asks the running
daemon for a fresh record (:func:`~aclarai.daemon.vault.control.ask_for_stamp`) and trusts
only one stamped at least :data:`~aclarai.daemon.vault.control.SEEN_MARGIN_S` after it asked:
by then the watcher has taken in every such edit, so an edit still settling shows as
``syncing``, one queued shows in the queue, one being graded as ``grading N notes``. Graded
means the queue holds nothing but dead letters and the holder of the vault, if any, is idle.

Nothing is ever waited for silently: when no daemon or resync runs while work waits, when the
daemon is paused, or when it waits for the model, one line says so (and again each time that
changes), and the wait goes on until the timeout, in case one starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from aclarai.daemon.config import Config
from aclarai.daemon.factory import QUEUE_FILE, build_queue
from aclarai.daemon.reports.status import Status, collect_status
from aclarai.daemon.vault.control import SEEN_MARGIN_S, ask_for_stamp
from aclarai.parsers import AclaraiError

POLL_S = 0.2


def wait_idle(
    config: Config,
    vault_root: Path,
    *,
    timeout_s: float | None,
    say: Callable[[str], None],
    poll_s: float = POLL_S,
) -> bool:
    """Wait until every change seen so far is graded; ``False`` when ``timeout_s`` passed first
    (``None``: wait for ever). ``say`` gets one line each time what is waited for changes."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    asked = _ask_for_stamp(config, vault_root)
    said = ""
    while True:
        status = collect_status(config, vault_root, graph=False)
        if status.graded and _fresh(status, asked):
            return True
        line = _waiting_for(status, vault_root, timeout_s)
        if line and line.partition(":")[0] != said.partition(":")[0]:
            say(line)
        said = line or said
        if deadline is not None and time.monotonic() >= deadline:
            return False
        left = poll_s if deadline is None else max(0.0, min(poll_s, deadline - time.monotonic()))
        time.sleep(left)


def _ask_for_stamp(config: Config, vault_root: Path) -> float:
    """Ask the daemon for a fresh record; return when asked (the record must be newer)."""
    state_dir = config.state_dir_for(vault_root)
    if not (state_dir / QUEUE_FILE).exists():
        # Never synced: nothing was seen, and no state folder is made as a side effect.
        return time.time()
    try:
        queue = build_queue(config, state_dir)
        try:
            return ask_for_stamp(queue)
        finally:
            queue.close()
    except AclaraiError:
        # A read-only state dir: the daemon's periodic stamp answers instead, a little later.
        return time.time()


def _fresh(status: Status, asked: float) -> bool:
    """Whether what the status says of the holder was stamped after every edit made before
    ``asked`` was seen; always true when nothing holds the vault."""
    beat = status.heartbeat
    if status.holder_pid is None:
        return True
    return beat is not None and status.record_current and beat.at >= asked + SEEN_MARGIN_S


def _waiting_for(status: Status, vault_root: Path, timeout_s: float | None) -> str:
    """What the wait is for, when a person should know; ``""`` while work just goes on. The
    words before the first colon name the situation (one line per situation)."""
    how_long = "until it is done" if timeout_s is None else f"up to {timeout_s:g} s"
    waiting = f"{status.queue_depth} block(s) wait to be graded"
    if not status.running and status.queue_depth:
        return (
            f"nothing grades {vault_root}: no aclarai daemon or resync runs, and {waiting} "
            f"(start `aclarai watch` or run `aclarai resync`); waiting {how_long}"
        )
    if not status.running and status.settling:
        return (
            f"nothing settles {vault_root}: no aclarai daemon or resync runs, and "
            f"{status.settling} note(s) lost blocks the graph still holds (start `aclarai watch` "
            f"or run `aclarai resync`); waiting {how_long}"
        )
    if status.paused and status.queue_depth:
        return f"the daemon is paused: {waiting} (`aclarai resume`); waiting {how_long}"
    if status.activity == "waiting for the model":
        return (
            f"the model endpoint does not answer: {waiting}, retried as it comes back; "
            f"waiting {how_long}"
        )
    if status.running and status.activity != "idle":
        what = status.activity or "starting"
        return f"waiting for pid {status.holder_pid}: {what}; waiting {how_long}"
    return ""
