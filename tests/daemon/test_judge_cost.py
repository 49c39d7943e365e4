"""A request near the body limit is judged in bounded work, and a judge that fails or times out
never lets an answer pass — through the real HTTP server, on the offline judges."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from aclarai.agents.answers.judges import MAX_FAITHFULNESS_SENTENCES, bounded_pair
from aclarai.daemon.factory import build_service_core
from aclarai.daemon.service.api import create_app
from tests.daemon.service_helpers import evaluate_payload, make_config, running_app

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


def test_a_judge_that_times_out_caps_the_verdict_at_review(tmp_path: Path) -> None:
    payload = evaluate_payload(
        query="How tall is the tower?", context=prose(60_000, 3), answer=prose(60_000, 4)
    )
    for url in serve(tmp_path, **{"service.judge_timeout_s": 0.000001}):
        body = httpx.post(f"{url}/api/v1/evaluate", json=payload, timeout=60).json()
    judges = body["stages"][3:]
    failed = [s for s in judges if s["score"] is None]
    assert failed, "the judges were meant to time out"
    assert all("timed out" in s["reason"] for s in failed)
    # A judge quick enough to beat the timeout may still score low: at most review, never pass.
    assert body["verdict"] in {"review", "fail"}
    if len(failed) == len(judges):
        assert body["verdict"] == "review" and body["confidence"] is None


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
