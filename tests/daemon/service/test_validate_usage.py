"""``aclarai validate`` says what a run cost the model endpoint (issue 23): the LLM client's usage
counters in the report, checked against what a scripted OpenAI-compatible server received."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aclarai.daemon.service.core import build_service_core
from aclarai.daemon.service.validate import format_report, validate
from tests.helpers.cli import run_cli
from tests.helpers.scripted_llm import (
    Recorded,
    Reply,
    ScriptedLLMServer,
    grades_responder,
    json_reply,
    prompt_tokens,
    scripted_llm_server,
)
from tests.helpers.service import CAPITAL_OF_FRANCE, make_config

PAIRS = [
    {
        "source": "The tower is 330 metres tall.",
        "claim": "The tower is 330 metres tall.",
        "label": 1,
    },
    {"source": "The tower is 330 metres tall.", "claim": "The tower stands in Rome.", "label": 0},
    {"source": "Paris is the capital of France.", "claim": "Paris is in France.", "label": "true"},
    {"source": "Paris is the capital of France.", "claim": "Lyon is the capital.", "label": "0"},
]


@pytest.fixture
def llm() -> Iterator[ScriptedLLMServer]:
    with scripted_llm_server() as server:
        server.responder = grades_responder()
        yield server


def lines() -> list[bytes]:
    return [json.dumps(pair).encode() for pair in PAIRS]


def sent(server: ScriptedLLMServer) -> dict[str, int]:
    """What the server counted: its requests and the prompt tokens it reported for them."""
    chats = server.chat_requests
    return {"calls": len(chats), "prompt_tokens": sum(prompt_tokens(r.body) for r in chats)}


def test_the_llm_backend_reports_the_calls_and_tokens_the_server_saw(
    tmp_path: Path, llm: ScriptedLLMServer
) -> None:
    config = make_config(tmp_path, {"model.backend": "llm", "model.llm.api_base": llm.base_url})
    core = build_service_core(config)
    try:
        report = validate(lines(), core, claim_threshold=0.5)
    finally:
        core.close()
    assert report.claims is not None and report.claims.n == len(PAIRS)
    assert report.usage is not None
    assert sent(llm)["calls"] > 0
    assert {k: report.usage[k] for k in ("calls", "prompt_tokens")} == sent(llm)
    assert report.as_dict()["usage"] == report.usage
    usage_line = next(line for line in format_report(report).splitlines() if "llm usage" in line)
    # Every counter the client keeps is shown, whatever it keeps.
    assert all(f"{key} {value}" in usage_line for key, value in report.usage.items())


def test_the_offline_backend_reports_no_usage(tmp_path: Path) -> None:
    core = build_service_core(make_config(tmp_path))
    try:
        report = validate(lines(), core, claim_threshold=0.5)
    finally:
        core.close()
    assert report.usage is None and report.as_dict()["usage"] is None
    assert "llm usage" not in format_report(report)


def test_the_validate_command_prints_its_usage_as_json(
    tmp_path: Path, llm: ScriptedLLMServer
) -> None:
    data = tmp_path / "pairs.jsonl"
    data.write_bytes(b"\n".join(lines()) + b"\n")
    env = {
        "ACLARAI_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "ACLARAI_MODEL__LLM__API_BASE": llm.base_url,
        "PATH": "/usr/bin:/bin",
    }
    done = run_cli("validate", "--backend", "llm", "--json", str(data), env=env, text=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["claims"]["n"] == len(PAIRS)
    assert {k: report["usage"][k] for k in ("calls", "prompt_tokens")} == sent(llm)


def test_answer_events_run_no_more_at_once_than_a_one_slot_server_serves(tmp_path: Path) -> None:
    # A judge's timeout counts from when it was asked: four events' judges queued behind one
    # slot would time out, so a batch takes the slots the server publishes as its worker count.
    event = json.loads(CAPITAL_OF_FRANCE)

    def respond(request: Recorded) -> Reply:
        time.sleep(0.25)
        return json_reply({"score": 1, "reason": "answers the query from the context"})

    with scripted_llm_server() as server:
        server.props = {"total_slots": 1, "default_generation_settings": {"n_ctx": 4096}}
        server.responder = respond
        config = make_config(
            tmp_path,
            {
                "model.backend": "llm",
                "model.llm.api_base": server.base_url,
                "service.judge_timeout_s": 1.5,
            },
        )
        core = build_service_core(config)
        try:
            events = [
                json.dumps({**event, "event_id": f"evt-{n}", "human_annotation": "pass"}).encode()
                for n in range(4)
            ]
            report = validate(events, core, claim_threshold=0.5, workers=4)
        finally:
            core.close()

    assert report.answers is not None
    assert report.answers.confusion[0][0] == 4, "every right, grounded answer passes"
    assert not report.errors
