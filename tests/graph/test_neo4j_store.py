"""What only the Bolt store does: schema, graph shape, error mapping, retries and outages.

The storage behaviour shared with the embedded store is in ``test_store_contract.py``; these
tests run against the session's real ArcadeDB server, each in a database of its own.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from neo4j import exceptions as driver_errors

from aclarai.graph import FileSync, GraphStore, StoreCounts
from aclarai.graph.cypher import SCHEMA
from aclarai.graph.neo4j import Neo4jStore, translate_error
from aclarai.parsers import StoreError, StoreUnavailable
from tests.fixtures.bolt_server import BoltServer
from tests.graph.builders import block, claim, file_sync, note, score

OpenStore = Callable[..., Neo4jStore]


@pytest.fixture
def database(bolt_server: BoltServer) -> Iterator[str]:
    name = bolt_server.create_database(f"t{uuid.uuid4().hex[:16]}")
    yield name
    bolt_server.drop_database(name)


@pytest.fixture
def open_store(bolt_server: BoltServer, database: str) -> Iterator[OpenStore]:
    """Open stores on the test's database (closed at the end): ``open_store(**overrides)``."""
    opened: list[Neo4jStore] = []

    def open_(**overrides: Any) -> Neo4jStore:
        store = Neo4jStore(
            bolt_server.uri, bolt_server.user, bolt_server.password, database, **overrides
        )
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


def cypher(server: BoltServer, database: str, query: str, **params: Any) -> list[dict[str, Any]]:
    """Look at the graph directly, bypassing the store."""
    with server.driver() as driver, driver.session(database=database) as session:
        return [record.data() for record in session.run(query, params)]


def test_schema_set_up_is_idempotent_and_enforces_unique_ids(
    open_store: OpenStore, bolt_server: BoltServer, database: str
) -> None:
    open_store()
    open_store()  # a second start on the same database must not fail or duplicate anything
    constraints = cypher(bolt_server, database, "SHOW CONSTRAINTS")
    unique = sorted((c["labelsOrTypes"][0], c["properties"][0]) for c in constraints)
    assert unique == [("Block", "id"), ("Claim", "id"), ("File", "path")]
    indexed = {
        (i["labelsOrTypes"][0], i["properties"][0])
        for i in cypher(bolt_server, database, "SHOW INDEXES")
    }
    assert {("Block", "hash"), ("Block", "file")} <= indexed
    cypher(bolt_server, database, "CREATE (:Block {id: 'dup'})")
    with pytest.raises(driver_errors.ConstraintError):
        cypher(bolt_server, database, "CREATE (:Block {id: 'dup'})")


def test_old_stamps_are_rewritten_once_on_open(
    open_store: OpenStore, bolt_server: BoltServer, database: str
) -> None:
    cypher(
        bolt_server,
        database,
        "CREATE (:Block {id: 'live', file: 'a.md',"
        " updated_at: '2024-06-03T09:00:00.123456+00:00'}),"
        " (:Block {id: 'gone', file: 'a.md', updated_at: '2024-06-03T09:00:01Z',"
        "  deleted_at: '2024-06-04T10:30:00.5+00:00'})",
    )
    cypher(
        bolt_server,
        database,
        "MATCH (b:Block {id: 'live'}) CREATE (:Claim {id: 'c'})-[:ORIGINATES_FROM "
        "{evaluated_at: '2024-06-05T23:59:59.999999+00:00'}]->(b)",
    )

    open_store()

    rows = cypher(
        bolt_server,
        database,
        "MATCH (b:Block) OPTIONAL MATCH ()-[e:ORIGINATES_FROM]->(b) "
        "RETURN b.id AS id, b.updated_at AS updated, b.deleted_at AS deleted, "
        "e.evaluated_at AS evaluated ORDER BY id",
    )
    # Older graphs also predate note-scoped keys: each block is keyed by its id and note.
    assert rows == [
        {
            "id": "gone@a.md",
            "updated": "2024-06-03T09:00:01Z",
            "deleted": "2024-06-04T10:30:00Z",
            "evaluated": None,
        },
        {
            "id": "live@a.md",
            "updated": "2024-06-03T09:00:00Z",
            "deleted": None,
            "evaluated": "2024-06-05T23:59:59Z",
        },
    ]
    markers = cypher(bolt_server, database, "MATCH (m:AclaraiMigration) RETURN m.name AS name")
    assert sorted(m["name"] for m in markers) == [
        "m001_utc_stamps",
        "m002_note_scoped_block_keys",
    ]
    again = open_store()
    assert again.statements_run == len(SCHEMA) + 1, "a recorded migration is not run again"


