"""Helpers for the service tests: configs, a real uvicorn server in a thread, payloads."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import redis
from fastapi import FastAPI

from aclarai.daemon.config import Config, load_config
from aclarai.daemon.service.api import build_server

STARTUP_TIMEOUT_S = 10.0


def make_config(
    tmp_path: Path,
    overrides: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> Config:
    """A config with no user file, the given environment and dotted-key overrides."""
    environ = {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "ACLARAI_STATE_DIR": str(tmp_path / "state"),
        **(env or {}),
    }
    return load_config(env=environ, overrides=overrides or {})


def stream_names(tag: str | None = None) -> dict[str, str]:
    """Overrides giving a test its own streams and group on the shared redis-server."""
    tag = tag or uuid.uuid4().hex[:10]
    return {
        "eval_stream.stream": f"events-{tag}",
        "eval_stream.group": f"group-{tag}",
        "eval_stream.results_stream": f"results-{tag}",
        "eval_stream.dead_letter_stream": f"dead-{tag}",
    }


@contextmanager
def running_app(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a random loopback port; yield its base URL."""
    server = build_server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def evaluate_payload(
    event_id: str = "evt-1",
    *,
    query: str = "How tall is the Eiffel Tower?",
    context: str = "The Eiffel Tower in Paris is 330 metres tall. It was completed in 1889.",
    answer: str = "The Eiffel Tower is 330 metres tall.",
) -> dict[str, Any]:
    """A request in the shape existing clients send."""
    return {
        "event_id": event_id,
        "event_type": "agent.answer",
        "agent": {"name": "support-bot", "type": "rag", "version": "2.1.0"},
        "interaction": {"user_query": query, "context": context, "answer": answer},
    }


def without_durations(response: Mapping[str, Any]) -> dict[str, Any]:
    """A response with the stage timings removed (they differ from run to run)."""
    return {
        **response,
        "stages": [
            {k: v for k, v in stage.items() if k != "duration_ns"} for stage in response["stages"]
        ],
    }


def results(client: redis.Redis, config: Config) -> list[dict[str, Any]]:
    return [
        {
            "event_id": fields[b"event_id"].decode(),
            "source_id": fields[b"source_id"],
            "payload": json.loads(fields[b"payload"]),
        }
        for fields in stream_fields(client, config.eval_stream.results_stream)
    ]


# The `-d` bodies of the spec's two curl examples, as written there.
CAPITAL_OF_FRANCE = b"""{
    "event_id": "evt-001",
    "event_type": "agent_response",
    "agent": {
      "name": "my-agent",
      "type": "rag",
      "version": "1.0.0"
    },
    "interaction": {
      "user_query": "What is the capital of France?",
      "context": "France is a country in Western Europe. Its capital city is Paris, which is also the largest city in the country.",
      "answer": "The capital of France is Paris."
    }
  }"""  # noqa: E501


def stream_fields(client: redis.Redis, stream: str) -> list[dict[bytes, bytes]]:
    """The fields of every entry of ``stream``, oldest first, without their ids."""
    return [fields for _, fields in cast(list[Any], client.xrange(stream))]
