"""The one place that maps configuration to concrete backends.

Constructors below this module never read configuration: they get plain arguments.
"""

from __future__ import annotations

import glob
import hashlib
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from aclarai.agents import (
    ClaimExtractor,
    Embedder,
    EndpointSettings,
    EvalItem,
    Evaluator,
    HashingEmbedder,
    LLMClaimExtractor,
    LLMClient,
    LLMEvaluator,
    OpenAIEmbedder,
    PromptLibrary,
    ResultCache,
    RoleModels,
    Score,
    UsageCounters,
    Utterance,
    VectorIndex,
    WordLlamaEmbedder,
    build_tool_factory,
)
from aclarai.agents.offline.evaluator import OfflineEvaluator
from aclarai.agents.offline.extractor import OfflineClaimExtractor
from aclarai.agents.pool import (
    EVALUATOR,
    EXTRACTOR,
    PooledEvaluator,
    PooledExtractor,
    WorkerPool,
)
from aclarai.daemon.config import Config, ProcessingSettings
from aclarai.daemon.vault.notes import Vault
from aclarai.daemon.vault.queue import Backoff, DurableQueue
from aclarai.graph import GraphStore

if TYPE_CHECKING:
    from aclarai.daemon.intake.transcripts import LLMTranscriptReader
    from aclarai.daemon.workers.publisher import RemoteGrading

QUEUE_FILE = "queue.sqlite"
SEARCH_FILE = "search.sqlite"
"""With Neo4j: the search index, beside the queue (the embedded store keeps it in its own file)."""
LLM_ENDPOINTS_FILE = "llm-endpoints.json"
"""What each model endpoint accepts (output mode, context size), learned once and kept."""


def build_vault(config: Config, root: Path) -> Vault:
    # The dashboard note is ours, not the user's: never synced, graded or watched.
    # A note in the inbox is a note like any other: the inbox never imports Markdown.
    dashboard = config.dashboard.path
    return Vault(
        root,
        include=config.vault.include,
        exclude=(*config.vault.exclude, *([glob.escape(dashboard)] if dashboard else [])),
        max_file_bytes=int(config.vault.max_file_mb * 1024 * 1024),
    )


def build_queue(config: Config, state_dir: Path) -> DurableQueue:
    q = config.queue
    return DurableQueue(
        state_dir / QUEUE_FILE,
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
            search_path=state_dir / SEARCH_FILE,
        )
    from aclarai.graph.sqlite import SqliteStore

    path = (
        Path(config.graph.sqlite.path) if config.graph.sqlite.path else state_dir / "graph.sqlite"
    )
    return SqliteStore(path)


@dataclass
class Agents:
    """The extractor and evaluator a pipeline uses, and what must be closed with them."""

    extractor: ClaimExtractor
    evaluator: Evaluator
    index: VectorIndex | None = None
    """Utterances for ``vector_search_utterances``; the consumer keeps it current."""
    usage: UsageCounters | None = None
    client: LLMClient | None = None
    prompts: PromptLibrary | None = None
    closers: list[Callable[[], None]] = field(default_factory=list)
    remote: RemoteGrading | None = None
    """With ``grading_workers.redis_url``: the link to the grading workers the agents grade
    through."""

    def settle(self) -> None:
        """A take is through: results the workers sent for it may be acknowledged."""
        if self.remote is not None:
            self.remote.settle()

    def cancel(self) -> None:
        """Shutting down: model calls in flight, or waits for workers, give up at once."""
        if self.client is not None:
            self.client.cancel()
        if self.remote is not None:
            self.remote.cancel()

    def close(self) -> None:
        for close in reversed(self.closers):
            close()


def _llm_parts(config: Config, state_dir: Path) -> tuple[LLMClient, PromptLibrary, RoleModels]:
    llm = config.model.llm
    client = LLMClient(
        EndpointSettings.from_settings(llm, max_attempts=llm.max_attempts),
        api_key=config.secret(llm.api_key_env),
        state_path=state_dir / LLM_ENDPOINTS_FILE,
    )
    prompts_dir = config.model.prompts_dir
    prompts = PromptLibrary(Path(prompts_dir).expanduser() if prompts_dir else None)
    return client, prompts, RoleModels(**config.model.claimify.model_dump())


