"""End-to-end ``resync`` of the sample vault against both graph backends, and a Bolt outage.

The embedded store (SQLite) and the Bolt store (a real ArcadeDB server) must give the same notes
and the same graph, read back through the :class:`GraphStore` interface. The Neo4j backend is
selected the way a user selects it: ``ACLARAI_GRAPH__*`` variables and ``NEO4J_PASSWORD``, or the
``--graph neo4j`` flag of the command line.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aclarai.daemon.cli import EX_TEMPFAIL
from aclarai.daemon.config import Config, load_config
from aclarai.daemon.factory import build_queue, build_store
from aclarai.daemon.loop.resync import format_summary, resync
from aclarai.graph import GraphStore
from tests.fixtures.bolt_server import BoltServer
from tests.helpers.vault import DASHBOARD, user_files

ROOT = Path(__file__).resolve().parents[3]
BACKENDS = ["sqlite", pytest.param("neo4j", marks=pytest.mark.slow)]

Snapshot = dict[str, Any]


@dataclass(frozen=True)
class Outcome:
    """What one resync left behind: the vault's bytes and the graph as the store reads it."""

    notes: dict[str, bytes]
    graph: Snapshot
    dashboard: str


SCORED_NOTES = 10
"""The sample vault's 7 Tier 1 notes and the 3 its inbox import brings."""


def copy_vault(dest: Path) -> Path:
    shutil.copytree(ROOT / "sample_vault", dest)
    return dest


# When it was written and when each note was last evaluated: all that may differ between runs.
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)")


def dashboard_text(root: Path) -> str:
    """The dashboard note without its timestamps: the store's answers, rendered."""
    return TIMESTAMP.sub("<time>", (root / DASHBOARD).read_text(encoding="utf-8"))


def graph_snapshot(store: GraphStore) -> Snapshot:
    """Everything the store holds except its own timestamps, in a comparable form."""
    states = store.file_states()
    blocks = [
        (b.id, b.file, b.text, b.hash, b.version, b.position, b.deleted_at)
        for path in sorted(states)
        for b in store.blocks_of_file(path)
    ]
    claims = store.claims_of_blocks([b[0] for b in blocks])
    edges = [
        (
            c.id,
            c.block_id,
            c.text,
            None
            if c.score is None
            else (
                c.score.evaluated_hash,
                c.score.entailed_score,
                c.score.coverage_score,
                c.score.decontextualization_score,
                c.score.status,
                c.score.model,
                c.score.verdict,
                c.score.justification,
                c.score.omitted,
            ),
        )
        for block_claims in claims.values()
        for c in block_claims
    ]
    return {
        "files": sorted((s.path, s.size, s.sha256) for s in states.values()),
        "blocks": blocks,
        "edges": edges,
        "counts": store.counts(),
    }


def read_graph(config: Config, vault: Path) -> Snapshot:
    store = build_store(config, config.state_dir_for(vault))
    try:
        return graph_snapshot(store)
    finally:
        store.close()


def queued(config: Config, vault: Path) -> int:
    queue = build_queue(config, config.state_dir_for(vault))
    try:
        return queue.depth()
    finally:
        queue.close()


def base_env(state: Path, **extra: str) -> dict[str, str]:
    env = {
        "ACLARAI_STATE_DIR": str(state),
        "XDG_CONFIG_HOME": str(state / "xdg-config"),
        "XDG_STATE_HOME": str(state / "xdg-state"),
    }
    env.update(extra)
    return env


def neo4j_env(server: BoltServer, database: str, **extra: str) -> dict[str, str]:
    """The variables a user sets to point aclarai at a Neo4j server (the backend is separate)."""
    return {
        "ACLARAI_GRAPH__NEO4J__URI": f"bolt://127.0.0.1:{server.bolt_port}",
        "ACLARAI_GRAPH__NEO4J__USER": server.user,
        "ACLARAI_GRAPH__NEO4J__DATABASE": database,
        "NEO4J_PASSWORD": server.password,
        **extra,
    }


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aclarai.daemon.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """An uninterrupted resync of the sample vault into a fresh embedded store."""
    tmp = tmp_path_factory.mktemp("reference")
    vault = copy_vault(tmp / "vault")
    config = load_config(env=base_env(tmp / "state"))
    summary = resync(config, vault)
    assert summary.ok and summary.drain.files_written == SCORED_NOTES
    return Outcome(
        user_files(vault),
        read_graph(config, vault),
        dashboard_text(vault),
    )


@pytest.fixture
def fresh_database(bolt_server: BoltServer) -> Iterator[str]:
    """An empty database on the session's Bolt server, dropped after the test."""
    name = bolt_server.create_database(f"t{uuid.uuid4().hex[:16]}")
    yield name
    bolt_server.drop_database(name)


@pytest.fixture
def backend_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The environment selecting ``request.param``'s backend, with state under tmp_path."""
    env = base_env(tmp_path / "state")
    if request.param == "neo4j":
        server: BoltServer = request.getfixturevalue("bolt_server")
        database: str = request.getfixturevalue("fresh_database")
        env.update(neo4j_env(server, database, ACLARAI_GRAPH__BACKEND="neo4j"))
    return env


