"""The read-only query tool: the same answers over every backend, and the Cypher guard.

Tests taking ``store`` run once per backend (see ``conftest.py``); the Cypher tests run against
the session's real Bolt server.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from aclarai.graph import GraphStore, make_query_tool
from aclarai.graph.neo4j import Neo4jStore
from aclarai.graph.query_tool import (
    QUESTIONS,
    Neo4jQueryTool,
    StoreQueryTool,
    check_read_only,
)
from aclarai.parsers import StoreError, StoreUnavailable
from tests.fixtures.bolt_server import BoltServer
from tests.graph.builders import claim, note, score

TEXTS = ("Zero.", "One.", "Two.", "Three.", "Four.", "Five.")


@pytest.fixture
def filled(store: GraphStore) -> GraphStore:
    """Two notes; block n-2 has two claims, one scored, one never evaluated."""
    store.sync_files([note("n.md", *TEXTS), note("other.md", "Elsewhere.")])
    store.replace_claims({"n-2": [claim("c-b", "n-2", "Second."), claim("c-a", "n-2", "First.")]})
    hash_2 = store.get_blocks(["n-2"])["n-2"].hash
    store.write_scores([score("c-b", "n-2", hash_2, coverage=None, status="coverage: timeout")])
    return store


def test_make_query_tool_picks_cypher_for_neo4j(filled: GraphStore) -> None:
    tool = make_query_tool(filled, max_rows=7, timeout_s=2.0)
    expected = Neo4jQueryTool if isinstance(filled, Neo4jStore) else StoreQueryTool
    assert type(tool) is expected
    assert (tool.name, tool.max_rows, tool.timeout_s) == ("neo4j_query_tool", 7, 2.0)


def test_neighbouring_blocks_in_a_window_around_the_block(filled: GraphStore) -> None:
    tool = make_query_tool(filled)
    rows = tool.neighbouring_blocks("n-2", before=2, after=1)
    assert rows == [
        {"id": "n-0", "file": "n.md", "position": 0, "offset": -2, "text": "Zero."},
        {"id": "n-1", "file": "n.md", "position": 1, "offset": -1, "text": "One."},
        {"id": "n-3", "file": "n.md", "position": 3, "offset": 1, "text": "Three."},
    ]
    assert [r["id"] for r in tool.neighbouring_blocks("n-0")] == ["n-1"]


def test_neighbours_skip_deleted_blocks_and_unknown_ids_have_none(filled: GraphStore) -> None:
    filled.mark_deleted(["n-3"])
    tool = make_query_tool(filled)
    assert [r["id"] for r in tool.neighbouring_blocks("n-2", before=0, after=2)] == ["n-4"]
    assert tool.neighbouring_blocks("n-3") == []
    assert tool.neighbouring_blocks("no-such-block") == []


def test_claims_of_block_in_order_with_scores(filled: GraphStore) -> None:
    tool = make_query_tool(filled)
    assert tool.claims_of_block("n-2") == [
        {
            "id": "c-b",
            "text": "Second.",
            "entailed_score": 0.9,
            "coverage_score": None,
            "decontextualization_score": 0.7,
            "quality": None,
            "status": "coverage: timeout",
        },
        {
            "id": "c-a",
            "text": "First.",
            "entailed_score": None,
            "coverage_score": None,
            "decontextualization_score": None,
            "quality": None,
            "status": None,
        },
    ]
    assert tool.claims_of_block("n-0") == []


def test_answers_are_cut_at_max_rows(filled: GraphStore) -> None:
    tool = make_query_tool(filled, max_rows=1)
    assert [r["id"] for r in tool.neighbouring_blocks("n-3", before=3, after=2)] == ["n-0"]
    assert [r["id"] for r in tool.claims_of_block("n-2")] == ["c-b"]


def test_answer_dispatches_named_questions_and_rejects_others(filled: GraphStore) -> None:
    tool = make_query_tool(filled)
    assert set(QUESTIONS) == {"neighbouring_blocks", "claims_of_block"}
    assert tool.answer("claims_of_block", block_id="n-2") == tool.claims_of_block("n-2")
    assert tool.answer("neighbouring_blocks", block_id="n-1", after=0) == [
        {"id": "n-0", "file": "n.md", "position": 0, "offset": -1, "text": "Zero."}
    ]
    with pytest.raises(ValueError, match="unknown question"):
        tool.answer("drop_everything", block_id="n-2")
    with pytest.raises(ValueError, match="bad arguments"):
        tool.answer("claims_of_block", block="n-2")


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (b:Block) RETURN b.id",
        "MATCH (b:Block) WHERE b.text = 'CREATE (x) SET x.y = 1' RETURN b.set AS set",
        "MATCH (b:Block)  // DELETE b\nRETURN {merge: 1, remove: b.id} AS m",
        "MATCH (b:`Create`)-[:DELETE]->(c) RETURN $set, c",
        "CALL db.labels() YIELD label RETURN label",
        "MATCH (n) RETURN n;",
    ],
)
def test_read_only_guard_lets_reads_through(query: str) -> None:
    check_read_only(query)


@pytest.mark.parametrize(
    ("query", "word"),
    [
        ("CREATE (n:Block {id: 'x'})", "CREATE"),
        ("MATCH (b:Block) SET b.text = ''", "SET"),
        ("match (b:Block) detach delete b", "DETACH"),
        ("MATCH (b) REMOVE b.hash", "REMOVE"),
        ("MERGE (n:Claim {id: 'x'})", "MERGE"),
        ("DROP CONSTRAINT aclarai_block_id", "DROP"),
        ("LOAD CSV FROM 'file:///x' AS row RETURN row", "LOAD"),
        ("UNWIND [1] AS x FOREACH (i IN [x] | CREATE (:X))", "FOREACH"),
        ("CALL apoc.create.node(['X'], {})", "CALL"),
        ("MATCH (n) CALL { WITH n RETURN n AS m } RETURN m", "CALL"),
        ("INSERT (:X)", "INSERT"),
        ("USE system SHOW USERS", "USE"),
    ],
)
def test_read_only_guard_refuses_writes(query: str, word: str) -> None:
    with pytest.raises(ValueError, match=f"{word} is not allowed"):
        check_read_only(query)


def test_read_only_guard_refuses_several_statements() -> None:
    with pytest.raises(ValueError, match="one statement"):
        check_read_only("MATCH (n) RETURN n; MATCH (m) DETACH DELETE m")


@pytest.fixture
def cypher_tool(bolt_server: BoltServer) -> Iterator[Neo4jQueryTool]:
    database = bolt_server.create_database(f"t{uuid.uuid4().hex[:16]}")
    store = Neo4jStore(bolt_server.uri, bolt_server.user, bolt_server.password, database)
    store.sync_files([note("n.md", *TEXTS)])
    try:
        yield Neo4jQueryTool(store.driver, database, max_rows=5, timeout_s=10.0)
    finally:
        store.close()
        bolt_server.drop_database(database)


def test_cypher_reads_are_answered_within_the_row_limit(cypher_tool: Neo4jQueryTool) -> None:
    rows = cypher_tool.read("MATCH (b:Block) RETURN b.id AS id ORDER BY b.position")
    assert rows == [{"id": f"n-{i}"} for i in range(5)]
    assert len(cypher_tool.read("UNWIND range(1, 100000) AS x RETURN x")) == 5


def test_cypher_writes_are_refused_before_reaching_the_server(
    cypher_tool: Neo4jQueryTool,
) -> None:
    count = "MATCH (b:Block) RETURN count(b) AS n"
    assert cypher_tool.read(count) == [{"n": 6}]
    for query in ("MATCH (b:Block) DETACH DELETE b", "CREATE (:Block {id: 'evil'})"):
        with pytest.raises(ValueError, match="not allowed"):
            cypher_tool.read(query)
    assert cypher_tool.read(count) == [{"n": 6}]


def test_server_refusals_are_store_errors(cypher_tool: Neo4jQueryTool) -> None:
    with pytest.raises(StoreError) as raised:
        cypher_tool.read("MATCH (b:Block RETURN b")
    assert not isinstance(raised.value, StoreUnavailable)


def test_a_query_past_the_time_limit_is_abandoned(cypher_tool: Neo4jQueryTool) -> None:
    slow = Neo4jQueryTool(cypher_tool.driver, cypher_tool.database, timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(StoreError, match=r"ran past 0\.3s"):
        slow.read(
            "UNWIND range(1, 2000) AS x UNWIND range(1, 2000) AS y "
            "WITH x, y WHERE x + y < 0 RETURN count(*) AS n"
        )
    assert time.monotonic() - started < 2.0
