"""The rows in the queue's ``meta`` table through which ``aclarai`` commands and a running
daemon talk (the commands' side is :mod:`aclarai.daemon.loop.handoff`).

- **Pause switch**: ``meta.paused = "1"`` (``aclarai pause``) or a ``PAUSED`` file in the state
  dir stops write-backs and evaluation; watching and queueing go on.
- **Heartbeat**: the daemon (and a resync) stamps ``meta.heartbeat`` every few seconds and when
  what it does changes: pid and process start, time, state, activity (syncing, grading N notes,
  waiting for the model, paused, idle), when it last looked at the vault, its last error. So
  ``aclarai status`` tells a live daemon from a hung or dead one, and ``status --wait-idle``
  asks for a fresh stamp through ``meta.stamp_request``.
- **Model outage**: ``meta.model_down_since`` says since when the model endpoint has not
  answered, while it still does not (``aclarai status`` shows it).
- **LLM usage**: ``meta.llm_usage`` holds the cumulative counters (calls, retries, failures,
  tokens, cache hits) of every resync and daemon run on the vault, so ``aclarai status`` can show
  what the endpoint has cost; each process adds only what it spent since its last flush.
- **Resync hand-off**: ``aclarai resync`` while a daemon holds the vault lock does not wait for the
  lock (the daemon never lets it go); it records ``resync_request:<id>`` and waits for the daemon
  to answer ``resync_answer:<id>`` with its summary. The daemon runs the request through the same
  reconcile as its periodic one, under the same lock, so the two never write a note at once. If
  the daemon stops before answering, the request is withdrawn and the command runs the resync
  itself once it holds the lock.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from aclarai.agents import UsageCounters
from aclarai.daemon.vault.processes import current, is_alive
from aclarai.daemon.vault.queue import DurableQueue
from aclarai.parsers import AclaraiError

log = logging.getLogger(__name__)

PAUSED_KEY = "paused"
PAUSED_MARKER = "PAUSED"
HEARTBEAT_KEY = "heartbeat"
STAMP_REQUEST_KEY = "stamp_request"
SEEN_MARGIN_S = 0.5
"""A stamp this long after ``status --wait-idle`` asked for it comes after the watcher has seen
every edit made before the asking (inotify delivers in milliseconds)."""
USAGE_KEY = "llm_usage"
MODEL_DOWN_META = "model_down_since"
"""Queue meta key: when the model endpoint stopped answering (``aclarai status`` shows it)."""
REQUEST_PREFIX = "resync_request:"
ANSWER_PREFIX = "resync_answer:"
DAEMON_ROLE = "daemon"


def read_paused(queue: DurableQueue, state_dir: Path) -> bool:
    """Whether the vault's daemon is paused, read now (the one rule of the pause switch)."""
    return queue.get_meta(PAUSED_KEY) == "1" or (state_dir / PAUSED_MARKER).exists()


class PauseSwitch:
    """Reads the pause switch at most every ``ttl_s`` (the consumer asks before each batch)."""

    def __init__(self, queue: DurableQueue, state_dir: Path, *, ttl_s: float = 0.5) -> None:
        self.queue = queue
        self.state_dir = state_dir
        self.ttl_s = ttl_s
        self._value = False
        self._read_at = float("-inf")

    def is_paused(self) -> bool:
        now = time.monotonic()
        if now - self._read_at >= self.ttl_s:
            self._read_at = now
            self._value = read_paused(self.queue, self.state_dir)
        return self._value


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """The record a running daemon (or resync) keeps of itself, for ``aclarai status``."""

    pid: int
    at: float
    """Unix time of the stamp."""
    state: str
    """``starting``, ``running``, ``paused``, ``stopping`` or ``stopped``."""
    started_at: float
    role: str = DAEMON_ROLE
    """``daemon`` or ``resync``."""
    process_start: str = ""
    """The kernel's start time of ``pid``: a pid reused by another process is not the writer."""
    activity: str = ""
    """What it was doing at ``at``: ``syncing``, ``grading N notes``, ``waiting for the model``,
    ``paused`` or ``idle``."""
    looked_at: float | None = None
    """Unix time it last looked at the vault: a watch event handled or a full scan."""
    last_error: str | None = None
    last_error_at: float | None = None

    @property
    def age_s(self) -> float:
        return max(0.0, time.time() - self.at)

    def writer_alive(self) -> bool:
        """Whether the process that wrote this record still runs (the same process, not one
        that was given its pid since)."""
        return is_alive(self.pid, self.process_start)


