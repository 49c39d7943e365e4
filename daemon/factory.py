"""The one place that maps configuration to concrete backends.

Constructors below this module never read configuration: they get plain arguments.
"""

from __future__ import annotations

from pathlib import Path

from aclarai.agents import ClaimExtractor, Evaluator
from aclarai.daemon.config import Config
from aclarai.daemon.queue import Backoff, DurableQueue
from aclarai.daemon.vault import Vault
from aclarai.graph import GraphStore
from aclarai.parsers import ConfigError


def build_vault(config: Config, root: Path) -> Vault:
    return Vault(
        root,
        include=config.vault.include,
        exclude=config.vault.exclude,
        max_file_bytes=int(config.vault.max_file_mb * 1024 * 1024),
    )


def build_queue(config: Config, state_dir: Path) -> DurableQueue:
    q = config.queue
    return DurableQueue(
        state_dir / "queue.sqlite",
        backoff=Backoff(q.backoff_base_s, q.backoff_max_s, q.max_attempts),
    )


def build_store(config: Config, state_dir: Path) -> GraphStore:
    if config.graph.backend == "neo4j":
        from aclarai.graph.neo4j import Neo4jStore

        n = config.graph.neo4j
        return Neo4jStore(
            n.uri,
            n.user,
            config.secret(n.password_env) or "",
            n.database,
            max_attempts=n.max_attempts,
            timeout_s=n.timeout_s,
        )
    from aclarai.graph.sqlite import SqliteStore

    path = Path(config.graph.sqlite.path) if config.graph.sqlite.path else state_dir / "graph.sqlite"
    return SqliteStore(path)


def build_extractor(config: Config, state_dir: Path) -> ClaimExtractor:
    if config.model.backend == "llm":
        raise ConfigError("model.backend=llm is not available in this build", key="model.backend")
    from aclarai.agents.offline_extractor import OfflineClaimExtractor

    return OfflineClaimExtractor()


def build_evaluator(config: Config, state_dir: Path, *, reevaluate: bool = False) -> Evaluator:
    if config.model.backend == "llm":
        raise ConfigError("model.backend=llm is not available in this build", key="model.backend")
    from aclarai.agents.offline import OfflineEvaluator

    return OfflineEvaluator()
