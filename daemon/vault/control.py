"""The rows in the queue's ``meta`` table through which ``aclarai`` commands and a running
daemon talk (the commands' side is :mod:`aclarai.daemon.loop.remote`).

- **Pause switch**: ``meta.paused = "1"`` (``aclarai pause``) or a ``PAUSED`` file in the state
  dir stops write-backs and evaluation; watching and queueing go on.
- **Heartbeat**: the daemon stamps ``meta.heartbeat`` (pid, time, state) every few seconds, so
  ``aclarai status`` can tell a live daemon from a hung one.
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
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from aclarai.agents import UsageCounters
from aclarai.daemon.vault.queue import DurableQueue
from aclarai.parsers import AclaraiError

log = logging.getLogger(__name__)

PAUSED_KEY = "paused"
PAUSED_MARKER = "PAUSED"
HEARTBEAT_KEY = "heartbeat"
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
    pid: int
    at: float
    """Unix time of the stamp."""
    state: str
    """``starting``, ``running``, ``paused``, ``stopping`` or ``stopped``."""
    started_at: float

    @property
    def age_s(self) -> float:
        return max(0.0, time.time() - self.at)


def stamp_heartbeat(queue: DurableQueue, state: str, started_at: float) -> None:
    beat = Heartbeat(os.getpid(), time.time(), state, started_at)
    queue.set_meta(HEARTBEAT_KEY, json.dumps(asdict(beat)))


def read_heartbeat(queue: DurableQueue) -> Heartbeat | None:
    raw = queue.get_meta(HEARTBEAT_KEY)
    if raw is None:
        return None
    try:
        return Heartbeat(**json.loads(raw))
    except (ValueError, TypeError):
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
