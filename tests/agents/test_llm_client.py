"""The endpoint client through the real stack (llama-index → openai → HTTP) on a scripted server."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import httpx
import openai
import pytest

from aclarai.agents.llm.client import EndpointSettings, InputTooLong, LLMClient
from aclarai.agents.llm.errors import failure_status, refuses_response_format, translate_error
from aclarai.agents.llm.limits import RateLimiter
from aclarai.agents.llm.prompts import Message
from aclarai.agents.llm.schemas import (
    JudgeOut,
    UnparseableOutput,
    grades_schema,
    parse_json_output,
)
from aclarai.parsers import EvaluationError, EvaluatorUnavailable
from tests.helpers.scripted_llm import (
    ScriptedLLMServer,
    grades_reply,
    json_reply,
    llama_cpp_context_error,
    openai_context_error,
    slow,
    status,
    text,
)

MESSAGES = [Message("system", "Grade it."), Message("user", "the answer")]
GOOD = {"score": 0.75, "reason": "fine"}


def test_good_json_is_parsed_and_the_schema_sent_as_response_format(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client()
    llm_server.queue(json_reply(GOOD))

    reply = client.complete_json("judge-model", MESSAGES, JudgeOut)

    assert reply == JudgeOut(score=0.75, reason="fine")
    body = llm_server.chat_requests[0].body
    assert body["model"] == "judge-model"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "JudgeOut",
            "schema": {
                "properties": {
                    "score": {"maximum": 1.0, "minimum": 0.0, "type": "number"},
                    "reason": {"type": "string"},
                },
                "required": ["score", "reason"],
                "type": "object",
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == "Grade it.", "no schema in the prompt when it is sent"
    usage = client.usage.snapshot()
    assert usage["calls"] == 1
    assert usage["prompt_tokens"] > 0
    assert usage["completion_tokens"] > 0
    assert usage["failures"] == 0


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"score": 0.5, "reason": "fenced"}\n```',
        '```\n{"score": 0.5, "reason": "fenced"}\n```',
        'Sure! Here it is: {"score": 0.5, "reason": "fenced"} Hope this helps.',
    ],
)
def test_fenced_or_wrapped_json_is_accepted_without_repair(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient], reply: str
) -> None:
    client = make_client()
    llm_server.queue(text(reply))

    assert client.complete_json("m", MESSAGES, JudgeOut).score == 0.5
    assert len(llm_server.chat_requests) == 1


def test_malformed_reply_gets_exactly_one_repair_turn(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client()
    llm_server.queue(text("The score is high."), json_reply(GOOD))

    assert client.complete_json("m", MESSAGES, JudgeOut).score == 0.75

    repair = llm_server.chat_requests[1].messages
    assert repair[-2] == {"role": "assistant", "content": "The score is high."}
    assert "could not be used" in repair[-1]["content"]
    assert client.usage.snapshot()["failures"] == 0


def test_malformed_twice_raises_unparseable_after_two_calls(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client()
    llm_server.queue(text("nope"), json_reply({"score": 1.7}))

    with pytest.raises(UnparseableOutput, match="score"):
        client.complete_json("m", MESSAGES, JudgeOut)

    assert len(llm_server.chat_requests) == 2
    assert client.usage.snapshot()["failures"] == 1


def test_429_honours_retry_after(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client()
    llm_server.queue(status(429, {"Retry-After": "1"}), json_reply(GOOD))

    started = time.monotonic()
    assert client.complete_json("m", MESSAGES, JudgeOut).score == 0.75
    elapsed = time.monotonic() - started

    assert elapsed >= 0.95, "the client must wait as long as Retry-After asks"
    usage = client.usage.snapshot()
    assert (usage["calls"], usage["retries"], usage["failures"]) == (2, 1, 0)


def test_5xx_is_retried_up_to_max_attempts_then_unavailable(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client(max_attempts=3)
    llm_server.queue(status(500), status(502), status(503), json_reply(GOOD))

    with pytest.raises(EvaluatorUnavailable) as caught:
        client.complete_json("m", MESSAGES, JudgeOut)

    assert isinstance(caught.value.__cause__, openai.InternalServerError)
    assert len(llm_server.chat_requests) == 3
    usage = client.usage.snapshot()
    assert (usage["calls"], usage["retries"], usage["failures"]) == (3, 2, 1)


def test_5xx_then_success_recovers(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client(max_attempts=3)
    llm_server.queue(status(500), status(503), json_reply(GOOD))

    assert client.complete_json("m", MESSAGES, JudgeOut).score == 0.75
    assert len(llm_server.chat_requests) == 3


def test_slow_reply_times_out_and_is_retried(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client(timeout_s=0.3, max_attempts=2)
    llm_server.queue(slow(3.0, '{"score": 0.1}'), json_reply(GOOD))

    assert client.complete_json("m", MESSAGES, JudgeOut).score == 0.75
    assert len(llm_server.chat_requests) == 2


def test_per_call_timeout_overrides_the_default(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client(timeout_s=5.0, max_attempts=1)
    llm_server.queue(slow(3.0, '{"score": 0.1}'))

    started = time.monotonic()
    with pytest.raises(EvaluatorUnavailable, match="timed out") as caught:
        client.complete_json("m", MESSAGES, JudgeOut, timeout_s=0.3)

    assert time.monotonic() - started < 2.0
    assert isinstance(caught.value.__cause__, openai.APITimeoutError)
    assert not client.health.down, "a caller's short budget ran out, not the endpoint"


def test_a_timeout_within_the_clients_own_time_marks_the_endpoint_down(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client(timeout_s=0.3, max_attempts=1)
    llm_server.queue(slow(3.0, '{"score": 0.1}'))

    with pytest.raises(EvaluatorUnavailable, match="timed out"):
        client.complete_json("m", MESSAGES, JudgeOut)

    assert client.health.down


LONG = {"score": 0.75, "reason": "the answer restates the source's dates and names, nothing more"}
"""A reply of at least 16 tokens by the scripted server's count: long enough to time."""


