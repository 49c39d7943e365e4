"""Tools by role, the vector index and both embedders."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from aclarai.agents.base import Utterance
from aclarai.agents.cache import ResultCache
from aclarai.agents.embeddings import HashingEmbedder, OpenAIEmbedder
from aclarai.agents.llm.client import LLMClient
from aclarai.agents.tools import (
    VECTOR_SEARCH,
    ToolFactory,
    build_tool_factory,
    vector_search_builder,
)
from aclarai.agents.vector_index import VectorIndex
from aclarai.daemon.config import ToolSpec, ToolsSettings
from aclarai.parsers import ConfigError
from tests.helpers.scripted_llm import ScriptedLLMServer

UTTERANCES = [
    Utterance("b1", "Marie Curie won the Nobel Prize in Physics in 1903."),
    Utterance("b2", "Pierre Curie shared the Nobel Prize with Marie in 1903."),
    Utterance("b3", "The bakery on Elm Street sells sourdough bread."),
    Utterance("b4", "Our team meets every Tuesday at ten."),
]


def test_hashing_embedder_is_deterministic_and_unit_length() -> None:
    embedder = HashingEmbedder(dim=256)

    first = embedder.embed_batch(["Marie Curie, 1903", ""])
    again = HashingEmbedder(dim=256).embed_batch(["Marie Curie, 1903", ""])

    np.testing.assert_array_equal(first, again)
    assert first.dtype == np.float32
    assert np.linalg.norm(first[0]) == pytest.approx(1.0, abs=1e-5)
    assert not first[1].any(), "an empty text is a zero vector"


def test_hashing_embedder_puts_shared_wording_closer() -> None:
    embedder = HashingEmbedder()
    claim, near, far = embedder.embed_batch(
        ["Curie won a Nobel Prize.", "Marie Curie won the Nobel Prize.", "Sourdough bread on Elm."]
    )

    assert float(claim @ near) > float(claim @ far) + 0.3


def test_index_embeds_only_new_or_changed_texts() -> None:
    index = VectorIndex(HashingEmbedder(dim=256))

    assert index.upsert(UTTERANCES) == 4
    assert index.upsert(UTTERANCES) == 0
    assert index.upsert([Utterance("b4", "Our team meets every Monday."), UTTERANCES[0]]) == 1
    assert len(index) == 4


def test_search_ranks_by_similarity_and_honours_exclude_and_remove() -> None:
    index = VectorIndex(HashingEmbedder(dim=512))
    index.upsert(UTTERANCES)

    hits = index.search("Curie won the Nobel Prize in Physics", top_k=2)
    assert [h.block_id for h in hits] == ["b1", "b2"]
    assert hits[0].score >= hits[1].score
    assert hits[0].text == UTTERANCES[0].text

    assert [h.block_id for h in index.search("Physics Nobel", 1, exclude={"b1"})] == ["b2"]
    index.remove(["b2", "unknown"])
    assert "b2" not in {h.block_id for h in index.search("Curie Nobel", 4)}
    assert len(index) == 3


def test_empty_index_finds_nothing() -> None:
    assert VectorIndex(HashingEmbedder(dim=64)).search("anything") == []


def test_default_mapping_gives_search_to_the_decontextualization_agent() -> None:
    index = VectorIndex(HashingEmbedder(dim=256))
    index.upsert(UTTERANCES)

    factory = build_tool_factory(ToolsSettings().agent_tool_mappings, utterances=index)

    (search,) = factory.tools_for("decontextualization_agent")
    assert search.name == VECTOR_SEARCH
    assert search.description.startswith("Find the utterances")
    assert search.params == {"top_k": 5}
    assert len(search(query="Curie")) == 4
    assert [h.block_id for h in search(query="Nobel Prize in Physics", top_k=1)] == ["b1"]
    assert factory.tools_for("entailment_agent") == ()
    assert factory.tools_for("claimify_agent") == ()
    assert factory.tools_for("no_such_agent") == ()


def test_user_can_move_a_tool_and_set_its_top_k() -> None:
    index = VectorIndex(HashingEmbedder(dim=256))
    index.upsert(UTTERANCES)
    spec = ToolSpec(name=VECTOR_SEARCH, description="Nearby text.", params={"top_k": 2})

    factory = build_tool_factory({"entailment_agent": (spec,)}, utterances=index)

    assert factory.tools_for("decontextualization_agent") == ()
    (search,) = factory.tools_for("entailment_agent")
    assert len(search(query="Curie")) == 2


def test_unknown_tool_name_is_a_config_error() -> None:
    spec = ToolSpec(name="web_search", description="", params={})

    with pytest.raises(ConfigError, match="web_search") as caught:
        ToolFactory({"coverage_agent": (spec,)}, {})

    assert caught.value.key == "tools.agent_tool_mappings.coverage_agent.0.name"


def test_unknown_collection_is_a_config_error() -> None:
    spec = ToolSpec(name=VECTOR_SEARCH, params={"collection": "claims"})
    build = vector_search_builder({"utterances": VectorIndex(HashingEmbedder(dim=64))})

    with pytest.raises(ConfigError, match="claims"):
        build(spec)


def test_endpoint_embeddings_are_cached(
    llm_server: ScriptedLLMServer,
    make_client: Callable[..., LLMClient],
    make_cache: Callable[..., ResultCache],
) -> None:
    client = make_client()
    embedder = OpenAIEmbedder(client, "embed-model", batch_size=2, cache=make_cache())

    first = embedder.embed_batch(["alpha beta", "gamma", "alpha"])
    second = embedder.embed_batch(["gamma", "alpha beta", "delta"])

    assert first.shape == (3, 32)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(second[0], first[1])
    embedding_calls = [r for r in llm_server.requests if r.path.endswith("/embeddings")]
    assert [r.body["input"] for r in embedding_calls] == [
        ["alpha beta", "gamma"],
        ["alpha"],
        ["delta"],
    ]
    assert embedding_calls[0].body["model"] == "embed-model"
    assert client.usage.snapshot()["cache_hits"] == 2


def test_endpoint_embeddings_feed_the_index(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    index = VectorIndex(OpenAIEmbedder(make_client(), "embed-model"))
    index.upsert(UTTERANCES)

    hits = index.search("Tuesday team meets", top_k=1)

    assert [h.block_id for h in hits] == ["b4"]
