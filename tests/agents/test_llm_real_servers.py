"""The LLM path against scripted servers that behave like the real ones (issue 16): one that
honours ``json_schema``, one that knows only ``json_object``, context-length 400s as llama.cpp and
OpenAI send them, a single-slot server, ``{}`` answers, and a model echoing the prompt."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Literal

import pytest

from aclarai.agents.base import EvalItem, ExtractionInput, Utterance
from aclarai.agents.llm.agents import LLMClaimExtractor, LLMEvaluator, RoleModels
from aclarai.agents.llm.client import LLMClient
from aclarai.agents.llm.errors import CallCancelled, failure_status
from aclarai.agents.llm.fitting import CUT_MARKER, fit_prompt
from aclarai.agents.llm.prompts import Message
from aclarai.agents.llm.schemas import JudgeOut, UnparseableOutput
from aclarai.parsers import EvaluationError
from tests.helpers.scripted_llm import (
    Recorded,
    Reply,
    ScriptedLLMServer,
    grades_responder,
    json_reply,
    slow,
)

MESSAGES = [Message("system", "Grade it."), Message("user", "the answer")]
LONG = "The span is long. " * 625
"""A 2,500-word block: 11,250 characters, about 2,800 tokens at the server's four a token."""


def claimify(request: Recorded) -> Reply:
    """The target block's first sentence, at most ten words of it, as its one claim."""
    found = re.search(
        r'<untrusted kind="target_block">\n(.*?)\n</untrusted>', request.user_text, re.DOTALL
    )
    assert found is not None, "an extraction prompt names its target block"
    first = re.split(r"(?<=[.!?])\s+", found.group(1))[0]
    return json_reply({"claims": [" ".join(first.split()[:10])]})


