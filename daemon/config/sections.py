"""The sections of the configuration: every key with its type, default and description.

The attribute docstrings are the keys' documentation: the shipped defaults file and
``docs/configuration.md`` are generated from them (``make config-docs``).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DEFAULT_RECONCILE_CRON = "*/30 * * * *"
CONTRADICTION = "contradiction"


def contradiction(message: str, first: str, second: str) -> PydanticCustomError:
    """Two keys of one section that cannot hold together: ``message`` names them ``{first}`` and
    ``{second}``, relative to the section; the loader names them in full."""
    return PydanticCustomError(
        CONTRADICTION, message, {"first": first, "second": second, "template": message}
    )


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class VaultSettings(_Section):
    path: str | None = None
    """The vault of a command given none; ``null``: a command needs its VAULT argument."""
    include: tuple[str, ...] = ("**/*.md",)
    """Globs, relative to the vault, of the files that are notes."""
    exclude: tuple[str, ...] = ()
    """Globs, relative to the vault, of files that are never notes even when included."""
    max_file_mb: float = 10.0
    """Larger notes (MB) are skipped with a log line."""


class StateSettings(_Section):
    dir: str | None = None
    """Folder of the graph, queue and caches; ``null``:
    ``$XDG_STATE_HOME/aclarai/<vault>-<hash>``, outside the vault. ``ACLARAI_STATE_DIR`` sets it
    too."""


class SqliteSettings(_Section):
    path: str | None = None
    """Graph database file; ``null``: ``<state dir>/graph.sqlite``."""


class Neo4jSettings(_Section):
    uri: str = "bolt://127.0.0.1:7687"
    """The server: ``bolt://``, ``neo4j://`` or ``neo4j+s://``."""
    user: str = "neo4j"
    """User name to log in with."""
    password_env: str = "NEO4J_PASSWORD"
    """Name of the environment variable holding the password."""
    database: str = "neo4j"
    """Database on the server."""
    max_attempts: int = Field(5, ge=1)
    """Tries of one transaction when the server is unavailable or the session expired."""
    timeout_s: float = Field(30.0, gt=0)
    """Seconds to connect and to run one transaction."""


class GraphSettings(_Section):
    backend: Literal["sqlite", "neo4j"] = "sqlite"
    """``sqlite``: an embedded file in the state folder; ``neo4j``: a Neo4j server."""
    sqlite: SqliteSettings = SqliteSettings()
    """The embedded store."""
    neo4j: Neo4jSettings = Neo4jSettings()
    """The Neo4j server."""


class LLMSettings(_Section):
    api_base: str | None = None
    """Any OpenAI-compatible endpoint, e.g. ``http://127.0.0.1:11434/v1``; ``null``: OpenAI's."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the API key."""
    temperature: float = 0.0
    """Sampling temperature of every call."""
    max_tokens: int = Field(1024, ge=1)
    """Most tokens a reply may have."""
    timeout_s: float = Field(60.0, gt=0)
    """Seconds a model call may take; a server that reports how fast it writes (llama.cpp) gives
    each call the time to write ``max_tokens`` at the slowest speed seen on top."""
    requests_per_minute: int = Field(600, ge=1)
    """Calls started per minute at most, across the process."""
    max_concurrency: int = Field(4, ge=1)
    """Calls in flight at once at most."""
    max_attempts: int = Field(3, ge=1)
    """Tries of one call (the first included) when the endpoint times out, limits the rate or
    fails; then the claim is retried later from the queue."""
    mode: Literal["combined", "per_agent"] = "combined"
    """``combined``: one call scores every claim of a block; ``per_agent``: one call per claim and
    score."""
    lexical_share: float = Field(0.3, ge=0, lt=1)
    """In combined mode, the share of a claim's entailment score taken from the offline scorer,
    the rest from the model's grade; 0: the model alone."""
    json_mode: bool = True
    """Send the reply's JSON schema (``response_format``), stepping down if the server refuses
    it; false: the schema goes in the prompt."""
    context_tokens: int | None = Field(None, ge=256)
    """The model's context window in tokens; ``null``: what the server publishes (llama.cpp's
    ``/props``) or reports in a context-length error, else no limit."""


class ClaimifyModels(_Section):
    default: str = "gpt-4o-mini"
    """The model of every role left ``null`` below."""
    extraction: str | None = None
    """Model that splits a block into claims; ``null``: ``default``."""
    entailment: str | None = None
    """Model that scores whether the source entails a claim; ``null``: ``default``."""
    coverage: str | None = None
    """Model that scores how much of the source a claim covers; ``null``: ``default``."""
    decontextualization: str | None = None
    """Model that scores whether a claim stands on its own; ``null``: ``default``."""
    verification: str | None = None
    """Model of the verification agent (per-agent mode); ``null``: ``default``."""


