"""A request near the body limit is judged in bounded work, and a judge that fails or times out
never lets an answer pass — through the real HTTP server, on the offline judges."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from aclarai.agents.answers.judges import MAX_FAITHFULNESS_SENTENCES, bounded_pair
from aclarai.daemon.service.api import create_app
from aclarai.daemon.service.core import EvaluateRequest, build_service_core
from tests.helpers.scripted_llm import Recorded, Reply, json_reply, scripted_llm_server, slow
from tests.helpers.service import evaluate_payload, make_config, running_app

WORDS = [
    "tower",
    "paris",
    "metres",
    "built",
    "engineer",
    "iron",
    "visitors",
    "height",
    "antenna",
    "century",
    "exhibition",
    "river",
    "city",
    "lift",
    "stairs",
    "paint",
    "tonnes",
    "rivets",
    "summit",
    "platform",
]


def prose(chars: int, seed: int) -> str:
    rng = random.Random(seed)
    sentences: list[str] = []
    size = 0
    while size < chars:
        sentence = " ".join(rng.choice(WORDS) for _ in range(12)).capitalize()
        sentence += f" {rng.randint(1, 2000)}."
        sentences.append(sentence)
        size += len(sentence) + 1
    return " ".join(sentences)


def serve(tmp_path: Path, **overrides: Any) -> Iterator[str]:
    config = make_config(tmp_path, overrides)
    core = build_service_core(config)
    try:
        with running_app(create_app(config, core)) as url:
            yield url
    finally:
        core.close()


@pytest.fixture
def api_url(tmp_path: Path) -> Iterator[str]:
    yield from serve(tmp_path)


def test_a_request_near_the_body_limit_is_judged_by_every_judge(api_url: str) -> None:
    answer, context = prose(465_000, seed=1), prose(465_000, seed=2)
    payload = evaluate_payload(query="How tall is the tower?", context=context, answer=answer)
    assert 900_000 < len(json.dumps(payload)) < 1_048_576
    body = httpx.post(f"{api_url}/api/v1/evaluate", json=payload, timeout=60).json()
    judges = {s["name"]: s for s in body["stages"][3:]}
    assert set(judges) == {"relevance-judge", "faithfulness-judge", "coherence-judge"}
    assert all(stage["score"] is not None for stage in judges.values()), judges
    reason = judges["faithfulness-judge"]["reason"]
    assert f"judged on {MAX_FAITHFULNESS_SENTENCES} of the answer's" in reason
    assert "checked against" in reason


@pytest.mark.slow
def test_a_judge_that_times_out_caps_the_verdict_at_review(tmp_path: Path) -> None:
    # Judges of a scripted model: a late one misses its timeout for sure (offline judges race
    # a tiny timeout, and may win it).
    late: set[str] = set()

    def respond(request: Recorded) -> Reply:
        for word in ("RELEVANCE", "FAITHFULNESS", "COHERENCE"):
            if word in request.user_text:
                reply = json.dumps({"score": 0.95, "reason": word.lower()})
                return slow(1.5, reply) if word in late else Reply(content=reply)
        return json_reply({"score": 0.95, "reason": "fine"})

    payload = evaluate_payload(
        query="How tall is the tower?",
        context="The tower is 324 metres tall and was finished in 1889.",
        answer="The tower is 324 metres tall.",
    )
    with scripted_llm_server() as llm:
        llm.responder = respond
        overrides = {
            "model.backend": "llm",
            "model.llm.api_base": llm.base_url,
            "service.judge_timeout_s": 0.5,
        }
        for url in serve(tmp_path, **overrides):
            # The first model call pays for the client's start-up, which may take longer than
            # the timeout: let a first request's judges reach the model before timing any.
            httpx.post(f"{url}/api/v1/evaluate", json=payload, timeout=60)
            deadline = time.monotonic() + 30
            while len(llm.chat_requests) < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            late.add("FAITHFULNESS")
            one_late = httpx.post(f"{url}/api/v1/evaluate", json=payload, timeout=60).json()
            late.update({"RELEVANCE", "COHERENCE"})
            all_late = httpx.post(f"{url}/api/v1/evaluate", json=payload, timeout=60).json()
            # The late judges go on in the background: let them finish before the model stops.
            deadline = time.monotonic() + 30
            while llm.in_flight and time.monotonic() < deadline:
                time.sleep(0.01)

    judges = {s["name"]: s for s in one_late["stages"][3:]}
    assert judges["faithfulness-judge"]["score"] is None
    assert "timed out after 0.5 s" in judges["faithfulness-judge"]["reason"]
    assert judges["relevance-judge"]["score"] == 0.95
    assert judges["coherence-judge"]["score"] == 0.95
    assert one_late["verdict"] == "review", "two good judges do not pass an answer alone"
    assert all(s["score"] is None for s in all_late["stages"][3:])
    assert all_late["verdict"] == "review" and all_late["confidence"] is None


def test_a_judges_model_call_gives_up_when_the_evaluation_does(tmp_path: Path) -> None:
    """A late judge's call is cut at ``judge_timeout_s``, not left to hold the model's slot for
    the far longer time a model call may take."""
    with scripted_llm_server() as llm:
        llm.responder = lambda request: slow(3.0, json.dumps({"score": 0.9, "reason": "late"}))
        config = make_config(
            tmp_path,
            {
                "model.backend": "llm",
                "model.llm.api_base": llm.base_url,
                "model.llm.timeout_s": 30.0,
                "model.llm.max_attempts": 1,
                "service.judge_timeout_s": 0.5,
            },
        )
        core = build_service_core(config)
        try:
            response = core.evaluate(EvaluateRequest.model_validate(evaluate_payload()))
            # The first model call pays for the client's start-up: count from the requests.
            deadline = time.monotonic() + 30
            while len(llm.chat_requests) < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            asked = time.monotonic()
            assert core.usage is not None
            while core.usage.snapshot()["failures"] < 3 and time.monotonic() - asked < 2.0:
                time.sleep(0.01)
            cut = core.usage.snapshot()["failures"]
        finally:
            core.close()

    assert all(s.score is None for s in response.stages[3:])
    assert cut == 3, "each judge's call ended long before its 3 s reply"


def test_small_texts_go_to_the_evaluator_whole() -> None:
    answer = "The tower is 330 metres tall."
    context = "The Eiffel Tower in Paris is 330 metres tall. It was completed in 1889."
    assert bounded_pair(answer, context) == (answer, context, "")


def test_a_long_context_is_cut_to_the_sentences_the_answer_shares_words_with() -> None:
    filler = [f"Sentence {n} is about {WORDS[n % len(WORDS)]} things." for n in range(500)]
    context = " ".join([*filler[:250], "The Zorblax bridge spans 412 metres.", *filler[250:]])
    _claim, source, note = bounded_pair("The Zorblax bridge spans 412 metres.", context)
    assert "The Zorblax bridge spans 412 metres." in source
    assert len(source) < len(context) / 10
    assert "checked against" in note