@pytest.mark.parametrize("backend_env", BACKENDS, indirect=True)
def test_resync_gives_the_same_notes_and_graph_on_every_backend(
    backend_env: dict[str, str], tmp_path: Path, reference: Outcome
) -> None:
    config = load_config(env=backend_env)
    vault = copy_vault(tmp_path / "vault")

    first = resync(config, vault)

    assert first.ok and first.store_error is None and first.queued == 0
    assert first.drain.files_written == SCORED_NOTES
    assert user_files(vault) == reference.notes
    graph = read_graph(config, vault)
    assert graph == reference.graph
    assert graph["counts"].scored_claims > 30
    # Each backend answers the dashboard's questions alike.
    assert dashboard_text(vault) == reference.dashboard
    assert "xychart-beta" in reference.dashboard and "#^blk-" in reference.dashboard

    second = resync(config, vault)

    assert (second.synced.dirty_blocks, second.synced.files_read) == (0, 0)
    assert (second.drain.claims_evaluated, second.drain.files_written) == (0, 0)
    assert user_files(vault) == reference.notes
    assert read_graph(config, vault) == graph


def test_moving_to_neo4j_is_one_command(
    tmp_path: Path, bolt_server: BoltServer, fresh_database: str, reference: Outcome
) -> None:
    """A vault scored with the embedded store, then ``aclarai resync --graph neo4j VAULT``."""
    env = base_env(tmp_path / "state")
    vault = copy_vault(tmp_path / "vault")
    assert resync(load_config(env=env), vault).drain.files_written == SCORED_NOTES

    env.update(neo4j_env(bolt_server, fresh_database))
    done = run_cli("resync", "--graph", "neo4j", str(vault), env=env)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert re.search(r"^notes rewritten +0$", done.stdout, re.MULTILINE), done.stdout
    assert re.search(r"^blocks still queued +0$", done.stdout, re.MULTILINE), done.stdout
    assert user_files(vault) == reference.notes, "the notes already held these scores"
    neo4j_config = load_config(env={**env, "ACLARAI_GRAPH__BACKEND": "neo4j"})
    assert read_graph(neo4j_config, vault) == reference.graph


class _StopOnLog(logging.Handler):
    """Runs ``action`` once, in the thread that logs it, at the first record matching ``text``.

    The consumer logs "scores written" right after a note's scores reached the graph and the note;
    stopping the server there cuts the resync after some, not all, of its store writes.
    """

    def __init__(self, text: str, action: Callable[[], None]) -> None:
        super().__init__(logging.INFO)
        self.text = text
        self.action = action
        self.fired = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.fired and self.text in record.getMessage():
            self.fired = True
            self.action()


def test_outage_mid_resync_keeps_the_work_queued_and_completes_after_restart(
    tmp_path: Path, bolt_server: BoltServer, fresh_database: str, reference: Outcome
) -> None:
    env = base_env(tmp_path / "state")
    env.update(
        neo4j_env(
            bolt_server,
            fresh_database,
            ACLARAI_GRAPH__BACKEND="neo4j",
            ACLARAI_GRAPH__NEO4J__MAX_ATTEMPTS="2",
            ACLARAI_GRAPH__NEO4J__TIMEOUT_S="3",
            ACLARAI_PROCESSING__CONCURRENT_NOTES="1",
            # One note per take: a take's notes reach the store together, so the outage
            # lands between two takes.
            ACLARAI_PROCESSING__BATCH_SIZE="1",
        )
    )
    config = load_config(env=env)
    vault = copy_vault(tmp_path / "vault")
    consumer_log = logging.getLogger("aclarai.daemon.loop.consumer")
    hook = _StopOnLog("scores written", bolt_server.stop)
    previous_level = consumer_log.level
    consumer_log.setLevel(logging.INFO)
    consumer_log.addHandler(hook)
    try:
        interrupted = resync(config, vault)
        stopped_during_run = hook.fired and not bolt_server.running
    finally:
        consumer_log.removeHandler(hook)
        consumer_log.setLevel(previous_level)
        bolt_server.start()

    assert stopped_during_run
    assert interrupted.store_error is not None and "neo4j" in interrupted.store_error
    assert 0 < interrupted.drain.files_written < SCORED_NOTES
    assert interrupted.queued > 0
    assert queued(config, vault) == interrupted.queued
    text = format_summary(interrupted)
    assert "graph store unavailable" in text and "still queued" in text
    assert not interrupted.ok

    recovered = resync(config, vault)

    assert recovered.store_error is None and recovered.queued == 0
    assert recovered.drain.files_written == SCORED_NOTES - interrupted.drain.files_written
    assert user_files(vault) == reference.notes
    assert read_graph(config, vault) == reference.graph


def test_unreachable_store_is_one_line_and_a_retry_later_exit(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = base_env(
        tmp_path / "state",
        ACLARAI_GRAPH__NEO4J__URI=f"bolt://127.0.0.1:{port}",
        ACLARAI_GRAPH__NEO4J__MAX_ATTEMPTS="1",
        ACLARAI_GRAPH__NEO4J__TIMEOUT_S="2",
        NEO4J_PASSWORD="unused",
        # The inbox import needs no store; without it the vault must stay as it was.
        ACLARAI_IMPORT__INBOX="null",
    )
    vault = copy_vault(tmp_path / "vault")

    done = run_cli("resync", "--graph", "neo4j", str(vault), env=env)

    assert done.returncode == EX_TEMPFAIL
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "graph store unavailable" in done.stderr
    assert user_files(vault) == user_files(ROOT / "sample_vault")
