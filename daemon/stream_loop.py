"""The one Redis Streams consumer loop, behind ``aclarai consume`` and ``aclarai worker``.

A :class:`StreamLoop` joins a consumer group and settles every entry it reads exactly one way:
its result is added and the entry acknowledged in one MULTI/EXEC, or it goes to a dead-letter
stream with its error and is acknowledged in the same way, or it stays pending for another
delivery. What an entry means and where its result goes is the :class:`EntryHandler`'s; the
loop owns the rest:

- the group, created with the stream at the first start and again if it vanishes;
- this consumer's own pending entries, taken first at each (re)start;
- entries pending on a consumer that went silent, taken over with XAUTOCLAIM once idle
  ``reclaim_after_s``, at start and then periodically;
- dead letters: an entry that cannot be read, or delivered more than ``max_deliveries`` times,
  or that failed on its last allowed delivery;
- outages: Redis (:class:`~aclarai.parsers.BrokerUnavailable`) or the model
  (:class:`~aclarai.parsers.TransientError`) away is logged once when it starts and once when it
  ends, and retried with capped backoff; the entry in hand keeps its delivery count, so an
  outage never dead-letters work;
- the counts of what it did (:class:`StreamStats`).

Entries are handled one after another in the loop's thread, ``batch`` read at once, or with
``jobs`` set, that many at once on a thread pool, each slot taking the next entry as soon as it
is free. A stop lets the entries in hand finish; those read but not started stay pending.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Generic, Protocol, TypeVar, cast

import redis
from redis.client import Pipeline

from aclarai.daemon.redis_link import (
    Backoff,
    Entry,
    StopEvent,
    broker,
    deliveries,
    ensure_group,
    entries_of,
    millis,
    put_back_delivery,
    redact,
    sleep,
)
from aclarai.parsers import AclaraiError, BrokerUnavailable, PayloadError, TransientError

PAYLOAD_FIELD = b"payload"

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class Delivery:
    """One entry as this delivery found it."""

    entry_id: bytes
    payload: bytes | None
    """Its ``payload`` field; ``None`` when the entry has none."""
    count: int
    """How many times the group delivered it, this time included."""


class EntryHandler(Protocol[Item, Result]):
    """What one kind of stream entry means: the part of the loop that differs by command."""

    def parse(self, payload: bytes | None) -> Item:
        """The work an entry asks for. Raises :class:`PayloadError` (the entry is
        dead-lettered with its message) when there is none this consumer can do."""
        ...

    def work(self, item: Item) -> Result:
        """Do it. :class:`TransientError`: the model is away (the entry stays pending); any
        other error: the entry is tried again, up to ``max_deliveries``."""
        ...

    def write_result(self, pipe: Pipeline, delivery: Delivery, item: Item, result: Result) -> None:
        """Queue the result's writes on ``pipe``; the entry's XACK follows in the same EXEC."""
        ...

    def write_dead_letter(
        self, pipe: Pipeline, delivery: Delivery, item: Item | None, error: str
    ) -> None:
        """Queue the dead letter's writes on ``pipe``; the XACK follows in the same EXEC."""
        ...


@dataclass(frozen=True)
class Words:
    """How a command's log lines and errors name its entries."""

    entry: str
    """One entry, in ``<entry> <id> dead-lettered``: ``entry``, ``job``."""
    entries: str
    """Entries taken over, in ``took over 2 <entries>``."""
    waiting: str
    """What stays pending while the model is away."""
    settled: str
    """What happens to those once it is back: ``evaluated``, ``graded``."""
    member: str
    """A member of the group: ``consumer``, ``worker``."""
    failure: str
    """The error of an entry whose work raised, before the exception: ``grading failed``."""


@dataclass(frozen=True)
class StreamSpec:
    """Where a loop reads and how patiently."""

    url: str
    stream: str
    group: str
    max_deliveries: int
    reclaim_after_s: float
    """How long an entry waits on a silent consumer before another takes it over."""
    block_s: float
    """How long one read waits for new entries."""
    batch: int = 1
    """Entries read at once when they are handled one after another."""
    jobs: int | None = None
    """Entries handled at once on a thread pool; ``None``: one after another."""