class ModelSettings(_Section):
    backend: Literal["offline", "llm"] = "offline"
    """``offline``: the shipped models, no network; ``llm``: the endpoint of ``model.llm``."""
    llm: LLMSettings = LLMSettings()
    """The OpenAI-compatible endpoint of ``backend: llm``."""
    claimify: ClaimifyModels = ClaimifyModels()
    """The model of each role with ``backend: llm``."""
    embedding: str | None = None
    """Embedding model on the same endpoint; ``null``: the offline embedding."""
    prompts_dir: str | None = None
    """Folder of prompt YAML files overriding the shipped ones by name; ``null``: the shipped
    prompts."""


class WindowSize(_Section):
    p: int = Field(3, ge=0)
    """Blocks before a block given to the model as its context."""
    f: int = Field(1, ge=0)
    """Blocks after it."""


class WindowSettings(_Section):
    claimify: WindowSize = WindowSize()
    """The context of claim extraction and grading."""


class ProcessingSettings(_Section):
    concurrent_notes: int = Field(8, ge=1)
    """Notes the daemon and ``resync`` grade at once (model calls still obey
    ``model.llm.max_concurrency``)."""
    batch_size: int = Field(64, ge=1)
    """Queue entries taken per note graded at once, each time the queue is read."""


class EvalSettings(_Section):
    processes: int = Field(0, ge=0)
    """Processes of the offline evaluator: 0 for one per core, 1 to evaluate in the calling
    process."""


class ThresholdSettings(_Section):
    claim_quality: float = Field(0.70, ge=0, le=1)
    """Claims whose quality is below this are the ones to look at (dashboard, ``aclarai claims``,
    ``validate``)."""


class WatchSettings(_Section):
    quiet_period_s: float = Field(3.0, ge=0)
    """A file is processed only after this many seconds without a change."""
    max_wait_s: float = Field(60.0, gt=0)
    """A note still changing after this many seconds is logged; it is synced once quiet."""
    delete_grace_s: float = Field(10.0, ge=0)
    """Seconds after which a delete is final; a create within them is a move."""
    polling: bool = False
    """Poll the vault instead of file-system events: true for network drives where inotify does
    not work."""
    polling_interval_s: float = Field(1.0, gt=0)
    """Seconds between two polls with ``polling: true``."""
    reconcile_cron: str = DEFAULT_RECONCILE_CRON
    """When the daemon compares the whole vault with the graph, as a 5-field crontab line
    (minute hour day month weekday)."""

    @field_validator("reconcile_cron")
    @classmethod
    def _a_crontab(cls, value: str) -> str:
        # The shipped default is known good: apscheduler (60 ms to import) is left to the daemon.
        if value == DEFAULT_RECONCILE_CRON:
            return value
        from apscheduler.triggers.cron import CronTrigger

        try:
            CronTrigger.from_crontab(value)
        except ValueError as exc:
            raise ValueError(f"{value!r} is not a 5-field crontab line: {exc}") from exc
        return value


class QueueSettings(_Section):
    max_attempts: int = Field(8, ge=1)
    """Tries of one block; then the entry is a dead letter (see ``aclarai status``)."""
    backoff_base_s: float = Field(1.0, gt=0)
    """Seconds before the first retry; each further retry waits twice as long."""
    backoff_max_s: float = Field(300.0, gt=0)
    """Longest wait between two tries, in seconds."""

    @model_validator(mode="after")
    def _base_within_max(self) -> Self:
        if self.backoff_base_s > self.backoff_max_s:
            raise contradiction(
                "{first} must not exceed {second}", "backoff_base_s", "backoff_max_s"
            )
        return self


class ToolSpec(_Section):
    name: str
    """The tool's name (``vector_search_utterances``)."""
    description: str = ""
    """What the model is told the tool does."""
    params: dict[str, Any] = {}
    """The tool's fixed parameters."""


def _default_tool_mappings() -> dict[str, tuple[ToolSpec, ...]]:
    search = ToolSpec(
        name="vector_search_utterances",
        description="Find the utterances of the vault most similar to a text.",
        params={"collection": "utterances", "top_k": 5},
    )
    return {
        "entailment_agent": (),
        "coverage_agent": (),
        "decontextualization_agent": (search,),
        "claimify_agent": (),
    }


class ToolsSettings(_Section):
    agent_tool_mappings: dict[str, tuple[ToolSpec, ...]] = Field(
        default_factory=_default_tool_mappings
    )
    """The tools each agent may call (``name``, ``description``, ``params``), by agent."""


