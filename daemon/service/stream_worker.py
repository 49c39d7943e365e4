"""The Redis Stream worker of the evaluation service (``aclarai consume``).

Each entry of ``eval_stream.stream`` (default ``eval-events``) carries a ``payload`` field holding
the same JSON as ``POST /api/v1/evaluate``. Consumers join ``eval_stream.group``; each result is
XADDed to ``eval_stream.results_stream`` with the event id, and the entry is XACKed in the same
MULTI/EXEC, so a result is never written without its entry being acknowledged, nor the other way
round.

Delivery is at least once and nothing is lost: an entry read but never acknowledged (its consumer
died) is taken over with XAUTOCLAIM once it has been pending ``eval_stream.reclaim_after_s``, at
start and periodically. An entry whose payload cannot be parsed, that failed on its last allowed
delivery, or that has been delivered more than ``eval_stream.max_deliveries`` times (it keeps
killing consumers) goes to ``eval_stream.dead_letter_stream`` with the error, and is acknowledged.
Several consumers (processes) share one group; that is how the service scales out.

Redis being unreachable is never fatal: it is logged once, retried with capped exponential
backoff, and logged again when the connection is back. The model endpoint being unreachable is
handled the same way: the entry is not acknowledged (no ``review`` verdict made without the model)
and stays pending with its delivery count put back, so an outage never dead-letters events. A
stop request (SIGTERM, SIGINT or the caller's stop event) lets the entry in hand finish; entries
read in the same batch but not started stay pending and are reclaimed by another consumer after
``reclaim_after_s``.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import redis

from aclarai.daemon.config import Config, EvalStreamSettings
from aclarai.daemon.redis_link import (
    Backoff,
    Entry,
    StopEvent,
    broker,
    connect,
    deliveries,
    ensure_group,
    entries_of,
    millis,
    put_back_delivery,
    redact,
    sleep,
    stop_signals,
)
from aclarai.daemon.service.core import (
    EvaluateRequest,
    ServiceCore,
    build_service_core,
    parse_evaluate_payload,
)
from aclarai.parsers import BrokerUnavailable, PayloadError, TransientError

logger = logging.getLogger(__name__)

PAYLOAD_FIELD = b"payload"


@dataclass
class WorkerStats:
    """What a consumer did."""

    processed: int = 0
    """Entries evaluated, their results written and the entries acknowledged."""
    dead_lettered: int = 0
    reclaimed: int = 0
    """Entries taken over from consumers that stopped acknowledging (XAUTOCLAIM)."""
    failed: int = 0
    """Evaluations that raised and were left pending for another delivery."""
    broker_outages: int = 0
    model_outages: int = 0
    """Times the model endpoint went away; the events waited, pending."""


def run_worker(
    config: Config,
    *,
    core: ServiceCore | None = None,
    consumer: str | None = None,
    stop_event: StopEvent | None = None,
    burst: bool = False,
) -> WorkerStats:
    """Consume evaluation events until stopped.

    Args:
        config: the ``eval_stream`` section names the server, streams and group; ``service`` the
            evaluation settings.
        core: the evaluation objects; built from ``config`` (and closed) when ``None``.
        consumer: this consumer's name in the group; ``<host>-<pid>`` by default.
        stop_event: stop when set. When ``None``, SIGTERM and SIGINT stop the consumer (their
            handlers are installed if this runs in the main thread, and restored after).
        burst: drain what is in the stream (and reclaimable) and return, instead of waiting for
            more.

    Returns:
        Counts of what was processed, dead-lettered and reclaimed.
    """
    own = core is None
    core = core or build_service_core(config)
    settings = config.eval_stream
    client = connect(settings.redis_url, block_s=settings.block_s)
    name = consumer or f"{socket.gethostname()}-{os.getpid()}"
    try:
        with stop_signals(stop_event) as stop:
            return StreamWorker(client, settings, core, name=name).run(stop, burst=burst)
    finally:
        client.close()
        if own:
            core.close()


class StreamWorker:
    """One worker of the group (a Redis consumer): the loop behind :func:`run_worker`.

    Args:
        client: a Redis client (bytes in, bytes out).
        settings: streams, group, delivery limit and timing.
        core: evaluates each payload.
        name: this consumer's name in the group.
    """

    def __init__(
        self,
        client: redis.Redis,
        settings: EvalStreamSettings,
        core: ServiceCore,
        *,
        name: str,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._redis = client
        self._s = settings
        self._core = core
        self.name = name
        self._clock = clock
        self.stats = WorkerStats()

    def run(self, stop: StopEvent, *, burst: bool = False) -> WorkerStats:
        """Loop until ``stop`` is set (or, with ``burst``, until nothing is left)."""
        ready = down = model_down = False
        backoff = Backoff()
        next_claim = 0.0
        claim_every_s = max(0.05, self._s.reclaim_after_s / 2)
        while not stop.is_set():
            try:
                if not ready:
                    self._ensure_group()
                    self._drain_own_pending(stop)
                    if down:
                        logger.info("Redis at %s is reachable again", redact(self._s.redis_url))
                    if model_down:
                        logger.info("the model answers again; pending events evaluated")
                    ready, down, model_down = True, False, False
                    backoff.reset()
                worked = 0
                if self._clock() >= next_claim:
                    worked += self._reclaim(stop)
                    next_claim = self._clock() + claim_every_s
                worked += self._read_new(stop, None if burst else millis(self._s.block_s))
                if burst and worked == 0:
                    if not self._pending_count():
                        break
                    # Entries of other consumers are not idle long enough to reclaim yet.
                    sleep(stop, min(claim_every_s, 0.2))
            except BrokerUnavailable as exc:
                if not down:
                    logger.warning("Redis unavailable (%s); retrying with backoff", exc)
                    self.stats.broker_outages += 1
                ready, down = False, True
                sleep(stop, backoff.next_s())
            except TransientError as exc:
                # The model endpoint (Redis is BrokerUnavailable, above): events stay pending.
                if not model_down:
                    logger.warning("model unavailable (%s); events stay pending, retrying", exc)
                    self.stats.model_outages += 1
                if burst:
                    return self.stats  # a drain-and-exit run does not wait for the model
                ready, model_down = False, True
                sleep(stop, backoff.next_s())
            except redis.ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    raise
                # The stream or its group was deleted under us: create them again.
                logger.warning("consumer group vanished (%s); recreating it", exc)
                ready = False
        return self.stats

    def _ensure_group(self) -> None:
        if ensure_group(self._redis, self._s.redis_url, self._s.stream, self._s.group):
            logger.info("created consumer group %s on %s", self._s.group, self._s.stream)

    def _drain_own_pending(self, stop: StopEvent) -> None:
        """Entries this consumer name read before a restart or an outage, handled first."""
        cursor: bytes | str = "0"
        while not stop.is_set():
            with broker(self._s.redis_url):
                reply = self._redis.xreadgroup(
                    self._s.group, self.name, {self._s.stream: cursor}, count=self._s.batch
                )
            entries = entries_of(reply)
            if not entries:
                return
            self._handle_all(entries, stop, reclaimed=False, counted=True)
            cursor = entries[-1][0]

    def _reclaim(self, stop: StopEvent) -> int:
        start = "0-0"
        handled = 0
        while not stop.is_set():
            with broker(self._s.redis_url):
                reply = self._redis.xautoclaim(
                    self._s.stream,
                    self._s.group,
                    self.name,
                    min_idle_time=millis(self._s.reclaim_after_s),
                    start_id=start,
                    count=self._s.batch,
                )
            start, entries = reply[0], cast(list[Entry], reply[1])
            if entries:
                logger.info("reclaimed %d pending entries", len(entries))
                handled += self._handle_all(entries, stop, reclaimed=True, counted=True)
            if start in (b"0-0", "0-0"):
                return handled
        return handled

    def _read_new(self, stop: StopEvent, block_ms: int | None) -> int:
        with broker(self._s.redis_url):
            reply = self._redis.xreadgroup(
                self._s.group,
                self.name,
                {self._s.stream: ">"},
                count=self._s.batch,
                block=block_ms,
            )
        entries = entries_of(reply)
        return self._handle_all(entries, stop, reclaimed=False, counted=False)

    def _pending_count(self) -> int:
        with broker(self._s.redis_url):
            summary = self._redis.xpending(self._s.stream, self._s.group)
        return int(summary["pending"])

    def _handle_all(
        self, entries: list[Entry], stop: StopEvent, *, reclaimed: bool, counted: bool
    ) -> int:
        handled = 0
        for entry_id, fields in entries:
            if stop.is_set():
                break
            deliveries = self._deliveries(entry_id) if counted else 1
            self.stats.reclaimed += int(reclaimed)
            self._handle(entry_id, fields, deliveries)
            handled += 1
        return handled

    def _deliveries(self, entry_id: bytes) -> int:
        return deliveries(self._redis, self._s.redis_url, self._s.stream, self._s.group, entry_id)

    def _handle(self, entry_id: bytes, fields: dict[bytes, bytes] | None, deliveries: int) -> None:
        if fields is None:
            # Deleted from the stream while pending: nothing left to evaluate.
            self._ack(entry_id)
            return
        raw = fields.get(PAYLOAD_FIELD)
        if deliveries > self._s.max_deliveries:
            error = f"delivered {deliveries} times without being acknowledged"
            self._dead_letter(entry_id, raw, error, deliveries)
            return
        if raw is None:
            self._dead_letter(entry_id, raw, "payload: field missing from the entry", deliveries)
            return
        try:
            request = parse_evaluate_payload(raw)
        except PayloadError as exc:
            self._dead_letter(entry_id, raw, str(exc), deliveries)
            return
        try:
            response = self._core.evaluate(request)
        except TransientError:
            # The model endpoint is away, which is not this entry's fault: it stays pending
            # with its delivery count put back, and the worker backs off (see run).
            put_back_delivery(
                self._redis,
                self._s.redis_url,
                self._s.stream,
                self._s.group,
                self.name,
                entry_id,
                deliveries,
            )
            raise
        except Exception as exc:
            error = f"evaluation failed: {type(exc).__name__}: {exc}"
            if deliveries >= self._s.max_deliveries:
                self._dead_letter(entry_id, raw, error, deliveries)
                return
            self.stats.failed += 1
            logger.warning(
                "entry %s (delivery %d of %d): %s; left pending for another try",
                entry_id.decode(),
                deliveries,
                self._s.max_deliveries,
                error,
            )
            return
        self._write_result(entry_id, request, response.model_dump_json())

    def _write_result(self, entry_id: bytes, request: EvaluateRequest, payload: str) -> None:
        with broker(self._s.redis_url):
            pipe = self._redis.pipeline(transaction=True)
            pipe.xadd(
                self._s.results_stream,
                {"event_id": request.event_id, "source_id": entry_id, "payload": payload},
            )
            pipe.xack(self._s.stream, self._s.group, entry_id)
            pipe.execute()
        self.stats.processed += 1

    def _dead_letter(self, entry_id: bytes, raw: bytes | None, error: str, deliveries: int) -> None:
        logger.warning("entry %s dead-lettered: %s", entry_id.decode(), error)
        with broker(self._s.redis_url):
            pipe = self._redis.pipeline(transaction=True)
            pipe.xadd(
                self._s.dead_letter_stream,
                {
                    "source_id": entry_id,
                    "error": error,
                    "payload": raw if raw is not None else b"",
                    "deliveries": deliveries,
                    "consumer": self.name,
                },
            )
            pipe.xack(self._s.stream, self._s.group, entry_id)
            pipe.execute()
        self.stats.dead_lettered += 1

    def _ack(self, entry_id: bytes) -> None:
        with broker(self._s.redis_url):
            self._redis.xack(self._s.stream, self._s.group, entry_id)