@dataclass
class StreamStats:
    """What a loop did."""

    processed: int = 0
    """Entries whose results were written and the entries acknowledged."""
    failed: int = 0
    """Entries whose work raised, left pending for another delivery."""
    dead_lettered: int = 0
    reclaimed: int = 0
    """Entries taken over from consumers that stopped acknowledging (XAUTOCLAIM)."""
    broker_outages: int = 0
    model_outages: int = 0
    """Times the model endpoint went away; the entries waited, pending."""


class StreamLoop(Generic[Item, Result]):
    """One consumer of a group: reads, hands each entry to ``handler`` and settles it.

    Args:
        client: a Redis client (bytes in, bytes out).
        spec: the stream, group and timing.
        handler: what the entries mean.
        name: this consumer's name in the group.
        words: how log lines name the entries.
        log: where the loop's lines go (the command's logger).
    """

    def __init__(
        self,
        client: redis.Redis,
        spec: StreamSpec,
        handler: EntryHandler[Item, Result],
        *,
        name: str,
        words: Words,
        log: logging.Logger,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._redis = client
        self._s = spec
        self._handler = handler
        self.name = name
        self._w = words
        self._log = log
        self._clock = clock
        self._stats = StreamStats()
        self._stats_lock = threading.Lock()
        self.state = "working"
        """What the loop is doing, for a heartbeat: working, or waiting for Redis or the
        model."""
        self._pool: ThreadPoolExecutor | None = None
        self._inflight: set[Future[None]] = set()
        self._inflight_ids: set[bytes] = set()

    @property
    def stats(self) -> StreamStats:
        """A copy of the counts so far."""
        with self._stats_lock:
            return replace(self._stats)

    def run(self, stop: StopEvent, *, burst: bool = False) -> StreamStats:
        """Loop until ``stop`` is set, or with ``burst`` until nothing is left to take."""
        if self._s.jobs is None:
            self._loop(stop, burst)
            return self.stats
        with ThreadPoolExecutor(self._s.jobs, thread_name_prefix="aclarai-stream") as pool:
            self._pool = pool
            try:
                self._loop(stop, burst)
            finally:
                self._pool = None
        return self.stats

    def keep_claimed(self) -> None:
        """Reset the idle time of the entries in work here, so that a slow one is not taken
        for a dead consumer's (JUSTID counts no delivery)."""
        held = tuple(self._inflight_ids)
        if held:
            with broker(self._s.url):
                self._redis.xclaim(
                    self._s.stream, self._s.group, self.name, 0, list(held), justid=True
                )  # type: ignore[arg-type]

    def _loop(self, stop: StopEvent, burst: bool) -> None:
        ready = down = model_down = False
        backoff = Backoff()
        next_claim = 0.0
        claim_every_s = max(0.05, self._s.reclaim_after_s / 2)
        while not stop.is_set():
            try:
                self._harvest()
                if not ready:
                    self._ensure_group()
                    self._take_own_pending(stop, after_outage=down)
                    if down:
                        self._log.info("Redis at %s is reachable again", redact(self._s.url))
                    if model_down:
                        self._log.info(
                            "the model answers again; pending %s %s",
                            self._w.waiting,
                            self._w.settled,
                        )
                    ready, down, model_down = True, False, False
                    backoff.reset()
                    self.state = "working"
                if not self._room(patient=True):
                    continue
                worked = 0
                if self._clock() >= next_claim:
                    worked += self._reclaim(stop)
                    next_claim = self._clock() + claim_every_s
                if room := self._room(patient=True):
                    block_ms = None if burst else millis(self._s.block_s)
                    entries = self._read(">", block_ms, room)
                    worked += self._start(entries, stop, redelivered=False)
                if burst and worked == 0:
                    self._harvest(wait_all=True)
                    if not self._pending():
                        return
                    # Entries of other consumers are not idle long enough to take over yet.
                    sleep(stop, min(claim_every_s, 0.2))
            except BrokerUnavailable as exc:
                if not down:
                    self._log.warning("Redis unavailable (%s); retrying with backoff", exc)
                    with self._stats_lock:
                        self._stats.broker_outages += 1
                ready, down = False, True
                self.state = "waiting for Redis"
                sleep(stop, backoff.next_s())
            except TransientError as exc:
                # The model endpoint (Redis is BrokerUnavailable, above): entries stay pending.
                if not model_down:
                    self._log.warning(
                        "model unavailable (%s); %s stay pending, retrying", exc, self._w.waiting
                    )
                    with self._stats_lock:
                        self._stats.model_outages += 1
                if burst:
                    return  # a drain-and-exit run does not wait for the model
                ready, model_down = False, True
                self.state = "waiting for the model"
                sleep(stop, backoff.next_s())
            except redis.ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    raise
                # The stream or its group was deleted under us: create them again.
                self._log.warning("consumer group vanished (%s); recreating it", exc)
                ready = False

    def _ensure_group(self) -> None:
        if ensure_group(self._redis, self._s.url, self._s.stream, self._s.group):
            self._log.info("created consumer group %s on %s", self._s.group, self._s.stream)

    def _take_own_pending(self, stop: StopEvent, *, after_outage: bool) -> None:
        """Entries this consumer name read before a restart or an outage, taken first."""
        cursor: bytes | str = "0"
        while not stop.is_set() and (room := self._room(patient=False)):
            entries = self._read(cursor, None, room)
            if not entries:
                return
            if after_outage:
                # Reading them again counted a delivery the outage, not the entries, caused.
                for entry_id, _ in entries:
                    self._put_back_delivery(entry_id, self._deliveries(entry_id))
            self._start(entries, stop, redelivered=True)
            cursor = entries[-1][0]

    def _reclaim(self, stop: StopEvent) -> int:
        """Take over entries idle past ``reclaim_after_s`` (their consumer died), as many as
        there is room for."""
        start: bytes | str = "0-0"
        started = 0
        while not stop.is_set() and (room := self._room(patient=False)):
            with broker(self._s.url):
                reply = self._redis.xautoclaim(
                    self._s.stream,
                    self._s.group,
                    self.name,
                    min_idle_time=millis(self._s.reclaim_after_s),
                    start_id=start,
                    count=room,
                )
            start, entries = reply[0], cast(list[Entry], reply[1])  # type: ignore[index]
            if entries:
                self._log.info(
                    "took over %d %s of a %s that stopped answering",
                    len(entries),
                    self._w.entries,
                    self._w.member,
                )
                started += self._start(entries, stop, redelivered=True, reclaimed=True)
            if start in (b"0-0", "0-0"):
                break
        return started

    def _read(self, cursor: bytes | str, block_ms: int | None, count: int) -> list[Entry]:
        with broker(self._s.url):
            reply = self._redis.xreadgroup(
                self._s.group, self.name, {self._s.stream: cursor}, count=count, block=block_ms
            )
        return entries_of(reply)

    def _pending(self) -> int:
        with broker(self._s.url):
            return int(self._redis.xpending(self._s.stream, self._s.group)["pending"])

    def _room(self, *, patient: bool) -> int:
        """How many entries can start now; when ``patient``, waits (a little) for a slot of the
        pool to free when none is."""
        if self._pool is None:
            return self._s.batch
        jobs = cast(int, self._s.jobs)
        if patient and len(self._inflight) >= jobs:
            wait(self._inflight, timeout=self._s.block_s, return_when=FIRST_COMPLETED)
        self._harvest()
        return max(0, jobs - len(self._inflight))

    def _harvest(self, *, wait_all: bool = False) -> None:
        """Forget the pool's finished entries; raise the outage one of them met (Redis's
        first)."""
        if wait_all:
            wait(self._inflight)
        done = {f for f in self._inflight if f.done()}
        self._inflight -= done
        errors = [e for f in done if (e := f.exception()) is not None]
        for error in sorted(errors, key=lambda e: not isinstance(e, BrokerUnavailable)):
            raise error

    def _start(
        self, entries: list[Entry], stop: StopEvent, *, redelivered: bool, reclaimed: bool = False
    ) -> int:
        """Handle ``entries`` here, or start them on the pool (those not in work already, even
        when stopping: they are entries in hand); how many were taken on."""
        started = 0
        for entry_id, fields in entries:
            if self._pool is None and stop.is_set():
                break
            if entry_id in self._inflight_ids:
                continue  # read again from this consumer's pending entries, still in work
            if reclaimed:
                with self._stats_lock:
                    self._stats.reclaimed += 1
            started += 1
            if self._pool is None:
                self._settle(entry_id, fields, redelivered)
                continue
            self._inflight_ids.add(entry_id)
            future = self._pool.submit(self._settle, entry_id, fields, redelivered)
            future.add_done_callback(self._forget(entry_id))
            self._inflight.add(future)
        return started

    def _forget(self, entry_id: bytes) -> Callable[[Future[None]], None]:
        def forget(_: Future[None]) -> None:
            self._inflight_ids.discard(entry_id)

        return forget

    def _settle(
        self, entry_id: bytes, fields: dict[bytes, bytes] | None, redelivered: bool
    ) -> None:
        if fields is None:
            # Trimmed or deleted from the stream while pending: nothing left to do.
            with broker(self._s.url):
                self._redis.xack(self._s.stream, self._s.group, entry_id)
            return
        count = self._deliveries(entry_id) if redelivered else 1
        delivery = Delivery(entry_id, fields.get(PAYLOAD_FIELD), count)
        try:
            item = self._handler.parse(delivery.payload)
        except PayloadError as exc:
            self._dead_letter(delivery, None, str(exc))
            return
        if count > self._s.max_deliveries:
            self._dead_letter(delivery, item, f"delivered {count} times without being acknowledged")
            return
        try:
            result = self._handler.work(item)
        except TransientError:
            # The model endpoint is away, which is not this entry's fault: its delivery is put
            # back and the loop backs off.
            self._put_back_delivery(entry_id, count)
            raise
        except Exception as exc:
            error = f"{self._w.failure}: {type(exc).__name__}: {exc}"
            if count >= self._s.max_deliveries:
                self._dead_letter(delivery, item, error)
                return
            with self._stats_lock:
                self._stats.failed += 1
            self._log.warning(
                "%s %s (delivery %d of %d): %s; left pending for another try",
                self._w.entry,
                entry_id.decode(),
                count,
                self._s.max_deliveries,
                error,
            )
            if not isinstance(exc, AclaraiError | OSError):
                self._log.debug("%s %s failed", self._w.entry, entry_id.decode(), exc_info=True)
            return
        self._write_and_ack(
            entry_id, lambda pipe: self._handler.write_result(pipe, delivery, item, result)
        )
        with self._stats_lock:
            self._stats.processed += 1

    def _dead_letter(self, delivery: Delivery, item: Item | None, error: str) -> None:
        self._log.warning(
            "%s %s dead-lettered: %s", self._w.entry, delivery.entry_id.decode(), error
        )
        entry_id = delivery.entry_id
        self._write_and_ack(
            entry_id, lambda pipe: self._handler.write_dead_letter(pipe, delivery, item, error)
        )
        with self._stats_lock:
            self._stats.dead_lettered += 1

    def _write_and_ack(self, entry_id: bytes, writes: Callable[[Pipeline], None]) -> None:
        """``writes`` and the entry's XACK in one MULTI/EXEC: never one without the other."""
        with broker(self._s.url):
            pipe = self._redis.pipeline(transaction=True)
            writes(pipe)
            pipe.xack(self._s.stream, self._s.group, entry_id)
            pipe.execute()

    def _deliveries(self, entry_id: bytes) -> int:
        return deliveries(self._redis, self._s.url, self._s.stream, self._s.group, entry_id)

    def _put_back_delivery(self, entry_id: bytes, delivered: int) -> None:
        put_back_delivery(
            self._redis, self._s.url, self._s.stream, self._s.group, self.name, entry_id, delivered
        )