class ServiceWeights(_Section):
    pre_checks: float = Field(0.3, ge=0)
    """Weight of the pre-checks' mean in an answer's confidence."""
    judges: float = Field(0.7, ge=0)
    """Weight of the judges' mean; the two need not sum to 1 (they are renormalised)."""

    @model_validator(mode="after")
    def _one_counts(self) -> Self:
        if self.pre_checks + self.judges <= 0:
            raise contradiction("{first} and {second} must not both be 0", "pre_checks", "judges")
        return self


class ServicePreChecks(_Section):
    too_short_ratio: float = Field(0.5, ge=0)
    """Answer/query length in characters below this: the length check scores 0.0."""
    too_long_ratio: float = Field(10.0, gt=0)
    """Above this: the length check scores 0.5."""
    min_words: int = Field(2, ge=0)
    """An answer with fewer words: the format check scores 0.0."""

    @model_validator(mode="after")
    def _short_below_long(self) -> Self:
        if self.too_short_ratio > self.too_long_ratio:
            raise contradiction(
                "{first} must not exceed {second}", "too_short_ratio", "too_long_ratio"
            )
        return self


class ServiceThresholds(_Section):
    pass_above: float = Field(0.8, ge=0, le=1)
    """An answer whose confidence is above this passes."""
    review_above: float = Field(0.5, ge=0, le=1)
    """Above this (and not above ``pass_above``): review; else fail."""
    judge_floor: float = Field(0.5, ge=0, le=1)
    """A judge scoring below this caps the verdict at review; 0: no cap."""

    @model_validator(mode="after")
    def _review_below_pass(self) -> Self:
        if self.review_above >= self.pass_above:
            raise contradiction("{first} must be below {second}", "review_above", "pass_above")
        return self


class ServiceSettings(_Section):
    host: str = "127.0.0.1"
    """Address ``aclarai serve`` binds."""
    port: int = Field(18081, ge=0, le=65535)
    """Port ``aclarai serve`` listens on."""
    token_env: str | None = None
    """Name of the environment variable holding the bearer token; ``null``: no auth (loopback
    only, unless ``--insecure-no-token``)."""
    max_body_bytes: int = Field(1_048_576, ge=1024)
    """Largest request body; a larger one gets 413."""
    early_exit_threshold: float = Field(0.2, ge=0, le=1)
    """Fail without asking a judge: a non-answer, or a pre-check mean below this, unless the
    context supports the answer."""
    pre_checks: ServicePreChecks = ServicePreChecks()
    """The cheap checks of an answer before any judge."""
    judges_file: str | None = None
    """A YAML file listing the answer judges; ``null``: the shipped
    ``agents/answers/judges.yaml``."""
    judge_timeout_s: float = Field(30.0, gt=0)
    """Seconds one judge may take; an LLM judge's calls end then."""
    weights: ServiceWeights = ServiceWeights()
    """How an answer's confidence mixes pre-checks and judges."""
    thresholds: ServiceThresholds = ServiceThresholds()
    """Confidence to verdict."""


class EvalStreamSettings(_Section):
    """The Redis Stream that ``aclarai consume`` evaluates events from."""

    redis_url: str = "redis://127.0.0.1:6379/0"
    """The Redis server."""
    stream: str = "eval-events"
    """Stream the events are read from."""
    group: str = "eval-group"
    """Consumer group of the consumers."""
    results_stream: str = "eval-results"
    """Stream the evaluations are written to."""
    dead_letter_stream: str = "eval-dead-letter"
    """Stream of the events that failed ``max_deliveries`` times, with their error."""
    max_deliveries: int = Field(3, ge=1)
    """Deliveries of one event before it goes to the dead-letter stream."""
    reclaim_after_s: float = Field(60.0, gt=0)
    """An event pending this many seconds on a consumer (it died) is taken over by another."""
    block_s: float = Field(2.0, ge=0.001)
    """Seconds one read waits for new events."""
    batch: int = Field(16, ge=1)
    """Events read at once."""