def build_transcript_reader(config: Config, state_dir: Path) -> LLMTranscriptReader | None:
    """With ``model.backend: llm``, the reader of last resort for ``aclarai import``: a model
    turns a file in an unknown format into turns (close its ``client`` when done)."""
    if config.model.backend != "llm":
        return None
    # Imported here: the export readers are for `aclarai import` only.
    from aclarai.daemon.intake.transcripts import LLMTranscriptReader

    client, prompts, _ = _llm_parts(config, state_dir)
    claimify = config.model.claimify
    return LLMTranscriptReader(client, prompts, claimify.extraction or claimify.default)


def eval_processes(config: Config) -> int:
    """Evaluation processes: ``eval.processes``, where 0 means one per core."""
    return config.eval.processes or os.cpu_count() or 1


def grader_of(agents: Agents) -> str:
    """The identity of what grades with these agents: a job asks for it, a worker serves it."""
    from aclarai.daemon.workers.wire import grader_identity

    return grader_identity(agents.extractor, agents.evaluator)


def consumer_processing(config: Config) -> ProcessingSettings:
    """The consumer's settings: grading through workers, its threads only wait, so it grades
    ``grading_workers.concurrent_notes`` notes at once to keep every worker busy."""
    processing = config.processing
    if config.grading_workers.redis_url is None:
        return processing
    notes = max(processing.concurrent_notes, config.grading_workers.concurrent_notes)
    return processing.model_copy(update={"concurrent_notes": notes})


def reclaim_after_s(config: Config) -> float:
    """How long a job waits on a silent worker before another takes it over."""
    if config.grading_workers.reclaim_after_s is not None:
        return config.grading_workers.reclaim_after_s
    return 2 * config.model.llm.timeout_s if config.model.backend == "llm" else 120.0


def vault_id(state_dir: Path) -> str:
    """Names the vault's results stream: one per state folder on one host."""
    where = f"{socket.gethostname()}:{os.path.realpath(state_dir)}"
    return hashlib.sha256(where.encode()).hexdigest()[:16]


def build_agents(
    config: Config,
    state_dir: Path,
    store: GraphStore | None = None,
    *,
    reevaluate: bool = False,
    remote: RemoteGrading | None = None,
) -> Agents:
    """Extractor and evaluator for ``model.backend``; the LLM ones share one client and cache.

    ``reevaluate`` bypasses the evaluation cache only: extraction of unchanged text stays free.
    With ``grading_workers.redis_url`` they grade through the workers (sharing ``remote`` when
    given).
    """
    if config.grading_workers.redis_url is not None:
        return _remote_agents(config, state_dir, store, reevaluate=reevaluate, remote=remote)
    return build_local_agents(config, state_dir, store, reevaluate=reevaluate)


def _remote_agents(
    config: Config,
    state_dir: Path,
    store: GraphStore | None,
    *,
    reevaluate: bool,
    remote: RemoteGrading | None,
) -> Agents:
    from aclarai.agents.llm.per_agent import DECONTEXTUALIZATION_ROLE
    from aclarai.agents.tools import VECTOR_SEARCH
    from aclarai.daemon.redis_link import connect
    from aclarai.daemon.workers.publisher import RemoteEvaluator, RemoteExtractor, RemoteGrading

    settings = config.grading_workers
    assert settings.redis_url is not None
    # Built for their identity and, in per-agent mode, the index of utterances whose nearest
    # the jobs carry: nothing here calls a model.
    local = build_local_agents(config, state_dir, store, reevaluate=False)
    grader, extractor, model_id = grader_of(local), local.extractor, local.evaluator.model_id
    search = None
    closers: list[Callable[[], None]] = [local.close]
    if local.index is not None:
        tools = build_tool_factory(config.tools.agent_tool_mappings, utterances=local.index)
        search = tools.tool(DECONTEXTUALIZATION_ROLE, VECTOR_SEARCH)
    if remote is None:
        client = connect(settings.redis_url, block_s=settings.block_s)
        remote = RemoteGrading(client, settings, grader=grader, vault_id=vault_id(state_dir))
        closers += [client.close, remote.close]
    evaluator = RemoteEvaluator(remote, model_id=model_id, fresh=reevaluate, search=search)
    return Agents(
        RemoteExtractor(remote, name=extractor.name, version=extractor.version, fresh=reevaluate),
        evaluator,
        local.index,
        closers=closers,
        remote=remote,
    )