def test_graph_shape_puts_scores_on_the_edge_and_omissions_on_element_nodes(
    open_store: OpenStore, bolt_server: BoltServer, database: str
) -> None:
    store = open_store()
    [result] = store.sync_files([note("a.md", "Paris is in France.")])
    b = store.get_blocks(result.changed)["a-0"]
    store.replace_claims({"a-0": [claim("c1", "a-0", "Paris is in France.")]})
    evaluated = score("c1", "a-0", b.hash, coverage=None, status="coverage: timeout")
    store.write_scores([replace(evaluated, omitted=("Paris", "x"))])

    [row] = cypher(
        bolt_server,
        database,
        "MATCH (f:File) MATCH (c:Claim)-[e:ORIGINATES_FROM]->(b:Block {file: f.path}) "
        "RETURN f.path AS path, b.id AS block, b.hash AS hash, c.text AS claim, "
        "properties(e) AS edge",
    )
    assert (row["path"], row["block"], row["hash"]) == ("a.md", "a-0", b.hash)
    edge = row["edge"]
    assert edge["entailed_score"] == 0.9 and edge["decontextualization_score"] == 0.7
    assert "coverage_score" not in edge  # a failed score is absent, never 0
    assert edge["status"] == "coverage: timeout" and edge["evaluated_hash"] == b.hash
    assert "quality" not in edge  # derived from a null score: null too

    def omitted() -> list[str]:
        rows = cypher(
            bolt_server,
            database,
            "MATCH (:Claim {id: 'c1'})-[:OMITS]->(el:Element) RETURN el.text AS text",
        )
        return sorted(r["text"] for r in rows)

    assert omitted() == ["Paris", "x"]
    store.write_scores([replace(evaluated, omitted=("Paris",))])
    assert omitted() == ["Paris"]  # the stale element is gone
    elements = "MATCH (el:Element) RETURN count(el) AS n"
    assert cypher(bolt_server, database, elements) == [{"n": 1}]
    store.replace_claims({"a-0": []})
    assert cypher(bolt_server, database, elements) == [{"n": 0}]  # removed with its claim


def test_replace_claims_naming_an_unknown_block_writes_nothing(open_store: OpenStore) -> None:
    store = open_store()
    store.sync_files([note("a.md", "One.")])
    store.replace_claims({"a-0": [claim("c1", "a-0")]})
    with pytest.raises(StoreError, match="no-such-block"):
        store.replace_claims({"a-0": [claim("c2", "a-0")], "no-such-block": []})
    assert [c.id for c in store.claims_of_blocks(["a-0"])["a-0"]] == ["c1"]
    assert store.counts().claims == 1


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (driver_errors.ServiceUnavailable("down"), StoreUnavailable),
        (driver_errors.SessionExpired("expired"), StoreUnavailable),
        (driver_errors.TransientError("deadlock"), StoreUnavailable),
        (driver_errors.DatabaseUnavailable("starting"), StoreUnavailable),
        (driver_errors.IncompleteCommit("lost during commit"), StoreUnavailable),
        (driver_errors.ClientError("bad"), StoreError),
        (driver_errors.CypherSyntaxError("syntax"), StoreError),
        (driver_errors.ConstraintError("duplicate"), StoreError),
        (driver_errors.AuthError("wrong password"), StoreError),
        (driver_errors.DatabaseError("internal"), StoreError),
        (driver_errors.ConfigurationError("bad uri"), StoreError),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else value.__name__,
)
def test_driver_errors_map_to_the_store_error_tree(exc: Exception, expected: type) -> None:
    error = translate_error(exc, "neo4j store: sync_files failed")  # type: ignore[arg-type]
    assert type(error) is expected
    assert str(error).startswith(f"neo4j store: sync_files failed: {type(exc).__name__}: ")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_server_is_retried_then_store_unavailable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="aclarai.graph.neo4j")
    uri = f"bolt://127.0.0.1:{_free_port()}"
    with pytest.raises(StoreUnavailable) as raised:
        Neo4jStore(uri, "neo4j", "secret-pw", "neo4j", max_attempts=3, timeout_s=2.0)
    assert isinstance(raised.value.__cause__, driver_errors.ServiceUnavailable)
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 2  # attempts 1 and 2 are retried, attempt 3 raises


