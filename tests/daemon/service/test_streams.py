"""The Redis Stream consumer against a real redis-server on a loopback port."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
import redis

from aclarai.agents import Interaction, Judge, Judgement
from aclarai.daemon.config import Config
from aclarai.daemon.service.api import create_app
from aclarai.daemon.service.consume import run_consumer
from aclarai.daemon.service.core import (
    EvaluateRequest,
    EvaluateResponse,
    ServiceCore,
    assemble_core,
    build_service_core,
)
from aclarai.daemon.stream_loop import StreamStats
from tests.fixtures.processes import free_port
from tests.fixtures.redis_server import RedisServer, start_redis_server
from tests.helpers.service import (
    evaluate_payload,
    make_config,
    results,
    running_app,
    stream_fields,
    stream_names,
    without_durations,
)
from tests.helpers.service_fakes import OverlapEvaluator

ROOT = Path(__file__).resolve().parents[3]
WAIT_S = 20.0


@pytest.fixture(scope="module")
def offline_core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceCore]:
    core = build_service_core(make_config(tmp_path_factory.mktemp("core")))
    yield core
    core.close()


@pytest.fixture
def r(redis_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server.url)
    yield client
    client.close()


@pytest.fixture
def stream_config(tmp_path: Path, redis_server: RedisServer) -> Callable[..., Config]:
    """``stream_config(**overrides)``: a config on the shared server with its own streams."""
    names = stream_names()

    def create(**overrides: Any) -> Config:
        settings = {
            "eval_stream.redis_url": redis_server.url,
            "eval_stream.block_s": 0.1,
            "eval_stream.reclaim_after_s": 0.3,
            **names,
            **overrides,
        }
        return make_config(tmp_path, settings)

    return create


def publish(client: redis.Redis, config: Config, payload: Any) -> bytes:
    raw = payload if isinstance(payload, bytes | str) else json.dumps(payload)
    return cast(bytes, client.xadd(config.eval_stream.stream, {"payload": raw}))


def dead_letters(client: redis.Redis, config: Config) -> list[dict[bytes, bytes]]:
    return stream_fields(client, config.eval_stream.dead_letter_stream)


def pending(client: redis.Redis, config: Config) -> int:
    return int(client.xpending(config.eval_stream.stream, config.eval_stream.group)["pending"])


def wait_until(condition: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


class ConsumerThread:
    """``run_consumer`` in a thread, stopped through its stop event."""

    def __init__(self, config: Config, core: ServiceCore, name: str):
        self.stop = threading.Event()
        self.stats: StreamStats | None = None
        self._thread = threading.Thread(
            target=self._run, args=(config, core, name), name=name, daemon=True
        )
        self._thread.start()

    def _run(self, config: Config, core: ServiceCore, name: str) -> None:
        self.stats = run_consumer(config, core=core, consumer=name, stop_event=self.stop)

    def join(self) -> StreamStats:
        self.stop.set()
        self._thread.join(timeout=WAIT_S)
        assert not self._thread.is_alive(), "consumer did not stop"
        assert self.stats is not None
        return self.stats


class PacedJudge(Judge):
    """Takes a little while per entry, so that two consumers interleave."""

    name = "relevance-judge"

    def judge(self, interaction: Interaction) -> Judgement:
        time.sleep(0.03)
        return Judgement(1.0, "paced")


class ExplodingCore(ServiceCore):
    def evaluate(self, request: EvaluateRequest) -> EvaluateResponse:
        raise RuntimeError("boom")


def test_results_match_the_http_api_for_the_same_payload(
    r: redis.Redis, stream_config: Callable[..., Config], offline_core: ServiceCore
) -> None:
    config = stream_config()
    payloads = [
        evaluate_payload("evt-good"),
        evaluate_payload("evt-invented", answer="The Eiffel Tower is 150 metres tall, in Rome."),
        evaluate_payload(
            "evt-short",
            query="Explain how the tower was designed and built, step by step.",
            answer="ok",
        ),
    ]
    ids = [publish(r, config, p) for p in payloads]
    stats = run_consumer(config, core=offline_core, stop_event=threading.Event(), burst=True)
    assert stats.processed == 3 and stats.dead_lettered == 0
    assert pending(r, config) == 0
    got = {row["event_id"]: row for row in results(r, config)}
    assert set(got) == {"evt-good", "evt-invented", "evt-short"}
    assert [got[p["event_id"]]["source_id"] for p in payloads] == ids
    with running_app(create_app(config, offline_core)) as url:
        for payload in payloads:
            http = httpx.post(f"{url}/api/v1/evaluate", json=payload).json()
            assert without_durations(got[payload["event_id"]]["payload"]) == without_durations(http)
    groups = r.xinfo_groups(config.eval_stream.stream)
    assert [g["name"].decode() for g in groups] == [config.eval_stream.group]


def test_malformed_entries_go_to_the_dead_letter_stream_acknowledged(
    r: redis.Redis, stream_config: Callable[..., Config], offline_core: ServiceCore
) -> None:
    config = stream_config()
    bad_json = publish(r, config, "{not json")
    missing_field = publish(r, config, {"event_id": "e", "event_type": "t"})
    not_utf8 = publish(r, config, b"\xff\xfe\x00")
    no_payload = cast(bytes, r.xadd(config.eval_stream.stream, {"body": "{}"}))
    good = publish(r, config, evaluate_payload("evt-ok"))
    stats = run_consumer(config, core=offline_core, stop_event=threading.Event(), burst=True)
    assert stats.dead_lettered == 4 and stats.processed == 1
    letters = {fields[b"source_id"]: fields for fields in dead_letters(r, config)}
    assert b"invalid JSON" in letters[bad_json][b"error"]
    assert letters[bad_json][b"payload"] == b"{not json"
    assert b"interaction: Field required" in letters[missing_field][b"error"]
    assert b"agent: Field required" in letters[missing_field][b"error"]
    assert b"not UTF-8" in letters[not_utf8][b"error"]
    assert b"payload: field missing" in letters[no_payload][b"error"]
    assert [row["source_id"] for row in results(r, config)] == [good]
    assert pending(r, config) == 0


def test_several_consumers_share_the_work(
    r: redis.Redis, stream_config: Callable[..., Config]
) -> None:
    config = stream_config(**{"eval_stream.batch": 1})
    core = assemble_core(config.service, OverlapEvaluator(), judges=[PacedJudge()])
    try:
        consumers = [ConsumerThread(config, core, f"worker-{n}") for n in range(2)]
        for n in range(20):
            publish(r, config, evaluate_payload(f"evt-{n}"))
        wait_until(lambda: len(results(r, config)) >= 20)
        stats = [c.join() for c in consumers]
    finally:
        core.close()
    assert sorted(row["event_id"] for row in results(r, config)) == sorted(
        f"evt-{n}" for n in range(20)
    )
    assert sum(s.processed for s in stats) == 20
    assert all(s.processed > 0 for s in stats)
    assert pending(r, config) == 0


def _spawn_slow_consumer(config: Config, marker: Path, hold_s: float) -> subprocess.Popen[str]:
    overrides = {
        "eval_stream.redis_url": config.eval_stream.redis_url,
        "eval_stream.stream": config.eval_stream.stream,
        "eval_stream.group": config.eval_stream.group,
        "eval_stream.results_stream": config.eval_stream.results_stream,
        "eval_stream.dead_letter_stream": config.eval_stream.dead_letter_stream,
        "eval_stream.block_s": 0.1,
        "eval_stream.batch": 1,
        "service.judge_timeout_s": 120,
    }
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.helpers.slow_consumer",
            json.dumps(overrides),
            str(marker),
            str(hold_s),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_an_entry_of_a_killed_consumer_is_reclaimed_by_another(
    r: redis.Redis,
    stream_config: Callable[..., Config],
    offline_core: ServiceCore,
    tmp_path: Path,
) -> None:
    config = stream_config()
    marker = tmp_path / "started.txt"
    process = _spawn_slow_consumer(config, marker, hold_s=60)
    try:
        entry = publish(r, config, evaluate_payload("evt-orphan"))
        wait_until(marker.exists)
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=10)
    rows = r.xpending_range(
        config.eval_stream.stream, config.eval_stream.group, min="-", max="+", count=10
    )
    assert [(row["message_id"], row["consumer"]) for row in rows] == [(entry, b"slow-consumer")]
    assert results(r, config) == []

    stats = run_consumer(config, core=offline_core, stop_event=threading.Event(), burst=True)
    assert stats.reclaimed == 1 and stats.processed == 1
    assert [row["event_id"] for row in results(r, config)] == ["evt-orphan"]
    assert pending(r, config) == 0
    assert dead_letters(r, config) == []


def test_sigterm_finishes_the_entry_in_hand_and_exits(
    r: redis.Redis,
    stream_config: Callable[..., Config],
    offline_core: ServiceCore,
    tmp_path: Path,
) -> None:
    config = stream_config()
    marker = tmp_path / "started.txt"
    process = _spawn_slow_consumer(config, marker, hold_s=1.5)
    try:
        publish(r, config, evaluate_payload("evt-first"))
        publish(r, config, evaluate_payload("evt-second"))
        wait_until(marker.exists)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert json.loads(out.strip().splitlines()[-1]) == {"processed": 1}
    assert [row["event_id"] for row in results(r, config)] == ["evt-first"]
    assert pending(r, config) == 0
    # The second entry was never taken: the next consumer gets it at once.
    stats = run_consumer(config, core=offline_core, stop_event=threading.Event(), burst=True)
    assert stats.processed == 1 and stats.reclaimed == 0
    assert [row["event_id"] for row in results(r, config)] == ["evt-first", "evt-second"]


def test_an_entry_delivered_too_often_is_dead_lettered(
    r: redis.Redis, stream_config: Callable[..., Config], offline_core: ServiceCore
) -> None:
    config = stream_config(**{"eval_stream.max_deliveries": 3})
    entry = publish(r, config, evaluate_payload("evt-poison"))
    r.xgroup_create(config.eval_stream.stream, config.eval_stream.group, id="0")
    r.xreadgroup(config.eval_stream.group, "ghost-1", {config.eval_stream.stream: ">"})
    for n in range(2, 5):
        # Consumers that took the entry and died before acknowledging it.
        r.xautoclaim(
            config.eval_stream.stream, config.eval_stream.group, f"ghost-{n}", min_idle_time=0
        )
    stats = run_consumer(config, core=offline_core, stop_event=threading.Event(), burst=True)
    assert stats.dead_lettered == 1 and stats.processed == 0
    (letter,) = dead_letters(r, config)
    assert letter[b"source_id"] == entry
    assert letter[b"error"] == b"delivered 5 times without being acknowledged"
    assert results(r, config) == []
    assert pending(r, config) == 0


def test_an_entry_failing_on_every_delivery_ends_in_the_dead_letter_stream(
    r: redis.Redis, stream_config: Callable[..., Config]
) -> None:
    config = stream_config(**{"eval_stream.max_deliveries": 2, "eval_stream.reclaim_after_s": 0.2})
    evaluator = OverlapEvaluator()
    base = assemble_core(config.service, evaluator)
    core = ExplodingCore(base.answers, base.nli, base.verifier, evaluator)
    try:
        entry = publish(r, config, evaluate_payload("evt-boom"))
        stats = run_consumer(config, core=core, stop_event=threading.Event(), burst=True)
    finally:
        core.close()
    assert stats.failed == 1 and stats.reclaimed == 1 and stats.dead_lettered == 1
    (letter,) = dead_letters(r, config)
    assert letter[b"source_id"] == entry
    assert letter[b"error"] == b"evaluation failed: RuntimeError: boom"
    assert letter[b"deliveries"] == b"2"
    assert pending(r, config) == 0


def test_redis_outages_are_survived_and_logged_once(
    tmp_path: Path, offline_core: ServiceCore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="aclarai.daemon.service.consume")
    with start_redis_server() as server:
        config = make_config(
            tmp_path,
            {"eval_stream.redis_url": server.url, "eval_stream.block_s": 0.1, **stream_names()},
        )
        consumer = ConsumerThread(config, offline_core, "survivor")
        client = redis.Redis.from_url(server.url)
        try:
            wait_until(lambda: bool(client.exists(config.eval_stream.stream)))
            server.stop()
            wait_until(lambda: "Redis unavailable" in caplog.text)
            time.sleep(1.0)
            server.start()
            publish(client, config, evaluate_payload("evt-after-outage"))
            wait_until(lambda: len(results(client, config)) == 1)
        finally:
            stats = consumer.join()
            client.close()
    unavailable = [rec for rec in caplog.records if "Redis unavailable" in rec.getMessage()]
    assert len(unavailable) == 1
    assert "reachable again" in caplog.text
    assert stats.broker_outages == 1 and stats.processed == 1


def test_an_unreachable_broker_never_crashes_the_consumer(
    tmp_path: Path, offline_core: ServiceCore
) -> None:
    config = make_config(tmp_path, {"eval_stream.redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    stop = threading.Event()
    threading.Timer(1.5, stop.set).start()
    started = time.monotonic()
    stats = run_consumer(config, core=offline_core, stop_event=stop)
    assert stats.broker_outages == 1 and stats.processed == 0
    assert time.monotonic() - started < 5
