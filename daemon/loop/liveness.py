"""Is the daemon alive, and what is it doing: its record for ``aclarai status`` and its word to
the systemd watchdog.

A ping from the main loop alone would let a daemon whose consumer, watcher or model call hung
look alive for ever. So the main loop pings only while every part is alive and moving
(:func:`why_stuck`):

- the consumer thread runs, and while it grades it makes progress (a note's stage done, a model
  call started, answered or retried) at least every ``stall_s``, or has a model call in flight;
- the watcher's observer thread runs;
- no model call has been in flight for more than ``call_s``: the client's timeout bounds each
  read, not the whole reply, so a server that trickles bytes would hold a call for ever.

Idle, paused and waiting out a model outage are bounded waits and never count as stuck. The
record (:class:`~aclarai.daemon.vault.control.Heartbeat`) is stamped every
:data:`STAMP_EVERY_S`, sooner when what the daemon does changes (at most every
:data:`STAMP_MIN_S`: a burst of edits costs a few writes a second, not one per block), and when
``status --wait-idle`` asks for a fresh one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from aclarai.agents import UsageCounters
from aclarai.daemon.config import Config
from aclarai.daemon.factory import Agents
from aclarai.daemon.loop.systemd import Notifier
from aclarai.daemon.vault.control import (
    DAEMON_ROLE,
    SEEN_MARGIN_S,
    new_heartbeat,
    stamp_asked_at,
    stamp_heartbeat,
)
from aclarai.daemon.vault.queue import DurableQueue
from aclarai.parsers import AclaraiError

log = logging.getLogger(__name__)

STAMP_EVERY_S = 5.0
STAMP_MIN_S = 0.5
ASKED_EVERY_S = 0.3
"""How often the daemon looks for a ``status --wait-idle`` asking for a fresh stamp."""
STALL_S = 120.0
"""Least time a grading consumer may go without progress and without a model call in flight."""
CALL_TIMEOUTS = 3.0
"""A model call may run this many of its timeouts (connect, send and first byte each have one)."""
ERROR_CHARS = 500


class Progress:
    """A worker's heartbeat: it begins a take of notes, beats on each step, ends, and keeps
    the last error met (the daemon's own go there too).

    Written by the drain's threads (one drain at a time) and read by the main loop; each write
    is one assignment, so a reader sees a value that was true an instant ago.
    """

    def __init__(self) -> None:
        self.beat_at = time.monotonic()
        self.notes = 0
        self.busy = False
        self.last_error: tuple[str, float] | None = None
        """The message and the Unix time of the last error."""

    def begin(self, notes: int) -> None:
        self.notes = notes
        self.busy = True
        self.beat()

    def beat(self) -> None:
        self.beat_at = time.monotonic()

    def end(self) -> None:
        self.busy = False
        self.notes = 0
        self.beat()

    def failed(self, message: str) -> None:
        self.last_error = (" ".join(message.split())[:ERROR_CHARS], time.time())


@dataclass(frozen=True, slots=True)
class WatchdogLimits:
    stall_s: float = STALL_S
    """A busy consumer with no progress and no model call in flight is stuck after this."""
    call_s: float = CALL_TIMEOUTS * 60.0
    """A model call in flight longer than this is stuck."""

    @classmethod
    def for_call_timeout(cls, timeout_s: float) -> WatchdogLimits:
        return cls(call_s=CALL_TIMEOUTS * timeout_s)


def why_stuck(
    *,
    consumer_alive: bool,
    observing: bool,
    grading: Progress,
    longest_call_s: float,
    limits: WatchdogLimits,
    now: float,
) -> str | None:
    """Why the daemon must not vouch for itself now; ``None`` when every part moves."""
    if not consumer_alive:
        return "the consumer thread has died"
    if not observing:
        return "the vault watcher has stopped"
    if longest_call_s > limits.call_s:
        return f"a model call has run {longest_call_s:.0f} s, past {limits.call_s:.0f} s"
    quiet_s = now - grading.beat_at
    if grading.busy and longest_call_s == 0.0 and quiet_s > limits.stall_s:
        return f"grading has made no progress for {quiet_s:.0f} s"
    return None


def describe_activity(*, paused: bool, model_down: bool, grading: Progress, syncing: bool) -> str:
    """What the daemon is doing, in the words ``aclarai status`` shows."""
    if paused:
        return "paused"
    if model_down:
        return "waiting for the model"
    if grading.busy:
        return f"grading {grading.notes} note{'' if grading.notes == 1 else 's'}"
    return "syncing" if syncing else "idle"


class Liveness:
    """The record of a running daemon or resync, and the daemon's watchdog pings, driven by
    its main loop's ticks (a resync has no ``notifier`` and stamps only at its start and end)."""

    def __init__(
        self,
        queue: DurableQueue,
        notifier: Notifier | None = None,
        *,
        started_at: float,
        limits: WatchdogLimits | None = None,
        longest_call: Callable[[], float] | None = None,
        call_timeout: Callable[[], float] | None = None,
        usage: UsageCounters | None = None,
        role: str = DAEMON_ROLE,
    ) -> None:
        self.queue = queue
        self.notifier = notifier
        self.started_at = started_at
        self.limits = limits or WatchdogLimits()
        self.role = role
        self.grading = Progress()
        self._longest_call = longest_call or (lambda: 0.0)
        # A client that learns how slowly its server writes lets each call run longer.
        self._call_timeout = call_timeout
        self._usage = usage
        self._usage_seen = 0
        self._looked_at: float | None = None
        self._stuck = False
        self._stamped: tuple[str, str] | None = None
        self._stamped_error: tuple[str, float] | None = None
        self._stamped_at = float("-inf")
        self._stamped_wall = 0.0
        self._asked_read_at = float("-inf")

    def looked(self) -> None:
        """The daemon just looked at the vault (handled watch events, or scanned it)."""
        self._looked_at = time.time()

    def error(self, message: str) -> None:
        """Remember ``message`` as the last error (``aclarai status`` shows it)."""
        self.grading.failed(message)

    def tick(
        self,
        *,
        paused: bool,
        model_down: bool,
        syncing: bool,
        observing: bool,
        consumer_alive: bool,
    ) -> bool:
        """Ping the watchdog if every part is alive and moving, stamp the record when due;
        return whether it stamped."""
        now = time.monotonic()
        self._count_model_activity()
        self._vouch(
            why_stuck(
                consumer_alive=consumer_alive,
                observing=observing,
                grading=self.grading,
                longest_call_s=self._longest_call(),
                limits=self.limits
                if self._call_timeout is None
                else replace(self.limits, call_s=CALL_TIMEOUTS * self._call_timeout()),
                now=now,
            )
        )
        activity = describe_activity(
            paused=paused, model_down=model_down, grading=self.grading, syncing=syncing
        )
        state = ("paused" if paused else "running", activity)
        since = now - self._stamped_at
        # A new state (started, paused, resumed) is news at once; a new activity or error may
        # wait half a second, not the full interval: `status` shows what the log just said.
        if since >= STAMP_EVERY_S or self._stamped is None or state[0] != self._stamped[0]:
            return self.stamp(*state)
        news = state != self._stamped or self.grading.last_error != self._stamped_error
        if news and since >= STAMP_MIN_S:
            return self.stamp(*state)
        if now - self._asked_read_at >= ASKED_EVERY_S:
            self._asked_read_at = now
            if self._asked(time.time()):
                return self.stamp(*state)
        return False

    def stamp(self, state: str, activity: str = "") -> bool:
        """Write the record now; ``False`` (and one log line) when the queue refused."""
        error, error_at = self.grading.last_error or (None, None)
        beat = new_heartbeat(
            state,
            self.started_at,
            role=self.role,
            activity=activity,
            looked_at=self._looked_at,
            last_error=error,
            last_error_at=error_at,
        )
        self._stamped, self._stamped_at = (state, activity), time.monotonic()
        self._stamped_error = self.grading.last_error
        try:
            stamp_heartbeat(self.queue, beat)
        except AclaraiError as exc:
            log.warning("could not stamp the heartbeat: %s", exc)
            return False
        self._stamped_wall = beat.at
        return True

    def _asked(self, wall_now: float) -> bool:
        """Whether ``status --wait-idle`` waits for a stamp newer than the last one. It is
        answered once its margin has passed, so every edit made before it was asked has been
        seen by the watcher."""
        try:
            asked = stamp_asked_at(self.queue)
        except AclaraiError:
            return False
        if asked is None or self._stamped_wall >= asked + SEEN_MARGIN_S:
            return False
        return wall_now >= asked + SEEN_MARGIN_S

    def _count_model_activity(self) -> None:
        """A model call started, answered, failed or retried is grading making progress."""
        if self._usage is None:
            return
        seen = sum(self._usage.snapshot().values())
        if seen != self._usage_seen:
            self._usage_seen = seen
            self.grading.beat()

    def _vouch(self, reason: str | None) -> None:
        if self.notifier is None:
            return
        if reason is None:
            if self._stuck:
                self._stuck = False
                log.info("every part of the daemon moves again; watchdog pings resume")
                self.notifier.status("running")
            self.notifier.ping()
            return
        if not self._stuck:
            self._stuck = True
            log.error(
                "%s: no more watchdog pings until it moves (systemd restarts a daemon that "
                "stays stuck)",
                reason,
            )
            self.error(reason)
            self.notifier.status(f"stuck: {reason}")


def daemon_liveness(
    queue: DurableQueue, notifier: Notifier, agents: Agents, config: Config
) -> Liveness:
    """The daemon's :class:`Liveness`: model calls bounded by what the client gives a call
    (``model.llm.timeout_s`` and the time a slow server needs to write a reply)."""
    client = agents.client
    return Liveness(
        queue,
        notifier,
        started_at=time.time(),
        limits=WatchdogLimits.for_call_timeout(config.model.llm.timeout_s),
        longest_call=None if client is None else client.longest_call_s,
        call_timeout=None if client is None else lambda: client.call_timeout_s,
        usage=agents.usage,
    )
