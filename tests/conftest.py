"""Shared fixtures: every test runs with its state, config and cache under a temp folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Read once at start-up: the autouse fixture below clears every ACLARAI_* variable for the tests.
EXTERNAL_REDIS_URL = os.environ.get("ACLARAI_TEST_REDIS_URL")

# Property tests that leave their size to the profile (the fuzz suites among them) run
# Hypothesis's default 100 examples each in `make test` and 20 times more under `make fuzz`
# (ACLARAI_TEST_FUZZ=1). No deadline: a loaded machine is not a bug.
settings.register_profile(
    "test", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "fuzz", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("fuzz" if os.environ.get("ACLARAI_TEST_FUZZ") else "test")

SLOW_FIXTURES = frozenset({"redis_server", "bolt_server", "start_daemon"})
"""Real processes that take seconds to start and to settle: the session's Redis and Bolt
servers and ``aclarai watch``. A test that needs one is out of the fast lane."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that uses one of :data:`SLOW_FIXTURES`, so no test has to
    remember to."""
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shield tests from the machine: no user config, no user state, no API keys."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("ACLARAI_STATE_DIR", str(tmp_path / "state"))
    for name in ("OPENAI_API_KEY", "NEO4J_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("ACLARAI_") and name != "ACLARAI_STATE_DIR":
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[object]:
    """A real redis-server on a random loopback port, for the whole session.

    ``ACLARAI_TEST_REDIS_URL`` points the same tests at an external server instead.
    """
    from tests.fixtures.redis_server import ExternalRedis, start_redis_server

    if EXTERNAL_REDIS_URL:
        yield ExternalRedis(EXTERNAL_REDIS_URL)
        return
    with start_redis_server() as server:
        yield server


@pytest.fixture(scope="session")
def bolt_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real Bolt server (ArcadeDB) on a random loopback port, for the whole session."""
    from tests.fixtures.bolt_server import start_bolt_server

    with start_bolt_server(tmp_path_factory.mktemp("bolt")) as server:
        yield server
