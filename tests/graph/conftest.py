"""The ``store`` fixture: every contract test runs once per storage backend.

To add a backend, append its name (``pytest.param(name, marks=pytest.mark.slow)`` for one on a
server) to ``STORE_BACKENDS`` and a branch to :func:`make_store`
(``request.getfixturevalue`` reaches session fixtures such as ``bolt_server``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from aclarai.graph import GraphStore, SqliteStore
from aclarai.graph.neo4j import Neo4jStore

STORE_BACKENDS = ["sqlite", pytest.param("bolt", marks=pytest.mark.slow)]
"""A backend on a real server is out of the fast lane (``-m "not slow"``)."""


def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> GraphStore:
    """A fresh, empty store of this backend, private to the requesting test."""
    if kind == "sqlite":
        return SqliteStore(tmp_path / "state" / "graph.sqlite")
    if kind == "bolt":
        # One database per test on the session's server, dropped after the store is closed.
        server = request.getfixturevalue("bolt_server")
        database = server.create_database(f"t{uuid.uuid4().hex[:16]}")
        request.addfinalizer(lambda: server.drop_database(database))
        return Neo4jStore(server.uri, server.user, server.password, database)
    raise ValueError(f"unknown store backend {kind!r}")


@pytest.fixture(params=STORE_BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GraphStore]:
    graph_store = make_store(request.param, tmp_path, request)
    try:
        yield graph_store
    finally:
        graph_store.close()
