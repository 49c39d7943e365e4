"""What every Redis user of the daemon shares: one client recipe, connection failures as
:class:`~aclarai.parsers.BrokerUnavailable`, and URLs fit to log. Imported only where a
``eval_stream`` or ``grading_workers`` setting asks for Redis."""

from __future__ import annotations

import logging
import random
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Protocol, cast

import redis

from aclarai.parsers import BrokerUnavailable

log = logging.getLogger(__name__)


Entry = tuple[bytes, dict[bytes, bytes] | None]
"""A stream entry as read: its id and fields (``None`` once trimmed from the stream)."""


def entries_of(reply: Any) -> list[Entry]:
    """The entries of an XREADGROUP reply on one stream (``[[stream, entries]]``)."""
    return cast(list[Entry], reply[0][1]) if reply else []


def ensure_group(client: redis.Redis, url: str, stream: str, group: str) -> bool:
    """Create ``group`` on ``stream`` (and the stream) from its start; whether it was new."""
    try:
        with broker(url):
            client.xgroup_create(stream, group, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise
        return False
    return True


def deliveries(client: redis.Redis, url: str, stream: str, group: str, entry_id: bytes) -> int:
    """How many times ``group`` delivered the pending entry (1 once it is not pending)."""
    with broker(url):
        rows = client.xpending_range(stream, group, min=entry_id, max=entry_id, count=1)
    return int(rows[0]["times_delivered"]) if rows else 1


def put_back_delivery(
    client: redis.Redis,
    url: str,
    stream: str,
    group: str,
    consumer: str,
    entry_id: bytes,
    delivered: int,
) -> None:
    """Keep the pending entry on ``consumer`` with one delivery fewer than ``delivered``: the
    last one was spent by an outage, not by the entry."""
    with broker(url):
        client.xclaim(
            stream, group, consumer, 0, [entry_id], retrycount=max(delivered - 1, 0), justid=True
        )


class Backoff:
    """How long to wait before trying Redis (or a model) again: doubling from ``initial_s`` up
    to ``max_s``, each wait jittered so that many workers do not come back at once."""

    def __init__(self, initial_s: float = 0.5, max_s: float = 30.0) -> None:
        self._initial_s = initial_s
        self._max_s = max_s
        self._delay_s = initial_s

    def next_s(self) -> float:
        wait_s = self._delay_s * (0.5 + random.random() / 2)
        self._delay_s = min(self._delay_s * 2, self._max_s)
        return wait_s

    def reset(self) -> None:
        self._delay_s = self._initial_s


class StopEvent(Protocol):
    """What a Redis loop needs of a stop signal."""

    def is_set(self) -> bool: ...


def connect(url: str, *, block_s: float) -> redis.Redis:
    """A client (bytes in, bytes out) whose reads outlast a blocking read of ``block_s``."""
    return redis.Redis.from_url(
        url,
        socket_timeout=block_s + 10,
        socket_connect_timeout=5,
        health_check_interval=30,
    )


def millis(seconds: float) -> int:
    """Seconds as Redis counts blocking reads and idle times; at least 1, since 0 blocks
    forever."""
    return max(1, round(seconds * 1000))


@contextmanager
def broker(url: str) -> Iterator[None]:
    """Translate the client's connection failures into :class:`BrokerUnavailable`."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError) as exc:
        raise BrokerUnavailable(f"cannot reach Redis at {redact(url)}: {exc}") from exc


def redact(url: str) -> str:
    """``url`` without its password."""
    scheme, sep, rest = url.partition("://")
    if "@" not in rest:
        return url
    return f"{scheme}{sep}***@{rest.rsplit('@', 1)[1]}"


def sleep(stop: StopEvent, seconds: float) -> None:
    """Sleep up to ``seconds``, returning early once ``stop`` is set."""
    deadline = time.monotonic() + seconds
    while not stop.is_set() and (left := deadline - time.monotonic()) > 0:
        time.sleep(min(0.1, left))


@contextmanager
def stop_signals(stop_event: StopEvent | None) -> Iterator[StopEvent]:
    """The caller's stop event, or one set by SIGTERM/SIGINT while the block runs."""
    if stop_event is not None:
        yield stop_event
        return
    event = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield event
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        log.info("%s received: finishing the work in hand", signal.Signals(signum).name)
        event.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield event
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
