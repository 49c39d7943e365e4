"""How other ``aclarai`` commands reach a running daemon: ``aclarai pause`` / ``resume``, and
``aclarai resync`` handing its pass to the daemon that holds the vault.

Both speak through the control rows of the queue's ``meta`` table
(:mod:`aclarai.daemon.vault.control`, where the protocol is described).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from aclarai.daemon.config import Config
from aclarai.daemon.factory import build_queue
from aclarai.daemon.vault.control import (
    ANSWER_PREFIX,
    DAEMON_ROLE,
    PAUSED_KEY,
    PAUSED_MARKER,
    REQUEST_PREFIX,
    ResyncAnswer,
    ResyncRequest,
)
from aclarai.daemon.vault.lock import live_holder
from aclarai.daemon.vault.queue import DurableQueue
from aclarai.parsers import VaultBusy

log = logging.getLogger(__name__)


def set_paused(config: Config, vault_root: Path, paused: bool) -> None:
    """Pause or resume the vault's daemon (it notices within a second); resuming also removes
    a ``PAUSED`` marker file."""
    state_dir = config.state_dir_for(vault_root)
    queue = build_queue(config, state_dir)
    try:
        queue.set_meta(PAUSED_KEY, "1" if paused else "0")
    finally:
        queue.close()
    if not paused:
        (state_dir / PAUSED_MARKER).unlink(missing_ok=True)


def daemon_running(state_dir: Path) -> bool:
    """Whether a live daemon (not a one-shot resync) holds the vault lock."""
    holder = live_holder(state_dir)
    return holder is not None and holder.role == DAEMON_ROLE


def hand_resync_to_daemon(
    config: Config,
    vault_root: Path,
    *,
    dry_run: bool = False,
    reevaluate: bool = False,
    timeout_s: float | None = None,
    poll_s: float = 0.1,
) -> ResyncAnswer | None:
    """Ask the running daemon to resync and wait for its answer.

    Returns:
        The daemon's answer, or ``None`` when no daemon runs (or it stopped before answering):
        then the caller runs the resync itself.

    Raises:
        VaultBusy: the daemon did not answer within ``timeout_s``.
    """
    state_dir = config.state_dir_for(vault_root)
    holder = live_holder(state_dir)
    if holder is None or holder.role != DAEMON_ROLE:
        return None
    queue = build_queue(config, state_dir)
    try:
        request = ResyncRequest(uuid.uuid4().hex, dry_run, reevaluate)
        queue.set_meta(REQUEST_PREFIX + request.id, json.dumps(asdict(request)))
        # Said at once and at warning level: a one-shot resync shows nothing less.
        log.warning(
            "the daemon %s holds %s: handing the resync to it and waiting %s; Ctrl-C to give up",
            holder.describe(),
            vault_root,
            "until it answers" if timeout_s is None else f"up to {timeout_s:g} s for its answer",
        )
        return _wait_for_answer(
            queue, request.id, lambda: daemon_running(state_dir), timeout_s, poll_s
        )
    finally:
        queue.close()


def _wait_for_answer(
    queue: DurableQueue,
    request_id: str,
    alive: Callable[[], bool],
    timeout_s: float | None,
    poll_s: float,
) -> ResyncAnswer | None:
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        raw = queue.get_meta(ANSWER_PREFIX + request_id)
        if raw is not None:
            queue.delete_meta(ANSWER_PREFIX + request_id)
            return ResyncAnswer(**json.loads(raw))
        if not alive():
            queue.delete_meta(REQUEST_PREFIX + request_id)
            log.info("the daemon stopped before answering; running the resync here")
            return None
        if deadline is not None and time.monotonic() >= deadline:
            queue.delete_meta(REQUEST_PREFIX + request_id)
            raise VaultBusy(f"the daemon did not finish the resync within {timeout_s:g} s")
        time.sleep(poll_s)
