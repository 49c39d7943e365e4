"""Claimify-style extraction through the real client stack on a scripted server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aclarai.agents.base import ExtractionInput, Utterance, claim_id
from aclarai.agents.cache import ResultCache
from aclarai.agents.llm.agents import LLMClaimExtractor
from aclarai.agents.llm.client import LLMClient
from aclarai.parsers import EvaluatorUnavailable
from tests.agents.scripted_llm import ScriptedLLMServer, json_reply, status

BLOCK = Utterance("blk-7", "She moved there in 2019. I love it! The lab employs 40 people.")
ITEM = ExtractionInput(
    block=BLOCK,
    before=(
        Utterance("blk-5", "Dr. Ana Lima leads the Porto genomics lab."),
        Utterance("blk-6", "Ana grew up in Lisbon."),
    ),
    after=(Utterance("blk-8", "Next week: the annual review."),),
)
SELECTED = json_reply({"selected": ["She moved there in 2019.", "The lab employs 40 people."]})
RESOLVED = json_reply(
    {
        "sentences": [
            {"text": "Ana Lima moved to Porto in 2019.", "resolved": True},
            {"text": "The Porto genomics lab employs 40 people.", "resolved": True},
        ]
    }
)
CLAIMS = [
    "Ana Lima moved to Porto in 2019.",
    "The Porto genomics lab employs 40 people.",
    "Ana Lima leads the Porto genomics lab.",
]


@pytest.fixture
def make_extractor(make_client: Callable[..., LLMClient]) -> Callable[..., LLMClaimExtractor]:
    def create(client: LLMClient | None = None, **options: Any) -> LLMClaimExtractor:
        return LLMClaimExtractor(client or make_client(), model="claimify-model", **options)

    return create


def test_three_stages_give_claims_with_deterministic_ids(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    llm_server.queue(SELECTED, RESOLVED, json_reply({"claims": [*CLAIMS, CLAIMS[0], "  "]}))

    claims = make_extractor().extract(ITEM)

    assert [c.text for c in claims] == CLAIMS
    assert [c.id for c in claims] == [claim_id("blk-7", text) for text in CLAIMS]
    assert {c.block_id for c in claims} == {"blk-7"}
    assert len(llm_server.chat_requests) == 3
    assert {r.body["model"] for r in llm_server.chat_requests} == {"claimify-model"}


def test_window_reaches_the_model_as_delimited_context(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    llm_server.queue(SELECTED, RESOLVED, json_reply({"claims": CLAIMS}))
    make_extractor().extract(ITEM)

    selection, disambiguation, decomposition = llm_server.chat_requests
    before = '<untrusted kind="context_before" n="2">\nAna grew up in Lisbon.\n</untrusted>'
    after = '<untrusted kind="context_after" n="1">\nNext week: the annual review.\n</untrusted>'
    target = f'<untrusted kind="target_block">\n{BLOCK.text}\n</untrusted>'
    for request in (selection, disambiguation):
        assert before in request.user_text
        assert after in request.user_text
        assert target in request.user_text
    assert '<untrusted kind="selected_sentence" n="2">\nThe lab employs 40 people.' in (
        disambiguation.user_text
    )
    assert '<untrusted kind="sentence" n="1">\nAna Lima moved to Porto in 2019.' in (
        decomposition.user_text
    )


def test_nothing_verifiable_costs_one_call(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    llm_server.queue(json_reply({"selected": []}))

    assert make_extractor().extract(ITEM) == []
    assert len(llm_server.chat_requests) == 1


def test_unresolved_sentences_are_skipped(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    llm_server.queue(
        SELECTED,
        json_reply(
            {
                "sentences": [
                    {"text": "Someone moved somewhere in 2019.", "resolved": False},
                    {"text": "The Porto genomics lab employs 40 people.", "resolved": True},
                ]
            }
        ),
        json_reply({"claims": ["The Porto genomics lab employs 40 people."]}),
    )

    claims = make_extractor().extract(ITEM)

    assert [c.text for c in claims] == ["The Porto genomics lab employs 40 people."]
    assert "Someone moved" not in llm_server.chat_requests[2].user_text


def test_all_unresolved_stops_before_decomposition(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    llm_server.queue(SELECTED, json_reply({"sentences": [{"text": "x", "resolved": False}]}))

    assert make_extractor().extract(ITEM) == []
    assert len(llm_server.chat_requests) == 2


def test_blank_block_costs_nothing(
    llm_server: ScriptedLLMServer, make_extractor: Callable[..., LLMClaimExtractor]
) -> None:
    assert make_extractor().extract(ExtractionInput(Utterance("blk-0", "  \n"))) == []
    assert llm_server.chat_requests == []


def test_unchanged_block_is_not_extracted_twice(
    llm_server: ScriptedLLMServer,
    make_client: Callable[..., LLMClient],
    make_extractor: Callable[..., LLMClaimExtractor],
    make_cache: Callable[..., ResultCache],
) -> None:
    llm_server.queue(SELECTED, RESOLVED, json_reply({"claims": CLAIMS}))
    first = make_extractor(cache=make_cache()).extract(ITEM)

    client = make_client()
    second = make_extractor(client, cache=make_cache()).extract(ITEM)

    assert second == first
    assert len(llm_server.chat_requests) == 3
    usage = client.usage.snapshot()
    assert (usage["calls"], usage["cache_hits"]) == (0, 1)


def test_changed_window_is_extracted_again(
    llm_server: ScriptedLLMServer,
    make_extractor: Callable[..., LLMClaimExtractor],
    make_cache: Callable[..., ResultCache],
) -> None:
    llm_server.queue(json_reply({"selected": []}), json_reply({"selected": []}))
    cache = make_cache()
    make_extractor(cache=cache).extract(ITEM)

    moved = ExtractionInput(ITEM.block, before=ITEM.before[:1], after=ITEM.after)
    make_extractor(cache=cache).extract(moved)

    assert len(llm_server.chat_requests) == 2


def test_failure_is_raised_after_the_other_blocks_are_done(
    llm_server: ScriptedLLMServer,
    make_client: Callable[..., LLMClient],
    make_cache: Callable[..., ResultCache],
) -> None:
    cache = make_cache()
    extractor = LLMClaimExtractor(make_client(max_concurrency=1), model="m", cache=cache)
    good = ExtractionInput(Utterance("blk-1", "Nothing to check here."))
    llm_server.queue(status(503), status(503), status(503), json_reply({"selected": []}))

    with pytest.raises(EvaluatorUnavailable):
        extractor.extract_batch([ITEM, good])

    assert len(cache) == 1, "the block that worked is cached"
    llm_server.queue(SELECTED, RESOLVED, json_reply({"claims": CLAIMS}))
    claims = extractor.extract_batch([ITEM, good])
    assert [len(c) for c in claims] == [3, 0]
    assert len(llm_server.chat_requests) == 4 + 3