class GradingWorkersSettings(_Section):
    """Grading workers (``aclarai worker``) over Redis Streams, for a vault graded on several
    machines."""

    redis_url: str | None = None
    """Set (or ``--redis URL``): the daemon and ``resync`` hand their grading to workers through
    this Redis server instead of grading in their own process pool. ``null``: Redis is never
    imported."""
    prefix: str = "aclarai:grading"
    """Start of every key and stream name, so that several setups share one server."""
    max_deliveries: int = Field(3, ge=1)
    """Deliveries of one job before it goes to the dead-letter stream (``<prefix>:dead``) with
    its error."""
    reclaim_after_s: float | None = Field(None, gt=0)
    """A job pending this many seconds on a worker is taken over by another; ``null``: twice
    ``model.llm.timeout_s`` with ``model.backend: llm``, two minutes offline."""
    max_backlog: int = Field(10_000, ge=1)
    """Jobs waiting or in work at most; publishing waits while the stream holds more."""
    concurrent_notes: int = Field(32, ge=1)
    """Notes the daemon grades at once while the workers work (each waits on its jobs)."""
    jobs_per_worker: int = Field(0, ge=0)
    """Jobs a worker runs at once; 0: what its model endpoint serves at once (its slots), one
    offline."""
    heartbeat_s: float = Field(5.0, gt=0)
    """Seconds between two heartbeats of a worker (``aclarai status`` lists the live ones)."""
    block_s: float = Field(1.0, ge=0.001)
    """Seconds one read of the streams waits for new entries."""


class DashboardSettings(_Section):
    path: str | None = "aclarai/Dashboard.md"
    """Path of the dashboard note in the vault (relative to it, or absolute inside it);
    ``null``: no dashboard."""
    min_interval_s: float = Field(30.0, ge=0)
    """The daemon rewrites it at most this often after a drain, in seconds (``resync`` always
    does)."""

    @field_validator("path")
    @classmethod
    def _a_note(cls, value: str | None) -> str | None:
        if value is None:
            return None
        # Whether it lies inside the vault is checked against the vault each command is given
        # (aclarai.daemon.vault.bounds).
        rel = PurePosixPath(value)
        if rel.suffix != ".md" or not rel.stem:
            raise ValueError("must be the path of a .md note inside the vault")
        return rel.as_posix()


class SearchSettings(_Section):
    vectors: bool = True
    """Search by meaning as well as by words: each block gets a vector, from the endpoint's
    ``model.embedding`` where one is set, else from WordLlama (its weights ship in its wheel:
    nothing is downloaded). False: words only."""
    limit: int = Field(10, ge=1, le=100)
    """Hits ``aclarai search``, the API and MCP give when the caller does not say."""
    check_blocks: int = Field(5, ge=1, le=20)
    """Blocks ``aclarai check`` gives the judges as the context of an answer."""
    relevant_above: float = Field(0.3, ge=0, le=1)
    """A block's relevance to a question (0..1) under which ``check`` does not cite it; with none
    left, it says the vault has nothing on the question instead of judging the answer."""


class ImportSettings(_Section):
    folder: str = "conversations/"
    """Where ``aclarai import`` writes one note per conversation, relative to the vault."""
    inbox: str | None = "aclarai/inbox/"
    """Vault folder whose dropped exports are imported (by ``resync`` and the daemon); ``null``:
    off.

    aclarai's own folder by default, beside the dashboard note and visible in Obsidian (a dot
    folder is not): a folder the user's vault already has (``Inbox/`` is common) holds notes, and
    its files must never be taken for exports. A ``.md`` file in any inbox stays a note."""
    archive: str = ".aclarai/imported/"
    """Where an imported inbox file is moved (never deleted), relative to the vault; a dot folder
    holds no notes."""
    max_file_mb: float = Field(256.0, gt=0)
    """Largest export file (or zip member) read, in MB."""
    max_archive_mb: float = Field(2048.0, gt=0)
    """Largest total uncompressed size of a zip's members, in MB."""
    max_archive_members: int = Field(100_000, ge=1)
    """Most members a zip may have."""
    max_compression_ratio: float = Field(200.0, gt=1)
    """A zip member that inflates more than this (and past 1 MB) is taken for a zip bomb."""


class AdoptSettings(_Section):
    folders: tuple[str, ...] = ()
    """Vault folders whose ordinary notes ``resync`` and the daemon adopt (give block ids) as
    they change; the vault's template folders and the dashboard are never adopted."""
    new_paragraphs: bool = True
    """A paragraph or list item written into an adopted note (one with aclarai blocks),
    wherever it is, gets its id from ``resync`` and the daemon; false: only from
    ``aclarai adopt`` or ``adopt.folders``."""


class LoggingSettings(_Section):
    level: str = "INFO"
    """``DEBUG``, ``INFO``, ``WARNING``, ``ERROR`` or ``CRITICAL`` (any case); ``--log-level``
    sets it too."""
    format: Literal["auto", "text", "json"] = "auto"
    """``text``: one human-readable line per entry; ``json``: one JSON object per line (also
    ``--log-json``); ``auto``: text, as ``text``."""

    @field_validator("level")
    @classmethod
    def _a_level(cls, value: str) -> str:
        if value.upper() not in LOG_LEVELS:
            raise ValueError(f"{value!r} is not one of {', '.join(LOG_LEVELS)}")
        return value.upper()
