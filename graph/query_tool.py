"""The agents' read-only window on the graph: the ``neo4j_query_tool``.

It answers a small set of named questions (:data:`QUESTIONS`: the neighbouring blocks of a block,
the claims of a block) the same way over every backend: :class:`Neo4jQueryTool` asks a Bolt server
in Cypher, :class:`StoreQueryTool` asks any :class:`GraphStore` through its interface. Over Neo4j,
:meth:`Neo4jQueryTool.read` also runs a caller's own Cypher, within limits that hold whatever the
server does: only ``execute_read`` transactions, a clause check that refuses anything that could
write (some servers, ArcadeDB among them, do not enforce read access mode), at most ``max_rows``
rows, and ``timeout_s`` both as the server-side transaction timeout and as a client-side deadline.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

import neo4j
from neo4j.exceptions import DriverError, Neo4jError

from aclarai.graph.base import GraphStore
from aclarai.graph.neo4j import Neo4jStore, map_driver_error
from aclarai.parsers import StoreError

TOOL_NAME = "neo4j_query_tool"

QUESTIONS = ("neighbouring_blocks", "claims_of_block")
"""The questions every backend answers, by :meth:`GraphQueryTool.answer` name."""

DEFAULT_MAX_ROWS = 50
DEFAULT_TIMEOUT_S = 5.0

# Clauses that write, change schema or the session, or run code with unknown effects.
_WRITE_WORDS = frozenset(
    {
        "CREATE", "INSERT", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "LOAD",
        "FOREACH", "CALL", "ALTER", "RENAME", "GRANT", "DENY", "REVOKE", "START", "STOP",
        "TERMINATE", "USE", "ENABLE", "DEALLOCATE", "REALLOCATE",
    }
)  # fmt: skip
# Built-in procedures that only read; every other CALL (including ``CALL {}``) is refused.
_READ_PROCEDURES = frozenset({"db.labels", "db.relationshiptypes", "db.propertykeys"})

_LITERALS = re.compile(
    r"""//[^\n]*|/\*.*?\*/|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|`[^`]*`""", re.DOTALL
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ALIAS = re.compile(r"\bAS\s+$", re.IGNORECASE)
_PROCEDURE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\(")

_NEIGHBOURS = """
MATCH (b:Block {id: $id}) WHERE b.deleted_at IS NULL
MATCH (n:Block {file: b.file})
WHERE n.deleted_at IS NULL AND n.id <> b.id
  AND n.position >= b.position - $before AND n.position <= b.position + $after
RETURN n.id AS id, n.file AS file, n.position AS position, n.position - b.position AS offset,
  n.text AS text
ORDER BY n.position
LIMIT $limit
"""

_CLAIMS = """
MATCH (c:Claim)-[e:ORIGINATES_FROM]->(b:Block {id: $id})
RETURN c.id AS id, c.text AS text, e.entailed_score AS entailed_score,
  e.coverage_score AS coverage_score, e.decontextualization_score AS decontextualization_score,
  e.quality AS quality, e.status AS status
ORDER BY e.ordinal
LIMIT $limit
"""


def check_read_only(query: str) -> None:
    """Refuse a Cypher query that could write, before it reaches the server.

    Words inside string literals, comments and backticks, and property, label, parameter,
    map-key and alias names are ignored; a clause word anywhere else is refused, erring on the
    safe side.

    Raises:
        ValueError: The query holds a write clause, an unlisted ``CALL`` or several statements.
    """
    code = _LITERALS.sub(" ", query)
    if ";" in code.rstrip().rstrip(";"):
        raise ValueError("read-only query tool: one statement at a time")
    for match in _WORD.finditer(code):
        word = match.group().upper()
        if word not in _WRITE_WORDS:
            continue
        before = code[: match.start()].rstrip()[-1:]
        after = code[match.end() :].lstrip()[:1]
        if before in {".", ":", "$"} or after == ":" or _ALIAS.search(code, 0, match.start()):
            continue
        if word == "CALL":
            procedure = _PROCEDURE.match(code, match.end())
            if procedure and procedure.group(1).lower() in _READ_PROCEDURES:
                continue
        raise ValueError(f"read-only query tool: {word} is not allowed")


class GraphQueryTool(ABC):
    """Read-only answers about the graph, as JSON-ready rows, at most ``max_rows`` of them.

    ``timeout_s`` bounds answers that travel over the network; the embedded store answers
    locally from its own indexes.
    """

    name = TOOL_NAME

    def __init__(
        self, *, max_rows: int = DEFAULT_MAX_ROWS, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        if max_rows < 1 or timeout_s <= 0:
            raise ValueError("max_rows must be at least 1 and timeout_s positive")
        self.max_rows = max_rows
        self.timeout_s = timeout_s

    @abstractmethod
    def neighbouring_blocks(
        self, block_id: str, *, before: int = 1, after: int = 1
    ) -> list[dict[str, Any]]:
        """Live blocks of the same file within ``before``/``after`` positions, in file order.

        Rows: ``id``, ``file``, ``position``, ``offset`` (relative to the block) and ``text``; none
        when the block is unknown or deleted.
        """

    @abstractmethod
    def claims_of_block(self, block_id: str) -> list[dict[str, Any]]:
        """Claims the block originates, in extraction order.

        Rows: ``id``, ``text``, the three scores, ``quality`` and ``status`` (``None`` when not
        evaluated yet; a ``None`` score with a status means that evaluation failed).
        """

    def answer(self, question: str, **arguments: Any) -> list[dict[str, Any]]:
        """Answer one of :data:`QUESTIONS` by name, as an agent's tool call does.

        Raises:
            ValueError: Unknown question or arguments.
        """
        if question not in QUESTIONS:
            raise ValueError(f"unknown question {question!r}; ask one of {', '.join(QUESTIONS)}")
        method: Callable[..., list[dict[str, Any]]] = getattr(self, question)
        try:
            return method(**arguments)
        except TypeError as exc:
            raise ValueError(f"bad arguments for {question}: {exc}") from exc


class StoreQueryTool(GraphQueryTool):
    """The questions answered through the storage interface (the embedded backend)."""

    def __init__(
        self,
        store: GraphStore,
        *,
        max_rows: int = DEFAULT_MAX_ROWS,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        super().__init__(max_rows=max_rows, timeout_s=timeout_s)
        self.store = store

    def neighbouring_blocks(
        self, block_id: str, *, before: int = 1, after: int = 1
    ) -> list[dict[str, Any]]:
        block = self.store.get_blocks([block_id]).get(block_id)
        if block is None or block.deleted_at is not None:
            return []
        rows = [
            {
                "id": n.id,
                "file": n.file,
                "position": n.position,
                "offset": n.position - block.position,
                "text": n.text,
            }
            for n in self.store.blocks_of_file(block.file)
            if n.id != block.id and -before <= n.position - block.position <= after
        ]
        return rows[: self.max_rows]

    def claims_of_block(self, block_id: str) -> list[dict[str, Any]]:
        rows = []
        for claim in self.store.claims_of_blocks([block_id])[block_id][: self.max_rows]:
            score = claim.score
            rows.append(
                {
                    "id": claim.id,
                    "text": claim.text,
                    "entailed_score": score.entailed_score if score else None,
                    "coverage_score": score.coverage_score if score else None,
                    "decontextualization_score": (
                        score.decontextualization_score if score else None
                    ),
                    "quality": score.quality if score else None,
                    "status": score.status if score else None,
                }
            )
        return rows


class Neo4jQueryTool(GraphQueryTool):
    """The questions, and the caller's own read-only Cypher, over a Bolt server."""

    def __init__(
        self,
        driver: neo4j.Driver,
        database: str,
        *,
        max_rows: int = DEFAULT_MAX_ROWS,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        super().__init__(max_rows=max_rows, timeout_s=timeout_s)
        self.driver = driver
        self.database = database

    def read(self, query: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a read-only Cypher query and return at most ``max_rows`` rows.

        Raises:
            ValueError: The query could write (see :func:`check_read_only`).
            StoreError: The server refused it or it ran past ``timeout_s``
                (:class:`StoreUnavailable` when the server cannot be reached).
        """
        check_read_only(query)
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                outcome["rows"] = self._execute(query, dict(params or {}))
            except BaseException as exc:
                outcome["error"] = exc
            finally:
                done.set()

        # A daemon thread, because not every server honours the transaction timeout and the
        # driver has no read timeout: past the deadline the caller moves on and the thread ends
        # whenever the server answers.
        threading.Thread(target=run, name="neo4j-query-tool", daemon=True).start()
        if not done.wait(self.timeout_s):
            raise StoreError(f"read-only query tool: query ran past {self.timeout_s}s")
        if "error" in outcome:
            exc = outcome["error"]
            if isinstance(exc, (DriverError, Neo4jError)):
                raise map_driver_error(exc, "query tool") from exc
            raise exc
        rows: list[dict[str, Any]] = outcome["rows"]
        return rows

    def _execute(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        @neo4j.unit_of_work(timeout=self.timeout_s)
        def work(tx: neo4j.ManagedTransaction) -> list[dict[str, Any]]:
            result = tx.run(query, params)
            rows = []
            for record in result:
                rows.append(record.data())
                if len(rows) >= self.max_rows:
                    break
            # Discards the rest on the server instead of fetching it.
            result.consume()
            return rows

        with self.driver.session(
            database=self.database,
            default_access_mode=neo4j.READ_ACCESS,
            fetch_size=self.max_rows,
        ) as session:
            return session.execute_read(work)

    def neighbouring_blocks(
        self, block_id: str, *, before: int = 1, after: int = 1
    ) -> list[dict[str, Any]]:
        params = {"id": block_id, "before": before, "after": after, "limit": self.max_rows}
        return self.read(_NEIGHBOURS, params)

    def claims_of_block(self, block_id: str) -> list[dict[str, Any]]:
        return self.read(_CLAIMS, {"id": block_id, "limit": self.max_rows})


def make_query_tool(
    store: GraphStore, *, max_rows: int = DEFAULT_MAX_ROWS, timeout_s: float = DEFAULT_TIMEOUT_S
) -> GraphQueryTool:
    """The query tool for this store: Cypher over Neo4j, the storage interface otherwise.

    Args:
        store: The daemon's store.
        max_rows: Most rows one answer returns (``tools`` config ``params.max_rows``).
        timeout_s: Time limit of one answer (``params.timeout_s``).
    """
    if isinstance(store, Neo4jStore):
        return Neo4jQueryTool(store.driver, store.database, max_rows=max_rows, timeout_s=timeout_s)
    return StoreQueryTool(store, max_rows=max_rows, timeout_s=timeout_s)