def test_refused_credentials_are_a_store_error_and_not_retried(
    bolt_server: BoltServer, database: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="aclarai.graph.neo4j")
    with pytest.raises(StoreError) as raised:
        Neo4jStore(bolt_server.uri, bolt_server.user, "wrong-password", database, max_attempts=3)
    assert not isinstance(raised.value, StoreUnavailable)
    assert isinstance(raised.value.__cause__, driver_errors.AuthError)
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]


def _work() -> list[list[FileSync]]:
    """A resync-like sequence of calls: new notes, an edit, a move, a block dropped."""
    return [
        [note("a.md", "A one.", "A two."), note("b.md", "B one.")],
        [note("c.md", "C one.", "C two.", "C three.")],
        [note("a.md", "A one, edited.", "A two.", mtime_ns=2)],
        [
            file_sync("b.md", block("b-0", "b.md", "B one."), block("a-1", "b.md", "A two.", 1)),
            file_sync("a.md", block("a-0", "a.md", "A one, edited."), mtime_ns=3),
        ],
        [note("d.md", "D one."), note("c.md", "C one.", "C three.", mtime_ns=2)],
    ]


def _snapshot(store: GraphStore) -> tuple[Any, ...]:
    """Everything a sync leaves behind, without the wall-clock stamps."""
    states = store.file_states()
    blocks = sorted(
        (b.id, b.file, b.text, b.hash, b.version, b.position, b.deleted_at is None)
        for path in states
        for b in store.blocks_of_file(path)
    )
    return (sorted(states.items()), blocks, store.counts())


def test_outage_mid_sync_raises_unavailable_and_recovers_to_the_same_graph(
    bolt_server: BoltServer, open_store: OpenStore
) -> None:
    calls = _work()
    reference_db = bolt_server.create_database(f"t{uuid.uuid4().hex[:16]}")
    try:
        with Neo4jStore(
            bolt_server.uri, bolt_server.user, bolt_server.password, reference_db
        ) as reference:
            expected_results = [reference.sync_files(call) for call in calls[:2]]
            before_outage = _snapshot(reference)
            expected_results += [reference.sync_files(call) for call in calls[2:]]
            expected_final = _snapshot(reference)
    finally:
        bolt_server.drop_database(reference_db)
    assert expected_final[2] == StoreCounts(4, 7, 0, 0, 0, 0)

    store = open_store(max_attempts=2, timeout_s=5.0)
    results = [store.sync_files(call) for call in calls[:2]]
    bolt_server.stop()
    try:
        with pytest.raises(StoreUnavailable) as raised:
            store.sync_files(calls[2])
        assert isinstance(raised.value.__cause__, driver_errors.DriverError)
    finally:
        bolt_server.start()
    # The same store object reconnects; the failed call left nothing half-written.
    assert _snapshot(store) == before_outage
    results += [store.sync_files(call) for call in calls[2:]]
    assert results == expected_results
    assert _snapshot(store) == expected_final
