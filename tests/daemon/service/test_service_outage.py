"""The evaluation service while its model endpoint is away: 503 with ``Retry-After`` over HTTP,
events left pending on the Redis Stream (never a ``review`` made without the model), and normal
answers once the endpoint is back."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
import redis

from aclarai.daemon.config import Config
from aclarai.daemon.service.api import create_app
from aclarai.daemon.service.consume import run_consumer
from aclarai.daemon.service.core import build_service_core
from tests.fixtures.redis_server import RedisServer
from tests.helpers.scripted_llm import (
    Recorded,
    Reply,
    ScriptedLLMServer,
    claim_ids,
    grades_responder,
    json_reply,
    scripted_llm_server,
)
from tests.helpers.service import evaluate_payload, make_config, running_app, stream_names


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with scripted_llm_server() as server:
        yield server


def judge_everything(request: Recorded) -> Reply:
    """A model that answers every judge and the claim grader well."""
    if claim_ids(request):
        return grades_responder(5)(request)
    return json_reply({"score": 0.95, "reason": "fine"})


def llm_config(tmp_path: Path, server: ScriptedLLMServer, **overrides: Any) -> Config:
    return make_config(
        tmp_path,
        {
            "model.backend": "llm",
            "model.llm.api_base": server.base_url,
            "model.llm.max_attempts": 1,
            **overrides,
        },
    )


def test_the_api_answers_503_with_retry_after_while_the_model_is_down(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> None:
    core = build_service_core(llm_config(tmp_path, llm_server))
    llm_server.responder = judge_everything
    payload = evaluate_payload()
    try:
        with running_app(create_app(make_config(tmp_path), core)) as base:
            llm_server.go_down()
            down = httpx.post(f"{base}/api/v1/evaluate", json=payload, timeout=30)
            llm_server.come_back()
            back = httpx.post(f"{base}/api/v1/evaluate", json=payload, timeout=30)
    finally:
        core.close()

    assert down.status_code == 503
    assert int(down.headers["retry-after"]) >= 1
    assert "model endpoint unreachable" in down.json()["detail"]
    assert back.status_code == 200
    assert back.json()["verdict"] == "pass"


def test_the_stream_consumer_leaves_events_pending_while_the_model_is_down(
    tmp_path: Path, llm_server: ScriptedLLMServer, redis_server: RedisServer
) -> None:
    config = llm_config(
        tmp_path,
        llm_server,
        **{
            "eval_stream.redis_url": redis_server.url,
            "eval_stream.block_s": 0.1,
            "eval_stream.reclaim_after_s": 0.2,
            "eval_stream.max_deliveries": 2,
            **stream_names(),
        },
    )
    client = redis.Redis.from_url(redis_server.url)
    core = build_service_core(config)
    llm_server.responder = judge_everything
    llm_server.go_down()
    stop = threading.Event()
    stats: list[Any] = []
    worker = threading.Thread(
        target=lambda: stats.append(run_consumer(config, core=core, stop_event=stop)), daemon=True
    )
    try:
        client.xadd(
            config.eval_stream.stream, {"payload": json.dumps(evaluate_payload("evt-wait"))}
        )
        worker.start()
        time.sleep(4.0)  # backoff rounds of 0.5, 1 and 2 s: more than max_deliveries tries
        pending_while_down = int(
            client.xpending(config.eval_stream.stream, config.eval_stream.group)["pending"]
        )
        results_while_down = client.xlen(config.eval_stream.results_stream)

        llm_server.come_back()
        wait_for(lambda: client.xlen(config.eval_stream.results_stream) == 1, timeout_s=30)
    finally:
        stop.set()
        worker.join(timeout=30)
        core.close()

    assert (pending_while_down, results_while_down) == (1, 0)
    assert client.xlen(config.eval_stream.dead_letter_stream) == 0, "an outage dead-letters nothing"
    [(_, fields)] = cast(list[Any], client.xrange(config.eval_stream.results_stream))
    assert json.loads(fields[b"payload"])["verdict"] == "pass"
    assert stats and stats[0].model_outages == 1 and stats[0].processed == 1


def wait_for(condition: Callable[[], bool], *, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_a_burst_run_returns_while_the_model_is_down_leaving_the_event_pending(
    tmp_path: Path, llm_server: ScriptedLLMServer, redis_server: RedisServer
) -> None:
    config = llm_config(
        tmp_path, llm_server, **{"eval_stream.redis_url": redis_server.url, **stream_names()}
    )
    client = redis.Redis.from_url(redis_server.url)
    core = build_service_core(config)
    llm_server.go_down()
    try:
        client.xadd(config.eval_stream.stream, {"payload": json.dumps(evaluate_payload("evt-b"))})
        stats = run_consumer(config, core=core, stop_event=threading.Event(), burst=True)
    finally:
        core.close()

    assert (stats.model_outages, stats.processed, stats.dead_lettered) == (1, 0, 0)
    assert int(client.xpending(config.eval_stream.stream, config.eval_stream.group)["pending"]) == 1
