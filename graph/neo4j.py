"""The graph store on Neo4j (or any Bolt server speaking its Cypher), through the official driver.

Storage invariant: the same as the embedded store's (see :mod:`aclarai.graph.sqlite`), in graph
form (see :mod:`aclarai.graph.cypher` for the shape). The vault is the source of truth for text;
the graph holds what the last sync saw and ``aclarai resync --graph neo4j`` rebuilds it. A block is
never hard-deleted, only stamped ``deleted_at``, so one that reappears keeps its claims and scores.
Scores live on the ``ORIGINATES_FROM`` edge and count for its ``evaluated_hash`` only; an absent
score property on an evaluated edge means "that evaluation failed", never 0.

Every method is one Cypher statement in one managed transaction (``execute_read`` or
``execute_write``): three round-trips (begin, run, commit) per call whatever the size of the
batch, which is why callers should pass many files per call when they have them. Every write is an
idempotent MERGE/SET, which is what makes retrying a transaction whose commit outcome is unknown
safe. Transient driver errors are retried with exponential backoff up to ``max_attempts`` and then
raised as :class:`StoreUnavailable`; every other driver error becomes :class:`StoreError`. Both
keep the driver's exception as ``__cause__``.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import neo4j
from neo4j.exceptions import DriverError, Neo4jError, ServiceUnavailable, SessionExpired
from neo4j.exceptions import TransientError as DriverTransientError

from aclarai.graph import cypher
from aclarai.graph.base import (
    DEFAULT_QUALITY_THRESHOLD,
    ClaimRecord,
    FileState,
    FileSync,
    GradeWrite,
    GraphStore,
    ScoreRecord,
    StoreCounts,
    StoredBlock,
    StoredClaim,
    SyncResult,
    check_claims,
    check_file_syncs,
    check_limit,
    key_block_id,
)
from aclarai.graph.search_index import (
    SearchIndex,
    begin_write,
    drop_docs,
    end_write,
    put_docs,
    search_doc,
    set_claims,
)
from aclarai.parsers import (
    SCORE_NAMES,
    ClaimRef,
    DailyQuality,
    NoteStats,
    StoreError,
    StoreUnavailable,
    named_scores,
    utc_now,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

BACKOFF_BASE_S = 0.25
BACKOFF_MAX_S = 4.0


def is_transient(exc: BaseException) -> bool:
    """Whether a driver exception means "the database cannot be reached right now"."""
    if isinstance(exc, (ServiceUnavailable, SessionExpired, DriverTransientError)):
        return True
    return isinstance(exc, Neo4jError) and exc.is_retryable()


def translate_error(exc: DriverError | Neo4jError, context: str) -> StoreError:
    """The store error for a driver exception (raise it ``from exc`` to keep the cause).

    Args:
        exc: What the ``neo4j`` driver raised.
        context: Where it happened, for the message.

    Returns:
        :class:`StoreUnavailable` for unavailable, expired-session and transient errors,
        :class:`StoreError` for everything else (syntax, constraint, authentication, …).
    """
    message = f"{context}: {type(exc).__name__}: {exc}"
    if is_transient(exc):
        return StoreUnavailable(message)
    return StoreError(message)


def _stored_claim(row: Mapping[str, Any], omitted: tuple[str, ...]) -> StoredClaim:
    edge: dict[str, Any] = row["edge"]
    score = None
    if edge.get("evaluated_hash") is not None:
        score = ScoreRecord(
            claim_id=row["id"],
            block_id=row["block_id"],
            evaluated_hash=edge["evaluated_hash"],
            **{name: edge.get(name) for name in SCORE_NAMES},
            status=edge.get("status", ""),
            model=edge.get("model", ""),
            verdict=edge.get("verdict"),
            justification=edge.get("justification"),
            omitted=omitted,
            evaluated_at=edge.get("evaluated_at"),
        )
    return StoredClaim(id=row["id"], block_id=row["block_id"], text=row["text"], score=score)


def _claims_from_rows(
    rows: Iterable[Mapping[str, Any]],
) -> list[tuple[tuple[Any, ...], StoredClaim]]:
    """Fold the one-row-per-omitted-element result into claims, each with its sort key."""
    grouped: dict[tuple[str, str], tuple[Mapping[str, Any], list[tuple[int, str]]]] = {}
    for row in rows:
        entry = grouped.setdefault((row["block_id"], row["id"]), (row, []))
        if row["omitted_text"] is not None:
            entry[1].append((row["omitted_position"] or 0, row["omitted_text"]))
    claims = []
    for row, elements in grouped.values():
        omitted = tuple(text for _, text in sorted(elements))
        key = (row["file"], row["position"], row["edge"].get("ordinal", 0), row["id"])
        claims.append((key, _stored_claim(row, omitted)))
    return claims


def _note_stats(row: Mapping[str, Any]) -> NoteStats:
    weakest = None
    if row["weakest"]:
        quality, claim_id, block_id, text = min(row["weakest"], key=lambda w: w[1:3])
        weakest = ClaimRef(claim_id, text, row["file"], block_id, "", quality=quality)
    return NoteStats(
        row["file"],
        row["blocks"],
        row["claims"],
        row["scored"],
        row["mean_quality"],
        weakest,
        row["last_evaluated"],
        row["below"],
    )


def _by_quality(claim: StoredClaim) -> tuple[float, str, str]:
    """The order of ``low_quality_claims``: lowest first, then by claim and block id."""
    quality = claim.score.quality if claim.score is not None else None
    return (quality if quality is not None else 0.0, claim.id, claim.block_id)


def _score_props(score: ScoreRecord, now: str) -> dict[str, Any]:
    return {
        **named_scores(score),
        "quality": score.quality,
        "verdict": score.verdict,
        "justification": score.justification,
        "status": score.status,
        "model": score.model,
        "evaluated_hash": score.evaluated_hash,
        "evaluated_at": score.evaluated_at or now,
    }


class Neo4jStore(GraphStore):
    """The graph store on a Neo4j-compatible Bolt server; see the module docstring."""

    name = "neo4j"

    def __init__(
        self,
        uri: str,
        user: str,
        password: str,
        database: str,
        *,
        max_attempts: int = 5,
        timeout_s: float = 30.0,
        search_path: Path | None = None,
    ) -> None:
        """Connect, make sure the constraints and indexes exist and run the data migrations the
        database lacks (all idempotent).

        Args:
            uri: ``bolt://``, ``neo4j://`` or ``neo4j+s://`` URI, used as given.
            user: User name.
            password: Password (the daemon reads it from the variable ``password_env`` names).
            database: Database name.
            max_attempts: Attempts per call before a transient failure is raised.
            timeout_s: Connection, acquisition and transaction timeout.
            search_path: The file of the search index (in the state folder); ``None`` keeps it
                in memory, for this process only.

        Raises:
            StoreUnavailable: The server cannot be reached after ``max_attempts`` tries.
            StoreError: Bad URI, refused credentials, or a schema statement was rejected.
        """
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.uri = uri
        self.database = database
        self.max_attempts = max_attempts
        self.timeout_s = timeout_s
        self.statements_run = 0
        """Statements sent so far (each one round-trip, plus its commit): for benchmarks."""
        try:
            # The driver's own retry loop is turned off: this class retries, so that
            # ``max_attempts`` bounds the wait and the error is the store's.
            self._driver = neo4j.GraphDatabase.driver(
                uri,
                auth=(user, password),
                connection_timeout=timeout_s,
                connection_acquisition_timeout=timeout_s,
                max_transaction_retry_time=0.0,
            )
        except (DriverError, Neo4jError, ValueError) as exc:
            raise StoreError(f"neo4j store: bad connection settings for {uri}: {exc}") from exc
        try:
            for statement in cypher.SCHEMA:
                self._schema(statement)
            self._migrate()
            self.search = SearchIndex.open_file(search_path)
        except BaseException:
            self._driver.close()
            raise

    @property
    def driver(self) -> neo4j.Driver:
        """The driver, shared with the read-only query tool."""
        return self._driver

    def _attempts(self, action: str, call: Callable[[], T]) -> T:
        """Run ``call``, retrying transient driver errors with exponential backoff."""
        delay = BACKOFF_BASE_S
        for attempt in range(1, self.max_attempts + 1):
            try:
                return call()
            except (DriverError, Neo4jError) as exc:
                error = translate_error(exc, f"neo4j store: {action} on {self.uri} failed")
                if not isinstance(error, StoreUnavailable) or attempt == self.max_attempts:
                    raise error from exc
                logger.warning(
                    "neo4j store: %s failed (attempt %d of %d), retrying in %.2fs: %s",
                    action,
                    attempt,
                    self.max_attempts,
                    delay,
                    exc,
                )
                time.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX_S)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _schema(self, statement: str) -> None:
        def run() -> None:
            # Schema statements cannot share a transaction with data writes: auto-commit.
            with self._driver.session(database=self.database) as session:
                self.statements_run += 1
                session.run(neo4j.Query(statement, timeout=self.timeout_s)).consume()

        self._attempts("schema set-up", run)

    def _migrate(self) -> None:
        rows = self._query("migrations", cypher.APPLIED_MIGRATIONS, {})
        done = {row["name"] for row in rows}
        for name, statements in cypher.MIGRATIONS:
            if name in done:
                continue
            for statement in statements:
                self._query(f"migration {name}", statement, {}, write=True)
            params = {"name": name, "now": utc_now()}
            self._query("migrations", cypher.RECORD_MIGRATION, params, write=True)
            logger.info("neo4j store: applied data migration %s on %s", name, self.uri)

    def _query(
        self,
        action: str,
        statement: str,
        params: Mapping[str, Any],
        *,
        write: bool = False,
        check: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> list[dict[str, Any]]:
        """Run one statement in one managed transaction and return its rows.

        ``check`` sees the rows before the commit; whatever it raises rolls the call back.
        """
        [rows] = self._transaction(action, [_Step(statement, params, check)], write=write)
        return rows

    def _transaction(
        self, action: str, steps: Sequence[_Step], *, write: bool = True
    ) -> list[list[dict[str, Any]]]:
        """Run statements in order in one managed transaction; return each one's rows."""

        @neo4j.unit_of_work(timeout=self.timeout_s)
        def work(tx: neo4j.ManagedTransaction) -> list[list[dict[str, Any]]]:
            results = []
            for step in steps:
                self.statements_run += 1
                rows = [record.data() for record in tx.run(step.statement, dict(step.params))]
                if step.check is not None:
                    step.check(rows)
                results.append(rows)
            return results

        def run() -> list[list[dict[str, Any]]]:
            with self._driver.session(database=self.database) as session:
                execute = session.execute_write if write else session.execute_read
                return execute(work)

        return self._attempts(action, run)

    def file_states(self, paths: Iterable[str] | None = None) -> dict[str, FileState]:
        if paths is None:
            rows = self._query("file_states", cypher.FILE_STATES, {})
        else:
            wanted = list(dict.fromkeys(paths))
            if not wanted:
                return {}
            rows = self._query("file_states", cypher.FILE_STATES_OF, {"paths": wanted})
        return {
            row["path"]: FileState(row["path"], row["mtime_ns"], row["size"], row["sha256"])
            for row in rows
        }

    def sync_files(self, files: Sequence[FileSync]) -> list[SyncResult]:
        files = list(files)
        check_file_syncs(files)
        if not files:
            return []
        blocks = _block_rows(files)
        params = {
            "files": [
                {
                    "path": s.state.path,
                    "mtime_ns": s.state.mtime_ns,
                    "size": s.state.size,
                    "sha256": s.state.sha256,
                    "ids": [b.id for b in s.blocks],
                }
                for s in files
            ],
            "blocks": blocks,
            "now": utc_now(),
        }
        statement = cypher.SYNC_FILES if blocks else cypher.SYNC_FILES_WITHOUT_BLOCKS
        listed = {b["id"] for b in blocks}
        moves = _move_rows(files, listed)
        self.search.write(begin_write)
        if moves:
            steps = [_Step(cypher.MOVE_BLOCKS, {"moves": moves}), _Step(statement, params)]
            [_, [row]] = self._transaction("sync_files", steps)
        else:
            [row] = self._query("sync_files", statement, params, write=True)
        _index_sync(self, files, [m["source"] for m in moves], listed)
        changed = set(row["changed"])
        removed: dict[str, list[tuple[int, str]]] = {}
        for file, position, block_id in row["removed"]:
            if block_id not in listed:
                removed.setdefault(file, []).append((position, block_id))
        results = []
        for sync in files:
            ids = [b.id for b in sync.blocks]
            gone = [i for _, i in sorted(removed.get(sync.state.path, ()))]
            results.append(
                SyncResult(
                    sync.state.path,
                    tuple(i for i in ids if i in changed),
                    tuple(i for i in ids if i not in changed),
                    tuple(gone),
                )
            )
        return results

    def record_write(self, state: FileState, versions: Mapping[str, int]) -> None:
        self.record_writes([(state, versions)])

    def record_writes(self, writes: Sequence[tuple[FileState, Mapping[str, int]]]) -> None:
        """See GraphStore: one transaction for them all."""
        if not writes:
            return
        now = utc_now()
        steps = [
            _Step(
                cypher.RECORD_WRITE,
                {
                    "path": state.path,
                    "mtime_ns": state.mtime_ns,
                    "size": state.size,
                    "sha256": state.sha256,
                    "blocks": [{"id": i, "version": v} for i, v in versions.items()],
                    "now": now,
                },
            )
            for state, versions in writes
        ]
        self._transaction("record_writes", steps)

    def forget_files(self, paths: Iterable[str]) -> list[str]:
        paths = list(dict.fromkeys(paths))
        if not paths:
            return []
        [row] = self._query("forget_files", cypher.FORGET_FILES, {"paths": paths}, write=True)
        return [block_id for _, _, block_id in sorted(row["live"])]

    def mark_deleted(self, block_ids: Iterable[str]) -> int:
        ids = list(dict.fromkeys(block_ids))
        if not ids:
            return 0
        params = {"ids": ids, "now": utc_now()}
        self.search.write(begin_write)
        [row] = self._query("mark_deleted", cypher.MARK_DELETED, params, write=True)
        _follow(self.search, lambda conn: drop_docs(conn, ids))
        return int(row["marked"])

    def get_blocks(self, block_ids: Iterable[str]) -> dict[str, StoredBlock]:
        ids = list(dict.fromkeys(block_ids))
        if not ids:
            return {}
        rows = self._query("get_blocks", cypher.GET_BLOCKS, {"ids": ids})
        return {row["id"]: StoredBlock(**row) for row in rows}

    def live_blocks_with_ids(self, block_ids: Iterable[str]) -> list[StoredBlock]:
        ids = list(dict.fromkeys(block_ids))
        if not ids:
            return []
        rows = self._query("live_blocks_with_ids", cypher.LIVE_BLOCKS_WITH_IDS, {"ids": ids})
        return [StoredBlock(**row) for row in rows]

    def blocks_of_file(self, path: str) -> list[StoredBlock]:
        rows = self._query("blocks_of_file", cypher.BLOCKS_OF_FILE, {"path": path})
        return [StoredBlock(**row) for row in rows]

    def live_blocks(self) -> list[StoredBlock]:
        return [StoredBlock(**row) for row in self._query("live_blocks", cypher.LIVE_BLOCKS, {})]

    def replace_claims(self, claims_by_block: Mapping[str, Sequence[ClaimRecord]]) -> None:
        """Make these the claims each block originates, in the order given (see GraphStore).

        Raises:
            StoreError: A block id is not in the store (nothing is written).
        """
        check_claims(claims_by_block)
        if claims_by_block:
            self.search.write(begin_write)
            self._transaction("replace_claims", [_replace_claims_step(claims_by_block)])
            _index_claims(self.search, [claims_by_block])

    def claims_of_blocks(self, block_ids: Iterable[str]) -> dict[str, list[StoredClaim]]:
        """Claims of each block in the order ``replace_claims`` was given them (see GraphStore)."""
        ids = list(dict.fromkeys(block_ids))
        result: dict[str, list[StoredClaim]] = {block_id: [] for block_id in ids}
        if not ids:
            return result
        rows = self._query("claims_of_blocks", cypher.CLAIMS_OF_BLOCKS, {"ids": ids})
        for _, claim in sorted(_claims_from_rows(rows), key=lambda item: item[0]):
            result[claim.block_id].append(claim)
        return result

    def claims_needing_evaluation(self) -> list[StoredClaim]:
        """See GraphStore; ordered by file, block position and claim order."""
        rows = self._query("claims_needing_evaluation", cypher.CLAIMS_NEEDING_EVALUATION, {})
        return [claim for _, claim in sorted(_claims_from_rows(rows), key=lambda item: item[0])]

    def write_scores(self, scores: Sequence[ScoreRecord]) -> int:
        """See GraphStore; ``evaluated_at`` defaults to now, ``quality`` is derived."""
        if not scores:
            return 0
        [[row]] = self._transaction("write_scores", [_write_scores_step(scores, utc_now())])
        return int(row["written"])

    def write_grades(self, grades: Sequence[GradeWrite]) -> list[int]:
        """See GraphStore: one transaction for them all.

        Raises:
            StoreError: A block id is not in the store (nothing is written).
        """
        for grade in grades:
            check_claims(grade.claims)
        now = utc_now()
        steps: list[_Step] = []
        # Per grade, the index of its ``write_scores`` step (None: it has no scores).
        scored: list[int | None] = []
        for grade in grades:
            if grade.claims:
                steps.append(_replace_claims_step(grade.claims))
            scored.append(len(steps) if grade.scores else None)
            if grade.scores:
                steps.append(_write_scores_step(grade.scores, now))
        if not steps:
            return [0] * len(grades)
        self.search.write(begin_write)
        results = self._transaction("write_grades", steps)
        _index_claims(self.search, [grade.claims for grade in grades])
        return [0 if step is None else int(results[step][0]["written"]) for step in scored]

    def low_quality_claims(
        self,
        threshold: float = DEFAULT_QUALITY_THRESHOLD,
        limit: int | None = 10,
        *,
        file: str | None = None,
    ) -> list[StoredClaim]:
        """See GraphStore."""
        check_limit(limit)
        if limit == 0:
            return []
        params = {"threshold": float(threshold), "limit": limit, "file": file}
        statement = cypher.LOW_QUALITY_CLAIMS_ALL if limit is None else cypher.LOW_QUALITY_CLAIMS
        rows = self._query("low_quality_claims", statement, params)
        return sorted((claim for _, claim in _claims_from_rows(rows)), key=_by_quality)

    def failed_claims(
        self, limit: int | None = None, *, file: str | None = None
    ) -> list[StoredClaim]:
        """See GraphStore."""
        check_limit(limit)
        if limit == 0:
            return []
        statement = cypher.FAILED_CLAIMS_ALL if limit is None else cypher.FAILED_CLAIMS
        rows = self._query("failed_claims", statement, {"limit": limit, "file": file})
        return [claim for _, claim in sorted(_claims_from_rows(rows), key=lambda item: item[0])]

    def note_stats(self, threshold: float = DEFAULT_QUALITY_THRESHOLD) -> list[NoteStats]:
        """See GraphStore."""
        params = {"threshold": float(threshold)}
        return [_note_stats(row) for row in self._query("note_stats", cypher.NOTE_STATS, params)]

    def score_counts(self) -> dict[str, dict[int, int]]:
        """See GraphStore."""
        counts: dict[str, dict[int, int]] = {}
        for row in self._query("score_counts", cypher.SCORE_COUNTS, {}):
            by_value = counts.setdefault(row["name"], {})
            # Two float roundings of the same hundredth fold into one key.
            key = int(row["hundredths"])
            by_value[key] = by_value.get(key, 0) + row["edges"]
        return counts

    def daily_quality(self) -> list[DailyQuality]:
        """See GraphStore."""
        rows = self._query("daily_quality", cypher.DAILY_QUALITY, {})
        return [DailyQuality(r["day"], r["mean_quality"], r["edges"]) for r in rows]

    def counts(self, *, quality_threshold: float = DEFAULT_QUALITY_THRESHOLD) -> StoreCounts:
        params = {"threshold": float(quality_threshold)}
        [row] = self._query("counts", cypher.COUNTS, params)
        return StoreCounts(
            files=row["files"],
            blocks=row["blocks"],
            deleted_blocks=row["deleted"],
            claims=row["claims"],
            scored_claims=row["scored"],
            null_scores=row["null_scores"],
            low_quality=row["low_quality"],
        )

    def close(self) -> None:
        self._driver.close()
        self.search.close()


