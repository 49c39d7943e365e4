"""With ``model.embedding`` set, search's vectors come from the model endpoint (a scripted
OpenAI-compatible server here), under their own name beside WordLlama's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from aclarai.daemon.config import Config, load_config
from aclarai.daemon.factory import build_search_embedder, search_embedder_name
from aclarai.daemon.search import embed_pending
from aclarai.daemon.search.session import VaultSearch
from tests.helpers.scripted_llm import ScriptedLLMServer, scripted_llm_server


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with scripted_llm_server() as server:
        yield server


def endpoint_config(server: ScriptedLLMServer) -> Config:
    return load_config(
        None,
        env={**os.environ, "OPENAI_API_KEY": "test-key"},
        overrides={
            "model.backend": "llm",
            "model.llm.api_base": server.base_url,
            "model.embedding": "text-embedding-test",
        },
    )


def test_the_endpoints_vectors_are_stored_under_their_name_and_searched(
    graded_vault: Path, llm_server: ScriptedLLMServer
) -> None:
    config = endpoint_config(llm_server)
    assert search_embedder_name(config) == "openai:text-embedding-test"
    with VaultSearch(config, graded_vault) as search:
        # The offline resync embedded with WordLlama: none of these vectors exist yet.
        before = search.search("Who serviced the boiler?")
        assert before.unembedded == before.blocks > 0
        assert before.hits[0].file == "journal/2024-05-02.md", "found by its words meanwhile"

        embedder, closers = build_search_embedder(config, config.state_dir_for(graded_vault))
        try:
            assert embedder is not None
            assert embed_pending(search.store.search, embedder) == before.blocks
        finally:
            for close in closers:
                close()

        after = search.search("boiler serviced Marta")
        assert after.unembedded == 0
        assert after.hits[0].file == "journal/2024-05-02.md"
    assert any(r.path.endswith("/embeddings") for r in llm_server.requests)
