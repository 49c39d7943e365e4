"""Fixtures for the agent tests: a scripted OpenAI-compatible server and clients pointed at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aclarai.agents.cache import ResultCache
from aclarai.agents.llm.client import EndpointSettings, LLMClient
from tests.helpers.scripted_llm import ScriptedLLMServer, scripted_llm_server

FAST_BACKOFF = {"backoff_initial_s": 0.01, "backoff_max_s": 0.05}


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with scripted_llm_server() as server:
        yield server


@pytest.fixture
def make_client(llm_server: ScriptedLLMServer) -> Iterator[Callable[..., LLMClient]]:
    """``make_client(state_path=None, **settings)``: an :class:`LLMClient` on the scripted server,
    fast backoff."""
    made: list[LLMClient] = []

    def create(**overrides: Any) -> LLMClient:
        options: dict[str, Any] = {
            "api_base": llm_server.base_url,
            "timeout_s": 5.0,
            "max_attempts": 3,
            **FAST_BACKOFF,
        }
        state_path = overrides.pop("state_path", None)
        options.update(overrides)
        client = LLMClient(EndpointSettings(**options), api_key="test-key", state_path=state_path)
        made.append(client)
        return client

    yield create
    for client in made:
        client.close()


@pytest.fixture
def make_cache(tmp_path: Path) -> Iterator[Callable[..., ResultCache]]:
    """``make_cache(name="cache.sqlite", bypass=False)``: a real SQLite cache under tmp_path."""
    made: list[ResultCache] = []

    def create(name: str = "cache.sqlite", *, bypass: bool = False) -> ResultCache:
        cache = ResultCache(tmp_path / name, bypass=bypass)
        made.append(cache)
        return cache

    yield create
    for cache in made:
        cache.close()