def search_embedder_name(config: Config) -> str | None:
    """The name of the vectors :func:`build_search_embedder` makes, without loading it."""
    if not config.search.vectors:
        return None
    if config.model.backend == "llm" and config.model.embedding:
        return OpenAIEmbedder.name_for(config.model.embedding)
    return WordLlamaEmbedder.name


def build_search_embedder(
    config: Config, state_dir: Path
) -> tuple[Embedder | None, list[Callable[[], None]]]:
    """The embedder of search's vectors (``search.vectors``), and what closes it: the
    endpoint's ``model.embedding`` where one is set, else WordLlama from its wheel."""
    if not config.search.vectors:
        return None, []
    if config.model.backend == "llm" and config.model.embedding:
        client, _, _ = _llm_parts(config, state_dir)
        cache = ResultCache(state_dir / "llm-cache.sqlite")
        return OpenAIEmbedder(client, config.model.embedding, cache=cache), [
            client.close,
            cache.close,
        ]
    return WordLlamaEmbedder(), []


def build_local_agents(
    config: Config,
    state_dir: Path,
    store: GraphStore | None,
    *,
    reevaluate: bool,
) -> Agents:
    """The agents that grade in this process, ``grading_workers.redis_url`` or not (a worker's)."""
    if config.model.backend == "offline":
        # One set of worker processes extracts and scores: both are pure Python.
        pool = WorkerPool(
            {EVALUATOR: OfflineEvaluator, EXTRACTOR: OfflineClaimExtractor}, eval_processes(config)
        )
        evaluator = PooledEvaluator(OfflineEvaluator, pool=pool)
        extractor = PooledExtractor(OfflineClaimExtractor, pool)
        return Agents(extractor, evaluator, closers=[extractor.close, evaluator.close, pool.close])
    client, prompts, models = _llm_parts(config, state_dir)
    cache_path = state_dir / "llm-cache.sqlite"
    extract_cache = ResultCache(cache_path)
    eval_cache = ResultCache(cache_path, bypass=reevaluate)
    embedder: Embedder = (
        OpenAIEmbedder(client, config.model.embedding, cache=extract_cache)
        if config.model.embedding
        else HashingEmbedder()
    )
    index: VectorIndex | None = None
    tools = None
    # Only the per-agent decontextualization agent searches utterances: combined mode grades
    # decontextualization lexically, and indexing the vault for it would cost embeddings.
    if config.model.llm.mode == "per_agent":
        index = VectorIndex(embedder)
        if store is not None:
            index.upsert(Utterance(b.id, b.text) for b in store.live_blocks())
        tools = build_tool_factory(config.tools.agent_tool_mappings, utterances=index)
    extractor = LLMClaimExtractor(
        client, model=models.for_role("extraction"), prompts=prompts, cache=extract_cache
    )
    evaluator = LLMEvaluator(
        client,
        models=models,
        prompts=prompts,
        cache=eval_cache,
        mode=config.model.llm.mode,
        tools=tools,
        lexical_share=config.model.llm.lexical_share,
    )
    closers = [client.close, extract_cache.close, eval_cache.close, extractor.close]
    return Agents(
        extractor, evaluator, index, client.usage, client, prompts, [*closers, evaluator.close]
    )


def build_evaluator(config: Config, state_dir: Path, *, reevaluate: bool = False) -> Evaluator:
    """An evaluator alone (``aclarai evaluate``, benchmarks); closing it closes its parts."""
    agents = build_agents(config, state_dir, reevaluate=reevaluate)
    agents.closers.remove(agents.evaluator.close)
    return _OwningEvaluator(agents)


class _OwningEvaluator(Evaluator):
    """Delegates to the bundle's evaluator and closes the whole bundle with it."""

    def __init__(self, agents: Agents) -> None:
        self._agents = agents
        self.name = agents.evaluator.name
        self.version = agents.evaluator.version
        self.usage = agents.usage

    @property
    def model_id(self) -> str:
        return self._agents.evaluator.model_id

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        return self._agents.evaluator.evaluate_batch(items)

    def close(self) -> None:
        self._agents.evaluator.close()
        self._agents.close()
