"""The Redis Stream consumer of the evaluation service (``aclarai consume``).

Each entry of ``eval_stream.stream`` (default ``eval-events``) carries a ``payload`` field holding
the same JSON as ``POST /api/v1/evaluate``. Consumers join ``eval_stream.group``; each result is
XADDed to ``eval_stream.results_stream`` with the event id, and the entry is XACKed in the same
MULTI/EXEC, so a result is never written without its entry being acknowledged, nor the other way
round.

Delivery is at least once and nothing is lost: an entry read but never acknowledged (its consumer
died) is taken over with XAUTOCLAIM once it has been pending ``eval_stream.reclaim_after_s``, at
start and periodically. An entry whose payload cannot be parsed, that failed on its last allowed
delivery, or that has been delivered more than ``eval_stream.max_deliveries`` times (it keeps
killing consumers) goes to ``eval_stream.dead_letter_stream`` with the error, and is
acknowledged. Several consumers (processes) share one group; that is how the service scales out.

Redis being unreachable is never fatal: it is logged once, retried with capped exponential
backoff, and logged again when the connection is back. The model endpoint being unreachable is
handled the same way: the entry is not acknowledged (no ``review`` verdict made without the model)
and stays pending with its delivery count put back, so an outage never dead-letters events. A
stop request (SIGTERM, SIGINT or the caller's stop event) lets the entry in hand finish; entries
read in the same batch but not started stay pending and are reclaimed by another consumer after
``eval_stream.reclaim_after_s``. That loop is :mod:`aclarai.daemon.stream_loop`'s; this module
says what an event means.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable

import redis
from redis.client import Pipeline

from aclarai.daemon.config import Config, EvalStreamSettings
from aclarai.daemon.redis_link import StopEvent, connect, stop_signals
from aclarai.daemon.service.core import (
    EvaluateRequest,
    ServiceCore,
    build_service_core,
    parse_evaluate_payload,
)
from aclarai.daemon.stream_loop import Delivery, StreamLoop, StreamSpec, StreamStats, Words
from aclarai.parsers import PayloadError

logger = logging.getLogger(__name__)

WORDS = Words(
    entry="entry",
    entries="entries",
    waiting="events",
    settled="evaluated",
    member="consumer",
    failure="evaluation failed",
)


def run_consumer(
    config: Config,
    *,
    core: ServiceCore | None = None,
    consumer: str | None = None,
    stop_event: StopEvent | None = None,
    burst: bool = False,
) -> StreamStats:
    """Consume evaluation events until stopped.

    Args:
        config: ``eval_stream`` names the server, streams and group; ``service`` the
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
            return EvalStreamConsumer(client, settings, core, name=name).run(stop, burst=burst)
    finally:
        client.close()
        if own:
            core.close()


class EvalStreamConsumer:
    """One consumer of the group: what an evaluation event means to the
    :class:`~aclarai.daemon.stream_loop.StreamLoop` behind :func:`run_consumer`.

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
        self._s = settings
        self._core = core
        self.name = name
        spec = StreamSpec(
            url=settings.redis_url,
            stream=settings.stream,
            group=settings.group,
            max_deliveries=settings.max_deliveries,
            reclaim_after_s=settings.reclaim_after_s,
            block_s=settings.block_s,
            batch=settings.batch,
        )
        self._loop = StreamLoop(client, spec, self, name=name, words=WORDS, log=logger, clock=clock)

    @property
    def stats(self) -> StreamStats:
        return self._loop.stats

    def run(self, stop: StopEvent, *, burst: bool = False) -> StreamStats:
        """Loop until ``stop`` is set (or, with ``burst``, until nothing is left)."""
        return self._loop.run(stop, burst=burst)

    def parse(self, payload: bytes | None) -> EvaluateRequest:
        if payload is None:
            raise PayloadError("payload: field missing from the entry")
        return parse_evaluate_payload(payload)

    def work(self, request: EvaluateRequest) -> str:
        return self._core.evaluate(request).model_dump_json()

    def write_result(
        self, pipe: Pipeline, delivery: Delivery, request: EvaluateRequest, result: str
    ) -> None:
        pipe.xadd(
            self._s.results_stream,
            {"event_id": request.event_id, "source_id": delivery.entry_id, "payload": result},
        )

    def write_dead_letter(
        self, pipe: Pipeline, delivery: Delivery, request: EvaluateRequest | None, error: str
    ) -> None:
        pipe.xadd(
            self._s.dead_letter_stream,
            {
                "source_id": delivery.entry_id,
                "error": error,
                "payload": delivery.payload if delivery.payload is not None else b"",
                "deliveries": delivery.count,
                "consumer": self.name,
            },
        )