def _index_sync(
    store: Neo4jStore, files: Sequence[FileSync], sources: Sequence[str], listed: set[str]
) -> None:
    """The index's half of ``sync_files``: the moved blocks' old keys out, the files' blocks
    in (a block new to the index with the claims the graph gives it)."""
    claims = {
        key: [c.text for c in found]
        for key, found in store.claims_of_blocks(listed).items()
        if found
    }
    docs = [search_doc(b) for sync in files for b in sync.blocks]
    _follow(store.search, lambda conn: (drop_docs(conn, sources), put_docs(conn, docs, claims)))


def _follow(search: SearchIndex, work: Callable[[sqlite3.Connection], object]) -> None:
    """The index's half of a write whose graph half has committed (``begin_write`` counted it
    before): a crash between the two leaves the count up, for ``resync`` to mend."""

    def follow(conn: sqlite3.Connection) -> None:
        work(conn)
        end_write(conn)

    search.write(follow)


def _index_claims(
    search: SearchIndex, grades: Sequence[Mapping[str, Sequence[ClaimRecord]]]
) -> None:
    texts = {key: [c.text for c in claims] for grade in grades for key, claims in grade.items()}
    _follow(search, lambda conn: set_claims(conn, texts))


@dataclass(frozen=True, slots=True)
class _Step:
    """One statement of a transaction, and the check its rows must pass before the commit."""

    statement: str
    params: Mapping[str, Any]
    check: Callable[[list[dict[str, Any]]], None] | None = None