def stamp_heartbeat(queue: DurableQueue, beat: Heartbeat) -> None:
    """Record ``beat`` (one small write: callers stamp every few seconds, not per block).

    Raises:
        QueueError: The queue could not be written.
    """
    queue.set_meta(HEARTBEAT_KEY, json.dumps(asdict(beat)))


def new_heartbeat(state: str, started_at: float, **details: Any) -> Heartbeat:
    """A stamp of this process, now."""
    me = current()
    return Heartbeat(me.pid, time.time(), state, started_at, process_start=me.start, **details)


def read_heartbeat(queue: DurableQueue) -> Heartbeat | None:
    raw = queue.get_meta(HEARTBEAT_KEY)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        known = {f.name for f in fields(Heartbeat)}
        # A newer aclarai may have added fields: read the ones this one knows.
        return Heartbeat(**{k: v for k, v in data.items() if k in known})
    except (ValueError, TypeError, AttributeError):
        return None


def ask_for_stamp(queue: DurableQueue) -> float:
    """Ask a running daemon to stamp its record now (``status --wait-idle``); return the time
    asked."""
    asked = time.time()
    queue.set_meta(STAMP_REQUEST_KEY, repr(asked))
    return asked


def stamp_asked_at(queue: DurableQueue) -> float | None:
    raw = queue.get_meta(STAMP_REQUEST_KEY)
    try:
        return None if raw is None else float(raw)
    except ValueError:
        return None


def read_usage(queue: DurableQueue) -> dict[str, int]:
    """The LLM usage recorded for this vault so far, by counter name; empty when none is."""
    raw = queue.get_meta(USAGE_KEY)
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        log.warning("ignoring an unreadable %s row in the queue's meta table", USAGE_KEY)
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, int)}


def add_usage(queue: DurableQueue, deltas: Mapping[str, int]) -> None:
    """Add ``deltas`` to the recorded totals (nothing is written when they are all 0).

    A read-modify-write: safe because only the holder of the vault lock (a resync or the
    daemon) adds, and :class:`UsageRecorder` serialises the daemon's threads.

    Raises:
        QueueError: The queue could not be written.
    """
    if not any(deltas.values()):
        return
    totals = read_usage(queue)
    for name, value in deltas.items():
        totals[name] = totals.get(name, 0) + value
    queue.set_meta(USAGE_KEY, json.dumps(totals, sort_keys=True))


class UsageRecorder:
    """Adds what a set of counters has grown by since the last flush to the recorded totals."""

    def __init__(self, queue: DurableQueue, counters: UsageCounters | None) -> None:
        self._queue = queue
        self._counters = counters
        self._flushed: dict[str, int] = {}
        self._lock = threading.Lock()

    def flush(self) -> None:
        """Record the growth since the last successful flush; a failed write is retried by the
        next flush, so nothing is counted twice or lost."""
        if self._counters is None:
            return
        with self._lock:
            now = self._counters.snapshot()
            grown = {name: value - self._flushed.get(name, 0) for name, value in now.items()}
            try:
                add_usage(self._queue, grown)
            except AclaraiError as exc:
                log.warning("could not record the LLM usage (kept for the next try): %s", exc)
                return
            self._flushed = now


@dataclass(frozen=True, slots=True)
class ResyncRequest:
    id: str
    dry_run: bool = False
    reevaluate: bool = False


@dataclass(frozen=True, slots=True)
class ResyncAnswer:
    id: str
    ok: bool
    text: str


def pending_requests(queue: DurableQueue) -> list[ResyncRequest]:
    requests = []
    for key, raw in queue.meta_items(REQUEST_PREFIX).items():
        try:
            requests.append(ResyncRequest(**json.loads(raw)))
        except (ValueError, TypeError):
            log.warning("dropping unreadable resync request %s", key)
            queue.delete_meta(key)
    return requests


def answer_request(queue: DurableQueue, answer: ResyncAnswer) -> None:
    queue.set_meta(ANSWER_PREFIX + answer.id, json.dumps(asdict(answer)))
    queue.delete_meta(REQUEST_PREFIX + answer.id)
