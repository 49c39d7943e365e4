"""The evaluation service's two documented requests, byte for byte, through the real HTTP server
and through the real Redis Stream (the evaluation service's spec: "Evaluate Agent Response", "Test —
Early Exit (bad answer)" and "Sending Messages to the Stream"), on the offline judges."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from aclarai.daemon.service.api import create_app
from aclarai.daemon.service.consume import run_consumer
from aclarai.daemon.service.core import ServiceCore, build_service_core
from tests.fixtures.redis_server import RedisServer
from tests.helpers.service import CAPITAL_OF_FRANCE, make_config, results, running_app, stream_names

EARLY_EXIT = b"""{
    "event_id": "evt-002",
    "event_type": "agent_response",
    "agent": { "name": "my-agent", "type": "rag", "version": "1.0.0" },
    "interaction": {
      "user_query": "Explain the theory of relativity in detail",
      "context": "Einstein developed the theory of relativity.",
      "answer": "ok"
    }
  }"""

# The payload of the spec's `redis-cli XADD eval-events '*' payload '…'` example.
STREAM_EXAMPLE = b"""{
  "event_id": "evt-001",
  "event_type": "agent_response",
  "agent": {"name": "my-agent", "type": "rag", "version": "1.0.0"},
  "interaction": {
    "user_query": "What is the capital of France?",
    "context": "France is a country in Western Europe. Its capital city is Paris.",
    "answer": "The capital of France is Paris."
  }
}"""

DOCUMENTED_STAGES = [
    "length-checker",
    "overlap-checker",
    "format-checker",
    "relevance-judge",
    "faithfulness-judge",
    "coherence-judge",
]


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceCore]:
    built = build_service_core(make_config(tmp_path_factory.mktemp("spec")))
    yield built
    built.close()


@pytest.fixture(scope="module")
def api_url(tmp_path_factory: pytest.TempPathFactory, core: ServiceCore) -> Iterator[str]:
    with running_app(create_app(make_config(tmp_path_factory.mktemp("api")), core)) as url:
        yield url


def post(url: str, body: bytes) -> dict[str, Any]:
    response = httpx.post(
        f"{url}/api/v1/evaluate", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text
    return response.json()


def assert_documented_pass(body: dict[str, Any], event_id: str) -> None:
    assert body["id"] == event_id
    assert [stage["name"] for stage in body["stages"]] == DOCUMENTED_STAGES
    for stage in body["stages"]:
        assert 0.0 <= stage["score"] <= 1.0 and stage["reason"] and stage["duration_ns"] > 0
    pre = {s["name"]: s for s in body["stages"][:3]}
    assert pre["length-checker"]["score"] == 1.0
    assert pre["length-checker"]["reason"] == "Answer length is acceptable"
    assert pre["format-checker"]["score"] == 1.0
    assert pre["format-checker"]["reason"] == "Valid Answer"
    assert pre["overlap-checker"]["reason"].startswith("There is a good overlap")
    assert isinstance(body["confidence"], float) and body["confidence"] > 0.8
    assert body["verdict"] == "pass"


def assert_documented_early_exit(body: dict[str, Any]) -> None:
    assert body["id"] == "evt-002"
    assert body["verdict"] == "fail"
    assert [stage["name"] for stage in body["stages"]] == DOCUMENTED_STAGES[:3]
    assert "early exit" in body["reason"]


def test_capital_of_france_passes_through_all_six_stages_over_http(api_url: str) -> None:
    assert_documented_pass(post(api_url, CAPITAL_OF_FRANCE), "evt-001")


def test_ok_to_explain_relativity_fails_early_with_no_judge_over_http(api_url: str) -> None:
    assert_documented_early_exit(post(api_url, EARLY_EXIT))


def test_documented_requests_through_the_redis_stream(
    tmp_path: Path, redis_server: RedisServer, core: ServiceCore, api_url: str
) -> None:
    config = make_config(tmp_path, {"eval_stream.redis_url": redis_server.url, **stream_names()})
    client = redis.Redis.from_url(redis_server.url)
    try:
        for payload in (STREAM_EXAMPLE, EARLY_EXIT):
            client.xadd(config.eval_stream.stream, {"payload": payload})
        stats = run_consumer(config, core=core, stop_event=threading.Event(), burst=True)
        assert stats.processed == 2 and stats.dead_lettered == 0
        got = {row["event_id"]: row["payload"] for row in results(client, config)}
    finally:
        client.close()
    assert_documented_pass(got["evt-001"], "evt-001")
    assert_documented_early_exit(got["evt-002"])
    over_http = post(api_url, STREAM_EXAMPLE)
    assert over_http["verdict"] == got["evt-001"]["verdict"]
    assert over_http["confidence"] == pytest.approx(got["evt-001"]["confidence"])