def test_a_json_schema_server_gets_the_schema_and_decodes_to_it(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.formats = frozenset({"json_schema", "json_object", "text"})
    llm_server.responder = claimify
    extractor = LLMClaimExtractor(make_client(), model="smollm")

    [claim] = extractor.extract(ExtractionInput(Utterance("b1", "The bridge opened in 1998.")))

    assert claim.text == "The bridge opened in 1998."
    [request] = llm_server.chat_requests
    response_format = request.body["response_format"]
    assert response_format["json_schema"]["name"] == "ExtractionOut"
    assert response_format["json_schema"]["schema"]["required"] == ["claims"]


def test_empty_object_answers_fail_that_call_after_one_repair(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client()
    llm_server.queue(json_reply({}), json_reply({}))

    with pytest.raises(UnparseableOutput, match="score"):
        client.complete_json("m", MESSAGES, JudgeOut)
    assert len(llm_server.chat_requests) == 2
    assert client.output_mode == "json_schema", "a bad answer is not a refused format"


@pytest.mark.parametrize("flavour", ["llama.cpp", "openai"])
def test_an_over_long_block_is_refused_alone_then_fitted_to_the_context_the_server_gave(
    llm_server: ScriptedLLMServer,
    make_client: Callable[..., LLMClient],
    flavour: Literal["llama.cpp", "openai"],
) -> None:
    llm_server.context_tokens = 1500
    llm_server.context_error = flavour
    llm_server.responder = claimify
    client = make_client(max_tokens=256, max_concurrency=1)
    extractor = LLMClaimExtractor(client, model="m")
    long = ExtractionInput(Utterance("b-long", LONG))
    healthy = [ExtractionInput(Utterance(f"b{i}", "The bridge opened in 1998.")) for i in range(3)]

    outcomes = extractor.extract_each([*healthy, long])

    assert [[c.text for c in o] for o in outcomes if isinstance(o, list)] == [
        *[["The bridge opened in 1998."]] * 3,
        ["The span is long."],
    ]
    assert client.context_tokens == 1500, "learned from the server's 400"
    refused = [r for r in llm_server.chat_requests if LONG.strip() in r.user_text]
    assert len(refused) == 1, "one request refused, no retry of the same prompt"
    assert len(llm_server.chat_requests) == 3 + 2
    fitted = llm_server.chat_requests[-1]
    assert CUT_MARKER in fitted.user_text, "the block itself cut, visibly"
    assert fitted.user_text.count("span") > 100, "as much of the block as fits"
    assert client.output_mode == "json_schema", "a context error is no format refusal"


def test_a_block_still_too_long_for_the_context_fails_alone(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.context_tokens = 100
    llm_server.responder = claimify
    extractor = LLMClaimExtractor(make_client(context_tokens=100000), model="m")

    outcomes = extractor.extract_each(
        [ExtractionInput(Utterance("b1", "Short.")), ExtractionInput(Utterance("b2", LONG))]
    )

    assert isinstance(outcomes[1], EvaluationError)
    assert failure_status(outcomes[1]).startswith("input too long")
    assert isinstance(outcomes[0], EvaluationError), "100 tokens are too few even for the prompt"


def test_neighbours_are_cut_before_the_block(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.responder = claimify
    client = make_client(context_tokens=2000, max_tokens=256)
    block = Utterance("b2", "The bridge opened in 1998. " * 40)
    item = ExtractionInput(
        block, before=(Utterance("b1", LONG),), after=(Utterance("b3", "It is long."),)
    )

    LLMClaimExtractor(client, model="m").extract(item)

    [request] = llm_server.chat_requests
    # The model reads the block as rendered: its trailing space is no text.
    assert f"\n{block.text.strip()}\n</untrusted>" in request.user_text, "the block is whole"
    assert len(request.user_text) < len(LONG)
    assert all(
        len(r.user_text) // 3 + len(r.system_text) // 3 < 2000 for r in llm_server.chat_requests
    )


def test_fit_prompt_cuts_neighbours_then_drops_them_then_marks_the_main_text() -> None:
    def render(neighbours: list[str], main: str) -> list[Message]:
        return [Message("user", "|".join([*neighbours, main]))]

    assert fit_prompt(render, ["a" * 900], "b" * 100, None) == (["a" * 900], "b" * 100)
    kept, main = fit_prompt(render, ["a " * 450, "c " * 450], "b" * 100, 250)
    assert main == "b" * 100 and len(kept) == 2 and all(k.endswith(CUT_MARKER) for k in kept)
    kept, main = fit_prompt(render, ["a " * 450], "b " * 600, 120)
    assert kept == [] and main.endswith(CUT_MARKER)
    assert sum(len(m.content) for m in render(kept, main)) / 3 <= 120


def test_a_single_slot_server_gets_fewer_requests_at_once(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.slots = 1
    llm_server.responder = lambda _request: slow(0.3, '{"score": 0.5, "reason": "ok"}')
    client = make_client(max_concurrency=4, timeout_s=0.8, max_attempts=4)
    results: list[float] = []

    def call() -> None:
        results.append(client.complete_json("m", MESSAGES, JudgeOut).score)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert results == [0.5] * 8, "every call gets through"
    assert client.concurrency.limit < 4, "timeouts cut the concurrency"


def test_quick_calls_raise_the_concurrency_again(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client(max_concurrency=4)
    client.concurrency.overloaded()
    client.concurrency.overloaded()
    assert client.concurrency.limit == 1
    llm_server.responder = lambda _request: json_reply({"score": 0.5})

    for _ in range(3):
        client.complete_json("m", MESSAGES, JudgeOut)

    assert client.concurrency.limit == 3


def test_cancel_frees_a_caller_waiting_on_a_slow_model(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    client = make_client(timeout_s=30.0)
    llm_server.queue(slow(20.0, '{"score": 0.5}'))
    threading.Timer(0.3, client.cancel).start()

    started = time.monotonic()
    with pytest.raises(CallCancelled):
        client.complete_json("m", MESSAGES, JudgeOut)

    assert time.monotonic() - started < 2.0
    assert not client.health.down, "stopping is not an outage"


def test_claims_echoing_the_prompt_scaffolding_are_dropped(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.queue(
        json_reply(
            {
                "claims": [
                    '<untrusted kind="target_block">',
                    "<untrusted kind=",
                    "claim_1",
                    "<claim>",
                    "The bridge opened in 1998.",
                ]
            }
        ),
    )
    extractor = LLMClaimExtractor(make_client(), model="m")

    claims = extractor.extract(ExtractionInput(Utterance("b1", "The bridge opened in 1998.")))

    assert [c.text for c in claims] == ["The bridge opened in 1998."]


def test_combined_scoring_cuts_the_context_not_the_source(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.responder = grades_responder()
    source = "Migration 0042 times out after 300 seconds."
    item = EvalItem("Migration 0042 times out.", source, (LONG,))
    fitted = LLMEvaluator(make_client(context_tokens=600, max_tokens=256), models=RoleModels())

    [score] = fitted.evaluate_batch([item])

    assert score.status == "ok" and score.entailed_score == 1.0
    prompt = llm_server.chat_requests[-1].user_text
    assert f'<untrusted kind="source">\n{source}\n</untrusted>' in prompt
    assert "span" not in prompt, "the context is dropped to fit"

    llm_server.context_tokens = 1000
    seen = len(llm_server.chat_requests)
    learner = LLMEvaluator(make_client(max_tokens=256), models=RoleModels())
    long_source = "Migration 0042 times out after 300 seconds. " * 90
    [refitted] = learner.evaluate_batch([EvalItem("Migration 0042 times out.", long_source)])
    assert refitted.status == "ok"
    assert len(llm_server.chat_requests) - seen == 2, "refused once, then fitted and answered"
    assert CUT_MARKER in llm_server.chat_requests[-1].user_text

    llm_server.context_tokens = 50
    [failed] = learner.evaluate_batch([EvalItem("Another claim.", source, (LONG,))])
    assert failed.entailed_score is None
    assert failed.status.startswith("input too long")


def test_what_a_llama_cpp_server_publishes_sets_the_context_and_the_slots(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.props = {"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1}
    llm_server.responder = lambda _request: slow(0.1, '{"score": 0.5, "reason": "ok"}')
    client = make_client(max_concurrency=4, max_tokens=256)

    threads = [
        threading.Thread(target=client.complete_json, args=("m", MESSAGES, JudgeOut))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert client.context_tokens == 2048
    assert client.prompt_budget_tokens() == 2048 - 256 - 64
    assert client.concurrency.maximum == 1
    assert len(llm_server.chat_requests) == 4
    assert llm_server.max_in_flight == 1, "one at a time, as the server said"


def test_a_server_without_props_keeps_the_configured_limits(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.responder = lambda _request: json_reply({"score": 0.5})
    client = make_client(max_concurrency=3)

    client.complete_json("m", MESSAGES, JudgeOut)

    assert client.context_tokens is None and client.prompt_budget_tokens() is None
    assert client.concurrency.maximum == 3


def test_llama_cpp_python_refusing_json_schema_with_a_500_is_a_format_step_not_an_outage(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    """llama-cpp-python's server (``python -m llama_cpp.server``) reports an unknown
    ``response_format`` type as a 500 validation error; it takes ``json_object`` with a schema."""
    llm_server.formats = frozenset({"json_object", "text"})
    llm_server.format_refusal = "llama-cpp-python"
    llm_server.responder = lambda request: json_reply({"score": 0.5, "reason": "ok"})
    client = make_client()

    first = client.complete_json("m", MESSAGES, JudgeOut)
    second = client.complete_json("m", MESSAGES, JudgeOut)

    assert (first.score, second.score) == (0.5, 0.5)
    formats = [r.body.get("response_format", {}) for r in llm_server.chat_requests]
    assert [f.get("type") for f in formats] == ["json_schema", "json_object", "json_object"]
    assert formats[1]["schema"]["properties"].keys() >= {"score", "reason"}
    assert client.output_mode == "json_object"
    assert not client.health.down and client.usage.snapshot().get("failures", 0) == 0
