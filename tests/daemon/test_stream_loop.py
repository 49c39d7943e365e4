"""The one Redis Streams consumer loop, on a real redis-server, with a handler of its own: the
group, acknowledgement, reclaim, dead letters, outages and the counts, whatever the entries
mean."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import redis
from redis.client import Pipeline

from aclarai.daemon.stream_loop import Delivery, StreamLoop, StreamSpec, StreamStats, Words
from aclarai.parsers import EvaluatorUnavailable, PayloadError
from tests.fixtures.redis_server import RedisServer

WORDS = Words(
    entry="entry",
    entries="entries",
    waiting="entries",
    settled="done",
    member="loop",
    failure="failed",
)
LOG = logging.getLogger("tests.stream_loop")


@dataclass
class Shout:
    """Upper-cases each payload into its own results stream; ``fail`` says what a payload's
    work raises instead (``None``: nothing)."""

    results: str
    dead: str
    fail: Callable[[str], Exception | None] = lambda _: None
    seen: list[str] = field(default_factory=list)

    def parse(self, payload: bytes | None) -> str:
        if payload is None or not payload.isascii():
            raise PayloadError("payload: not ASCII text")
        return payload.decode()

    def work(self, item: str) -> str:
        self.seen.append(item)
        error = self.fail(item)
        if error is not None:
            raise error
        return item.upper()

    def write_result(self, pipe: Pipeline, delivery: Delivery, item: str, result: str) -> None:
        pipe.xadd(self.results, {"source_id": delivery.entry_id, "payload": result})

    def write_dead_letter(
        self, pipe: Pipeline, delivery: Delivery, item: str | None, error: str
    ) -> None:
        pipe.xadd(
            self.dead,
            {"source_id": delivery.entry_id, "error": error, "deliveries": delivery.count},
        )


@dataclass
class Streams:
    client: redis.Redis
    url: str
    stream: str = field(default_factory=lambda: f"loop-{uuid.uuid4().hex[:8]}")

    @property
    def results(self) -> str:
        return f"{self.stream}:results"

    @property
    def dead(self) -> str:
        return f"{self.stream}:dead"

    def spec(self, **overrides: Any) -> StreamSpec:
        settings: dict[str, Any] = {
            "url": self.url,
            "stream": self.stream,
            "group": "g",
            "max_deliveries": 3,
            "reclaim_after_s": 0.3,
            "block_s": 0.1,
            "batch": 10,
            **overrides,
        }
        return StreamSpec(**settings)

    def handler(self, fail: Callable[[str], Exception | None] = lambda _: None) -> Shout:
        return Shout(self.results, self.dead, fail)

    def loop(self, handler: Shout, name: str, **overrides: Any) -> StreamLoop[str, str]:
        return StreamLoop(
            self.client, self.spec(**overrides), handler, name=name, words=WORDS, log=LOG
        )

    def publish(self, *payloads: bytes) -> list[bytes]:
        return [cast(bytes, self.client.xadd(self.stream, {"payload": p})) for p in payloads]

    def read(self, stream: str) -> list[dict[bytes, bytes]]:
        return [fields for _, fields in cast(list[Any], self.client.xrange(stream))]

    def pending(self) -> list[tuple[bytes, bytes, int]]:
        rows = self.client.xpending_range(self.stream, "g", min="-", max="+", count=100)
        return [
            (cast(bytes, r["message_id"]), cast(bytes, r["consumer"]), int(r["times_delivered"]))
            for r in rows
        ]


@pytest.fixture
def streams(redis_server: RedisServer) -> Iterator[Streams]:
    client = redis.Redis.from_url(redis_server.url)
    yield Streams(client, redis_server.url)
    client.close()


def drain(loop: StreamLoop[str, str]) -> StreamStats:
    return loop.run(threading.Event(), burst=True)


def test_the_group_is_created_once_and_each_entry_answered_and_acknowledged(
    streams: Streams, caplog: pytest.LogCaptureFixture
) -> None:
    ids = streams.publish(b"one", b"two")
    with caplog.at_level(logging.INFO, logger=LOG.name):
        first = drain(streams.loop(streams.handler(), "a"))
        streams.publish(b"three")
        second = drain(streams.loop(streams.handler(), "b"))

    created = [r for r in caplog.records if r.getMessage().startswith("created consumer group")]
    assert len(created) == 1
    assert [g["name"] for g in streams.client.xinfo_groups(streams.stream)] == [b"g"]
    assert first == StreamStats(processed=2) and second == StreamStats(processed=1)
    answers = streams.read(streams.results)
    assert [a[b"payload"] for a in answers] == [b"ONE", b"TWO", b"THREE"]
    assert [a[b"source_id"] for a in answers[:2]] == ids
    assert streams.pending() == [] and streams.read(streams.dead) == []


def test_an_entry_whose_consumer_stopped_is_taken_over_after_the_idle_time(
    streams: Streams,
) -> None:
    [entry] = streams.publish(b"hello")
    stop = threading.Event()

    def crash(_: str) -> Exception:
        stop.set()  # the consumer dies with the entry in hand
        return RuntimeError("crashed")

    dying = streams.loop(streams.handler(crash), "dying")
    assert dying.run(stop).failed == 1
    assert streams.pending() == [(entry, b"dying", 1)]

    taker = streams.handler()
    stats = drain(streams.loop(taker, "taker"))

    assert stats == StreamStats(processed=1, reclaimed=1)
    assert taker.seen == ["hello"]
    assert [a[b"payload"] for a in streams.read(streams.results)] == [b"HELLO"]
    assert streams.pending() == []


def test_an_entry_that_keeps_failing_is_dead_lettered_after_max_deliveries(
    streams: Streams,
) -> None:
    [entry] = streams.publish(b"poison")
    handler = streams.handler(lambda item: ValueError(f"cannot shout {item}"))

    stats = drain(streams.loop(handler, "a", max_deliveries=2))

    assert stats == StreamStats(failed=1, dead_lettered=1, reclaimed=1)
    assert handler.seen == ["poison", "poison"]
    [letter] = streams.read(streams.dead)
    assert letter == {
        b"source_id": entry,
        b"error": b"failed: ValueError: cannot shout poison",
        b"deliveries": b"2",
    }
    assert streams.pending() == [] and streams.read(streams.results) == []


def test_an_unreadable_entry_is_dead_lettered_at_once(streams: Streams) -> None:
    [bad, good] = streams.publish("caf\u00e9".encode(), b"fine")
    handler = streams.handler()

    stats = drain(streams.loop(handler, "a"))

    assert stats == StreamStats(processed=1, dead_lettered=1)
    assert handler.seen == ["fine"]
    assert streams.read(streams.dead) == [
        {b"source_id": bad, b"error": b"payload: not ASCII text", b"deliveries": b"1"}
    ]
    assert streams.read(streams.results) == [{b"source_id": good, b"payload": b"FINE"}]


def test_a_model_outage_leaves_the_entry_pending_with_its_delivery_put_back(
    streams: Streams,
) -> None:
    [entry] = streams.publish(b"wait")
    away = streams.handler(lambda _: EvaluatorUnavailable("model unreachable"))

    stats = drain(streams.loop(away, "a"))

    assert stats == StreamStats(model_outages=1)
    assert streams.pending() == [(entry, b"a", 0)]
    again = drain(streams.loop(streams.handler(), "a"))
    assert again.processed == 1 and streams.read(streams.dead) == []


@pytest.mark.parametrize("jobs", [None, 3])
def test_a_redis_outage_does_not_count_against_the_deliveries(
    tmp_path: Path, jobs: int | None
) -> None:
    server = RedisServer(tmp_path, append_only=True)
    server.start()
    client = redis.Redis.from_url(server.url)
    in_hand, go = threading.Event(), threading.Event()

    def hold(_: str) -> None:
        in_hand.set()
        go.wait(20)

    streams = Streams(client, server.url)
    handler = streams.handler(hold)
    # One delivery allowed: had the outage's re-read counted, the entry would be dead-lettered.
    loop = streams.loop(handler, "a", max_deliveries=1, jobs=jobs)
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop,), daemon=True)
    try:
        streams.publish(b"survivor")
        thread.start()
        wait_for(in_hand.is_set)
        server.stop()
        go.set()  # its result meets Redis away
        wait_for(lambda: loop.state == "waiting for Redis")
        server.start()
        wait_for(lambda: len(streams.read(streams.results)) == 1)
        assert streams.read(streams.dead) == [] and streams.pending() == []
    finally:
        stop.set()
        thread.join(10)
        client.close()
        server.stop()
    assert loop.stats == StreamStats(processed=1, broker_outages=1)
    assert handler.seen == ["survivor", "survivor"]


@pytest.mark.parametrize("jobs", [None, 3])
def test_many_entries_are_each_answered_once(streams: Streams, jobs: int | None) -> None:
    payloads = [f"entry {n}".encode() for n in range(12)]
    streams.publish(*payloads)

    stats = drain(streams.loop(streams.handler(), "a", jobs=jobs, batch=4))

    assert stats == StreamStats(processed=12)
    answers = sorted(a[b"payload"] for a in streams.read(streams.results))
    assert answers == sorted(p.upper() for p in payloads)
    assert streams.pending() == []


def test_a_vanished_group_is_created_again(streams: Streams) -> None:
    streams.publish(b"before")
    loop = streams.loop(streams.handler(), "a")
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(streams.read(streams.results)) == 1)
        streams.client.delete(streams.stream)
        wait_for(lambda: streams.client.exists(streams.stream) == 1)
        streams.publish(b"after")
        wait_for(lambda: len(streams.read(streams.results)) == 2 and streams.pending() == [])
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
    assert loop.stats.processed == 2


def wait_for(condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = threading.Event()
    timer = threading.Timer(timeout_s, deadline.set)
    timer.start()
    try:
        while not condition():
            if deadline.wait(0.05):
                raise AssertionError("condition not reached in time")
    finally:
        timer.cancel()