def test_a_server_that_says_how_fast_it_writes_gets_the_time_to_write_max_tokens(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.tokens_per_s = 20.0
    client = make_client(timeout_s=0.5, max_tokens=20, max_attempts=1)
    llm_server.queue(json_reply(LONG))
    client.complete_json("m", MESSAGES, JudgeOut)

    assert client.call_timeout_s == pytest.approx(0.5 + 20 / 20.0)
    llm_server.queue(slow(1.0, json.dumps(LONG)), slow(3.0, json.dumps(LONG)))
    assert client.complete_json("m", MESSAGES, JudgeOut).score == 0.75
    with pytest.raises(EvaluatorUnavailable, match="timed out"):
        client.complete_json("m", MESSAGES, JudgeOut)


def test_a_calls_own_timeout_and_the_cap_still_bound_a_slow_server(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.tokens_per_s = 20.0
    client = make_client(timeout_s=0.3, max_tokens=20, max_attempts=1)
    llm_server.queue(json_reply(LONG), slow(0.8, json.dumps(LONG)))
    client.complete_json("m", MESSAGES, JudgeOut)

    with pytest.raises(EvaluatorUnavailable, match="timed out"):
        client.complete_json("m", MESSAGES, JudgeOut, timeout_s=0.3)
    llm_server.tokens_per_s = 0.5
    llm_server.queue(json_reply(LONG))
    client.complete_json("m", MESSAGES, JudgeOut)
    assert client.call_timeout_s == pytest.approx(0.3 + 3 * 0.3), "not 0.3 + 20 / 0.5"


def test_a_short_reply_does_not_tell_the_writing_speed(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.tokens_per_s = 20.0
    client = make_client(timeout_s=0.3, max_tokens=20, max_attempts=1)
    llm_server.queue(json_reply({"score": 0.75}), slow(0.8, json.dumps(LONG)))
    client.complete_json("m", MESSAGES, JudgeOut)

    assert client.call_timeout_s == 0.3
    with pytest.raises(EvaluatorUnavailable, match="timed out"):
        client.complete_json("m", MESSAGES, JudgeOut)


def test_the_slowest_writing_speed_is_kept_and_remembered(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient], tmp_path: Path
) -> None:
    state = tmp_path / "llm-endpoints.json"
    first = make_client(state_path=state, timeout_s=1.0, max_tokens=20)
    for speed in (20.0, 10.0, 40.0):
        llm_server.tokens_per_s = speed
        llm_server.queue(json_reply(LONG))
        first.complete_json("m", MESSAGES, JudgeOut)

    second = make_client(state_path=state, timeout_s=1.0, max_tokens=20)
    assert first.call_timeout_s == second.call_timeout_s == pytest.approx(1.0 + 20 / 10.0)
    assert json.loads(state.read_text())[llm_server.base_url]["tokens_per_s"] == 10.0


@pytest.mark.parametrize("code", [400, 401, 404, 422])
def test_client_errors_are_not_retried(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient], code: int
) -> None:
    client = make_client(json_mode=False)
    llm_server.queue(status(code), json_reply(GOOD))

    with pytest.raises(EvaluationError) as caught:
        client.complete_json("m", MESSAGES, JudgeOut)

    assert not isinstance(caught.value, EvaluatorUnavailable)
    assert isinstance(caught.value.__cause__, openai.APIStatusError)
    assert len(llm_server.chat_requests) == 1


def test_refused_formats_step_down_to_schema_in_prompt_and_tolerant_parsing(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client(json_mode=True)
    llm_server.queue(
        status(400, message="response_format json_schema is not supported"),
        status(400, message="response_format is not supported"),
        text('```json\n{"score": 0.25}\n```'),
        json_reply(GOOD),
    )

    assert client.complete_json("m", MESSAGES, JudgeOut).score == 0.25
    assert client.complete_json("m", MESSAGES, JudgeOut).score == 0.75

    kinds = [(r.body.get("response_format") or {}).get("type") for r in llm_server.chat_requests]
    assert kinds == ["json_schema", "json_object", None, None]
    assert "JSON Schema" in llm_server.chat_requests[2].system_text
    assert client.output_mode == "text"


def test_json_object_only_endpoint_gets_the_schema_in_the_prompt_and_keeps_json_mode(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.formats = frozenset({"json_object", "text"})
    client = make_client()
    llm_server.queue(json_reply(GOOD), json_reply(GOOD))

    assert client.complete_json("m", MESSAGES, JudgeOut).score == 0.75
    assert client.complete_json("m", MESSAGES, JudgeOut).score == 0.75

    kinds = [r.body["response_format"]["type"] for r in llm_server.chat_requests]
    assert kinds == ["json_schema", "json_object", "json_object"], "chosen once, remembered"
    hinted = llm_server.chat_requests[1].system_text
    assert hinted.startswith("Grade it.")
    assert '"required":["score","reason"]' in hinted
    assert client.usage.snapshot()["failures"] == 0


def test_the_chosen_mode_is_remembered_across_clients_and_in_the_state_file(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient], tmp_path: Path
) -> None:
    llm_server.formats = frozenset({"json_object"})
    state = tmp_path / "llm-endpoints.json"
    first = make_client(state_path=state)
    llm_server.queue(json_reply(GOOD))
    first.complete_json("m", MESSAGES, JudgeOut)

    second = make_client(state_path=state)
    llm_server.queue(json_reply(GOOD))
    second.complete_json("m", MESSAGES, JudgeOut)

    assert second.output_mode == "json_object"
    assert len(llm_server.chat_requests) == 3
    saved = json.loads(state.read_text())
    assert saved[llm_server.base_url]["mode"] == "json_object"


@pytest.mark.parametrize("flavour", ["llama.cpp", "openai"])
def test_context_length_400_fails_that_request_alone_and_keeps_json_schema(
    llm_server: ScriptedLLMServer,
    make_client: Callable[..., LLMClient],
    flavour: Literal["llama.cpp", "openai"],
) -> None:
    llm_server.context_tokens = 50
    llm_server.context_error = flavour
    client = make_client()
    long = [Message("system", "Grade it."), Message("user", "word " * 400)]
    llm_server.queue(json_reply(GOOD))

    with pytest.raises(InputTooLong, match="does not fit the model's context") as caught:
        client.complete_json("m", long, JudgeOut)
    assert client.complete_json("m", MESSAGES, JudgeOut).score == 0.75

    assert caught.value.context_tokens == 50
    assert not isinstance(caught.value, EvaluatorUnavailable)
    assert len(llm_server.chat_requests) == 2, "no retry, no fallback request"
    assert [r.body["response_format"]["type"] for r in llm_server.chat_requests] == [
        "json_schema",
        "json_schema",
    ]
    assert client.output_mode == "json_schema"
    assert client.context_tokens == 50
    assert failure_status(caught.value).startswith("input too long")


def test_context_error_bodies_are_classified_exactly_as_the_servers_send_them() -> None:
    request = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    for body, size in (
        (llama_cpp_context_error(5000, 4096), 4096),
        (openai_context_error(9000, 8192), 8192),
    ):
        response = httpx.Response(400, json=body, request=request)
        error = openai.BadRequestError(
            body["error"]["message"], response=response, body=body["error"]
        )
        mapped = translate_error(error)
        assert isinstance(mapped, InputTooLong)
        assert mapped.context_tokens == size
        assert not refuses_response_format(error)


def test_unreachable_endpoint_is_unavailable(make_client: Callable[..., LLMClient]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = make_client(api_base=f"http://127.0.0.1:{port}/v1", max_attempts=2)

    with pytest.raises(EvaluatorUnavailable, match="cannot reach") as caught:
        client.complete_json("m", MESSAGES, JudgeOut)

    assert isinstance(caught.value.__cause__, openai.APIConnectionError)
    assert client.usage.snapshot()["calls"] == 2


def test_concurrency_limit_holds_at_the_server(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client(max_concurrency=2)
    llm_server.queue(*[slow(0.25, '{"score": 0.5}') for _ in range(6)])
    results: list[float] = []

    def call() -> None:
        results.append(client.complete_json("m", MESSAGES, JudgeOut).score)

    threads = [threading.Thread(target=call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    assert results == [0.5] * 6
    assert llm_server.max_in_flight == 2


def test_rate_limiter_keeps_to_its_window() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(3, 10.0, clock=lambda: now[0], sleep=sleep)
    waits = [limiter.acquire() for _ in range(3)]
    now[0] = 4.0
    fourth = limiter.acquire()

    assert waits == [0.0, 0.0, 0.0]
    assert fourth == pytest.approx(6.0)
    assert now[0] == pytest.approx(10.0)
    assert slept == [pytest.approx(6.0)]


def test_rate_limiter_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        RateLimiter(0, 60.0)


def test_endpoint_settings_from_config_section() -> None:
    from aclarai.daemon.config import LLMSettings

    section = LLMSettings(api_base="http://127.0.0.1:1/v1", timeout_s=7.0, max_concurrency=3)
    settings = EndpointSettings.from_settings(section, max_attempts=5)

    assert settings.api_base == "http://127.0.0.1:1/v1"
    assert (settings.timeout_s, settings.max_concurrency, settings.max_attempts) == (7.0, 3, 5)
    assert settings.json_mode is section.json_mode


def test_embeddings_come_back_in_order(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client()

    vectors = client.embed("embed-model", ["alpha beta", "gamma"])

    assert len(vectors) == 2
    assert vectors[0] != vectors[1]
    assert llm_server.requests[-1].body["input"] == ["alpha beta", "gamma"]
    assert client.usage.snapshot()["calls"] == 1


def test_usage_summary_reads_as_one_line(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client()
    llm_server.queue(json_reply(GOOD))
    client.complete_json("m", MESSAGES, JudgeOut)
    client.usage.add(cache_hits=2)

    summary = client.usage.summary()

    assert summary.startswith("LLM calls 1 ")
    assert "cache hits 2" in summary
    usage = client.usage.snapshot()
    prompt, out = usage["prompt_tokens"], usage["completion_tokens"]
    assert prompt > 0 and out > 0
    assert f"tokens {prompt} in (0 cached, 0%) / {out} out" in summary
    assert "\n" not in summary


@pytest.mark.parametrize("shape", ["openai", "llama.cpp"])
def test_cached_prompt_tokens_are_counted_as_the_server_reports_them(
    llm_server: ScriptedLLMServer,
    make_client: Callable[..., LLMClient],
    shape: Literal["openai", "llama.cpp"],
) -> None:
    """OpenAI and vLLM say ``usage.prompt_tokens_details.cached_tokens``, llama.cpp
    ``timings.cache_n``; the scripted server's cache holds the longest prefix seen before."""
    llm_server.cache_report = shape
    llm_server.responder = lambda _request: json_reply(GOOD)
    client = make_client()
    instructions = Message("system", "Grade the answer against the rules. " * 20)

    client.complete_json("m", [instructions, Message("user", "first answer")], JudgeOut)
    client.complete_json("m", [instructions, Message("user", "second answer")], JudgeOut)

    first, second = llm_server.chat_requests
    assert llm_server.cached_tokens(first) == 0
    expected = llm_server.cached_tokens(second)
    assert expected >= len(instructions.content) // 4
    usage = client.usage.snapshot()
    assert usage["cached_tokens"] == expected
    share = round(100 * expected / usage["prompt_tokens"])
    assert f"({expected} cached, {share}%)" in client.usage.summary()


def test_a_server_saying_nothing_of_its_cache_counts_none_cached(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.responder = lambda _request: json_reply(GOOD)
    client = make_client()

    for _ in range(2):
        client.complete_json("m", MESSAGES, JudgeOut)

    assert client.usage.snapshot()["cached_tokens"] == 0
    assert client.usage.snapshot()["prompt_tokens"] > 0


def test_weighed_reply_gives_each_token_with_the_options_the_model_weighed(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.logprobs = "give"
    llm_server.queue(grades_reply({"c1": 4}, {"c1": {4: 0.5, 5: 0.25, 3: 0.25}}))
    client = make_client()

    reply, tokens = client.complete_json_weighed("m", MESSAGES, grades_schema(1), top_logprobs=2)

    assert reply.model_dump() == {"c1": 4}
    body = llm_server.chat_requests[0].body
    assert (body["logprobs"], body["top_logprobs"]) == (True, 2)
    assert "".join(t.token for t in tokens) == '{"c1": 4}'
    [grade] = [t for t in tokens if t.token == "4"]
    assert [option for option, _ in grade.options] == ["4", "5"], "the top two, as asked"
    assert grade.options[0][1] == pytest.approx(math.log(0.5))


def test_an_unweighed_call_asks_for_no_logprobs(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.logprobs = "give"
    llm_server.queue(json_reply(GOOD))

    reply, tokens = make_client().complete_json_weighed("m", MESSAGES, JudgeOut)

    assert reply.score == 0.75 and tokens == ()
    assert "logprobs" not in llm_server.chat_requests[0].body


def test_a_refused_logprobs_request_is_asked_again_without_them_and_remembered(
    tmp_path: Path, llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    state = tmp_path / "endpoints.json"
    llm_server.logprobs = "refuse"
    llm_server.responder = lambda _request: grades_reply({"c1": 5})
    client = make_client(state_path=state)

    reply, tokens = client.complete_json_weighed("m", MESSAGES, grades_schema(1), top_logprobs=5)

    assert (reply.model_dump(), tokens) == ({"c1": 5}, ())
    assert [bool(r.body.get("logprobs")) for r in llm_server.chat_requests] == [True, False]
    usage = client.usage.snapshot()
    assert (usage["failures"], usage["retries"]) == (0, 0), "a refused option is no failure"
    assert json.loads(state.read_text())[llm_server.base_url]["logprobs_refused"] == ["m"]

    make_client(state_path=state).complete_json_weighed(
        "m", MESSAGES, grades_schema(1), top_logprobs=5
    )
    assert len(llm_server.chat_requests) == 3
    assert "logprobs" not in llm_server.chat_requests[-1].body


def test_a_logprobs_refusal_is_remembered_for_that_model_only(
    tmp_path: Path, llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    # One URL serves reasoning models that refuse logprobs and chat models that give them.
    state = tmp_path / "endpoints.json"
    llm_server.logprobs = "refuse"
    llm_server.responder = lambda _request: grades_reply({"c1": 5})
    make_client(state_path=state).complete_json_weighed(
        "reasoner", MESSAGES, grades_schema(1), top_logprobs=5
    )
    llm_server.logprobs = "give"

    make_client(state_path=state).complete_json_weighed(
        "chat-model", MESSAGES, grades_schema(1), top_logprobs=5
    )

    assert llm_server.chat_requests[-1].body["logprobs"] is True


def test_a_format_refusal_that_names_logprobs_too_steps_the_format_down(
    tmp_path: Path, llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    # LiteLLM lists every parameter the model lacks: the format is what must change first.
    llm_server.queue(
        status(400, message="does not support parameters: ['logprobs', 'response_format']"),
        grades_reply({"c1": 4}),
    )
    state = tmp_path / "endpoints.json"
    client = make_client(state_path=state)

    reply, _ = client.complete_json_weighed("m", MESSAGES, grades_schema(1), top_logprobs=5)

    assert reply.model_dump() == {"c1": 4}
    assert client.output_mode == "json_object"
    assert "logprobs_refused" not in json.loads(state.read_text())[llm_server.base_url]


def test_parse_json_output_rejects_text_without_an_object() -> None:
    with pytest.raises(UnparseableOutput, match="no JSON object"):
        parse_json_output("1.0", JudgeOut)