def _block_rows(files: Sequence[FileSync]) -> list[dict[str, Any]]:
    """The blocks of ``files`` as ``SYNC_FILES`` takes them."""
    return [
        {
            "id": b.id,
            "anchor": key_block_id(b.id),
            "file": b.file,
            "text": b.text,
            "hash": b.hash,
            "version": b.version,
            "position": b.position,
        }
        for sync in files
        for b in sync.blocks
    ]


def _move_rows(files: Sequence[FileSync], listed: set[str]) -> list[dict[str, str]]:
    """The blocks ``files`` take over, as ``MOVE_BLOCKS`` takes them: one per source that no
    file of the call still lists."""
    moves: dict[str, dict[str, str]] = {}
    for sync in files:
        for b in sync.blocks:
            if b.moved_from is not None and b.moved_from not in listed:
                moves.setdefault(
                    b.moved_from, {"source": b.moved_from, "key": b.id, "file": b.file}
                )
    return list(moves.values())


def _replace_claims_step(claims_by_block: Mapping[str, Sequence[ClaimRecord]]) -> _Step:
    rows = []
    ordinal = 0
    for block_id, claims in claims_by_block.items():
        listed: dict[str, dict[str, Any]] = {}
        for claim in claims:
            if claim.id not in listed:
                listed[claim.id] = {"id": claim.id, "text": claim.text, "ordinal": ordinal}
                ordinal += 1
        rows.append(
            {"block_id": block_id, "claim_ids": list(listed), "claims": list(listed.values())}
        )

    def check(result: list[dict[str, Any]]) -> None:
        missing = sorted(set(claims_by_block) - set(result[0]["found"]))
        if missing:
            raise StoreError(
                f"replace_claims: no such block in the store: {', '.join(missing[:5])}"
            )

    return _Step(cypher.REPLACE_CLAIMS, {"rows": rows}, check)


def _write_scores_step(scores: Sequence[ScoreRecord], now: str) -> _Step:
    rows = [
        {
            "claim_id": s.claim_id,
            "block_id": s.block_id,
            "evaluated_hash": s.evaluated_hash,
            "props": _score_props(s, now),
            "omitted": list(dict.fromkeys(s.omitted)),
        }
        for s in scores
    ]
    return _Step(cypher.WRITE_SCORES, {"rows": rows})
