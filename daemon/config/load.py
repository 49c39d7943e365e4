"""The one configuration object.

Precedence, highest first: explicit overrides (CLI flags) > ``ACLARAI_<SECTION>__<KEY>``
environment variables > the user's YAML file (``--config``, else
``$XDG_CONFIG_HOME/aclarai/config.yaml``) > ``aclarai.config.default.yaml`` shipped with the
package. ``ACLARAI_STATE_DIR`` moves all state elsewhere. Unknown keys are errors naming the key
and where it came from. This is the only module that reads ``os.environ``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from aclarai.parsers import ConfigError

DEFAULT_CONFIG_NAME = "aclarai.config.default.yaml"
ENV_PREFIX = "ACLARAI_"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class VaultSettings(_Section):
    path: str | None = None
    include: tuple[str, ...] = ("**/*.md",)
    exclude: tuple[str, ...] = ()
    max_file_mb: float = 10.0


class StateSettings(_Section):
    dir: str | None = None


class SqliteSettings(_Section):
    path: str | None = None
    """Graph database file; default ``<state dir>/graph.sqlite``."""


class Neo4jSettings(_Section):
    uri: str = "bolt://127.0.0.1:7687"
    user: str = "neo4j"
    password_env: str = "NEO4J_PASSWORD"
    database: str = "neo4j"
    max_attempts: int = Field(5, ge=1)
    timeout_s: float = Field(30.0, gt=0)


class GraphSettings(_Section):
    backend: Literal["sqlite", "neo4j"] = "sqlite"
    sqlite: SqliteSettings = SqliteSettings()
    neo4j: Neo4jSettings = Neo4jSettings()


class LLMSettings(_Section):
    api_base: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int = Field(1024, ge=1)
    timeout_s: float = Field(60.0, gt=0)
    """Seconds a model call may take; a server that reports how fast it writes (llama.cpp) gives
    each call the time to write ``max_tokens`` at the slowest speed seen on top."""
    requests_per_minute: int = Field(600, ge=1)
    max_concurrency: int = Field(4, ge=1)
    mode: Literal["combined", "per_agent"] = "combined"
    lexical_share: float = Field(0.3, ge=0, lt=1)
    """In combined mode, the share of a claim's entailment score taken from the offline scorer,
    the rest from the model's grade; 0: the model alone. The two go wrong on different pairs: with
    a 1.5B model, 0.3 ranks claims better than the model alone on TRUE begin and paws and as well
    on q2 (README, "A small local model")."""
    json_mode: bool = True
    context_tokens: int | None = Field(None, ge=256)
    """The model's context window; ``None``: what the server publishes (llama.cpp's ``/props``)
    or reports in a context-length error, else no limit."""


class ClaimifyModels(_Section):
    default: str = "gpt-4o-mini"
    extraction: str | None = None
    entailment: str | None = None
    coverage: str | None = None
    decontextualization: str | None = None
    verification: str | None = None


class ModelSettings(_Section):
    backend: Literal["offline", "llm"] = "offline"
    llm: LLMSettings = LLMSettings()
    claimify: ClaimifyModels = ClaimifyModels()
    embedding: str | None = None
    """Embedding model on the same endpoint; ``None`` uses the offline embedding."""
    prompts_dir: str | None = None
    """Folder of prompt YAML files overriding the shipped ones by name."""


class WindowSize(_Section):
    p: int = Field(3, ge=0)
    f: int = Field(1, ge=0)


class WindowSettings(_Section):
    claimify: WindowSize = WindowSize()


class RetrySettings(_Section):
    max_attempts: int = Field(3, ge=1)


class ProcessingSettings(_Section):
    retries: RetrySettings = RetrySettings()
    workers: int = Field(8, ge=1)
    batch_size: int = Field(64, ge=1)


class EvalSettings(_Section):
    workers: int = Field(0, ge=0)
    """Evaluation processes: 0 for one per core, 1 to evaluate in the calling process."""


class ThresholdSettings(_Section):
    claim_quality: float = Field(0.70, ge=0, le=1)


class WatchSettings(_Section):
    quiet_period_s: float = Field(3.0, ge=0)
    max_wait_s: float = Field(60.0, gt=0)
    delete_grace_s: float = Field(10.0, ge=0)
    polling: bool = False
    polling_interval_s: float = Field(1.0, gt=0)
    reconcile_cron: str = "*/30 * * * *"


class QueueSettings(_Section):
    max_attempts: int = Field(8, ge=1)
    backoff_base_s: float = Field(1.0, gt=0)
    backoff_max_s: float = Field(300.0, gt=0)


class ToolSpec(_Section):
    name: str
    description: str = ""
    params: dict[str, Any] = {}


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


class ServiceWeights(_Section):
    pre_checks: float = Field(0.3, ge=0)
    judges: float = Field(0.7, ge=0)


class ServicePreChecks(_Section):
    too_short_ratio: float = Field(0.5, ge=0)
    """Answer/query length in characters below this: the length check scores 0.0."""
    too_long_ratio: float = Field(10.0, gt=0)
    """Above this: 0.5."""
    min_words: int = Field(2, ge=0)
    """An answer with fewer words: the format check scores 0.0."""


class ServiceThresholds(_Section):
    pass_above: float = Field(0.8, ge=0, le=1)
    review_above: float = Field(0.5, ge=0, le=1)
    judge_floor: float = Field(0.5, ge=0, le=1)
    """A judge scoring below this caps the verdict at review."""


class ServiceSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(18081, ge=0, le=65535)
    token_env: str | None = None
    """Name of the environment variable holding the bearer token; ``None``: no auth."""
    max_body_bytes: int = Field(1_048_576, ge=1024)
    early_exit_threshold: float = Field(0.2, ge=0, le=1)
    pre_checks: ServicePreChecks = ServicePreChecks()
    judges_file: str | None = None
    """A YAML file listing the answer judges; ``None``: the shipped
    ``agents/answers/judges.yaml``."""
    judge_timeout_s: float = Field(30.0, gt=0)
    weights: ServiceWeights = ServiceWeights()
    thresholds: ServiceThresholds = ServiceThresholds()


class RedisSettings(_Section):
    url: str = "redis://127.0.0.1:6379/0"
    stream: str = "eval-events"
    group: str = "eval-group"
    results_stream: str = "eval-results"
    dead_letter_stream: str = "eval-dead-letter"
    max_deliveries: int = Field(3, ge=1)
    claim_idle_ms: int = Field(60_000, ge=1)
    block_ms: int = Field(2_000, ge=1)
    batch: int = Field(16, ge=1)


class WorkersSettings(_Section):
    """Grading workers over Redis Streams (``aclarai worker``, :mod:`aclarai.daemon.workers`)."""

    redis_url: str | None = None
    """Set: the daemon and ``resync`` hand their grading to workers through this Redis server
    instead of grading in their own process pool. ``None``: Redis is never imported."""
    prefix: str = "aclarai:grading"
    """Start of every key and stream name, so that several setups share one server."""
    max_deliveries: int = Field(3, ge=1)
    """Deliveries of one job before it goes to the dead-letter stream with its error."""
    claim_idle_s: float | None = Field(None, gt=0)
    """A job pending this long on a worker is taken over by another; ``None``: twice
    ``model.llm.timeout_s`` with ``model.backend: llm``, two minutes offline."""
    max_backlog: int = Field(10_000, ge=1)
    """Jobs waiting or in work at most; publishing waits while the stream holds more."""
    notes_at_once: int = Field(32, ge=1)
    """Notes the daemon grades at once while the workers work (each waits on its jobs)."""
    jobs: int = Field(0, ge=0)
    """Jobs a worker runs at once; 0: what its model endpoint serves at once (its slots), one
    offline."""
    heartbeat_s: float = Field(5.0, gt=0)
    block_ms: int = Field(1_000, ge=1)


class DashboardSettings(_Section):
    path: str | None = "aclarai/Dashboard.md"
    """Path of the dashboard note in the vault (relative to it, or absolute inside it);
    ``None``: no dashboard."""
    min_interval_s: float = Field(30.0, ge=0)
    """The daemon rewrites it at most this often (``resync`` always does)."""

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


class ImportSettings(_Section):
    folder: str = "conversations/"
    """Where imported conversations become notes, relative to the vault."""
    inbox: str | None = "aclarai/inbox/"
    """Vault folder whose dropped exports are imported (by resync and the daemon); None: off.

    aclarai's own folder by default, beside the dashboard note: a folder the user's vault already
    has (``Inbox/`` is common) holds notes, and its files must never be taken for exports."""
    archive: str = ".aclarai/imported/"
    """Where an imported inbox file is moved, relative to the vault (a dot folder: no notes)."""
    max_file_mb: float = Field(256.0, gt=0)
    """Largest export file (or zip member) read."""
    max_archive_mb: float = Field(2048.0, gt=0)
    """Largest total uncompressed size of a zip's members."""
    max_archive_members: int = Field(100_000, ge=1)
    max_compression_ratio: float = Field(200.0, gt=1)
    """A zip member that inflates more than this (and past 1 MB) is taken for a zip bomb."""


class AdoptSettings(_Section):
    folders: tuple[str, ...] = ()
    """Vault folders whose ordinary notes resync and the daemon adopt (give block ids) as they
    change; the vault's template folders and the dashboard are never adopted."""
    new_paragraphs: bool = True
    """A paragraph or list item written into an adopted note (one with aclarai blocks),
    wherever it is, gets its id from resync and the daemon; false: only from ``aclarai adopt``
    or ``adopt.folders``."""


class LoggingSettings(_Section):
    level: str = "INFO"
    format: Literal["auto", "text", "json"] = "auto"


class Config(_Section):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    vault: VaultSettings = VaultSettings()
    state: StateSettings = StateSettings()
    graph: GraphSettings = GraphSettings()
    model: ModelSettings = ModelSettings()
    window: WindowSettings = WindowSettings()
    processing: ProcessingSettings = ProcessingSettings()
    eval: EvalSettings = EvalSettings()
    threshold: ThresholdSettings = ThresholdSettings()
    watch: WatchSettings = WatchSettings()
    queue: QueueSettings = QueueSettings()
    tools: ToolsSettings = ToolsSettings()
    service: ServiceSettings = ServiceSettings()
    redis: RedisSettings = RedisSettings()
    workers: WorkersSettings = WorkersSettings()
    # "import" is a Python keyword: the field has another name, the YAML key is "import".
    import_: ImportSettings = Field(ImportSettings(), alias="import")
    adopt: AdoptSettings = AdoptSettings()
    logging: LoggingSettings = LoggingSettings()
    dashboard: DashboardSettings = DashboardSettings()

    _env: Mapping[str, str] = PrivateAttr(default_factory=dict)

    def secret(self, env_name: str | None) -> str | None:
        """The value of an environment variable named in the configuration (passwords, keys)."""
        if not env_name:
            return None
        return self._env.get(env_name)

    def state_dir_for(self, vault: Path) -> Path:
        """Where this vault's state lives: outside the vault, since sync tools corrupt live
        SQLite files. ``state.dir`` wins; else one folder per vault under the XDG state home."""
        if self.state.dir:
            return Path(self.state.dir).expanduser()
        base = self._env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        # realpath, not Path.resolve: Python 3.11 raises RuntimeError on a symlink loop.
        resolved = os.path.realpath(vault.expanduser())
        key = hashlib.sha256(resolved.encode()).hexdigest()[:12]
        return Path(base) / "aclarai" / f"{Path(resolved).name or 'vault'}-{key}"

    def worker_state_dir(self) -> Path:
        """Where a grading worker (``aclarai worker``) keeps its model caches: ``state.dir``, or
        ``worker`` under the XDG state home's ``aclarai``; a worker has no vault."""
        if self.state.dir:
            return Path(self.state.dir).expanduser()
        base = self._env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        return Path(base) / "aclarai" / "worker"

    def config_home(self) -> Path:
        """``$XDG_CONFIG_HOME`` (default ``~/.config``): user config and systemd user units."""
        return user_config_path(self._env).parent.parent

    def systemd_notify(self) -> tuple[str | None, float | None]:
        """The systemd notify socket and watchdog interval (s) when running as a ``Type=notify``
        unit; ``(None, None)`` otherwise. A watchdog meant for another pid is not ours."""
        socket_path = self._env.get("NOTIFY_SOCKET") or None
        usec = self._env.get("WATCHDOG_USEC", "")
        pid = self._env.get("WATCHDOG_PID", "")
        if not usec.isdigit() or (pid.isdigit() and int(pid) != os.getpid()):
            return socket_path, None
        return socket_path, int(usec) / 1e6

    def with_overrides(self, overrides: Mapping[str, Any]) -> Config:
        """A copy with dotted-key overrides (``{"graph.backend": "neo4j"}``) applied."""
        data = self.model_dump(by_alias=True)
        for dotted, value in overrides.items():
            _set_dotted(data, dotted.split("."), value, source="command line")
        return _build(data, self._env, source="command line")


def default_config_path() -> Path:
    return Path(str(resources.files("aclarai.daemon").joinpath(DEFAULT_CONFIG_NAME)))


def user_config_path(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "aclarai" / "config.yaml"


def load_config(
    path: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build the configuration from every layer; raise :class:`ConfigError` naming a bad key."""
    environ = dict(os.environ if env is None else env)
    data = _read_yaml(default_config_path())
    user_path = path if path is not None else user_config_path(environ)
    if path is not None and not path.exists():
        raise ConfigError(f"config file {path} does not exist", source=str(path))
    if user_path.exists():
        layer = _read_yaml(user_path)
        _check_keys(layer, Config, (), str(user_path))
        _deep_merge(data, layer)
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX):
            continue
        if name == "ACLARAI_STATE_DIR":
            _set_dotted(data, ["state", "dir"], raw, source=name)
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        if len(parts) < 2:
            continue
        _set_dotted(data, parts, _parse_env_value(raw), source=name)
    if overrides:
        for dotted, value in overrides.items():
            _set_dotted(data, dotted.split("."), value, source="command line")
    return _build(data, environ, source=str(user_path))


def _build(data: dict[str, Any], env: Mapping[str, str], *, source: str) -> Config:
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"invalid config value for {key}: {first['msg']}", key=key) from exc
    config._env = dict(env)
    return config


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}", source=str(path)) from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {path} must hold a mapping", source=str(path))
    return loaded


def _parse_env_value(raw: str) -> Any:
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw


def _deep_merge(base: dict[str, Any], layer: Mapping[str, Any]) -> None:
    for key, value in layer.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _deep_merge(base[key], value)
        else:
            base[key] = value


def _field_name(model: type[BaseModel], key: str) -> str | None:
    """The field a YAML key names (its own name or its alias), or None for an unknown key."""
    if key in model.model_fields:
        return key
    return next((name for name, f in model.model_fields.items() if f.alias == key), None)


def _section_model(model: type[BaseModel], key: str) -> type[BaseModel] | None:
    name = _field_name(model, key)
    field = model.model_fields.get(name) if name is not None else None
    if field is None:
        return None
    annotation = field.annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _check_keys(
    layer: Mapping[str, Any], model: type[BaseModel], prefix: tuple[str, ...], source: str
) -> None:
    for key, value in layer.items():
        dotted = ".".join((*prefix, str(key)))
        if _field_name(model, str(key)) is None:
            raise ConfigError(
                f"unknown config key {dotted!r} in {source}", key=dotted, source=source
            )
        sub = _section_model(model, key)
        if sub is not None and isinstance(value, Mapping):
            _check_keys(value, sub, (*prefix, str(key)), source)


def _set_dotted(data: dict[str, Any], parts: list[str], value: Any, *, source: str) -> None:
    model: type[BaseModel] | None = Config
    node = data
    for i, key in enumerate(parts):
        dotted = ".".join(parts[: i + 1])
        if model is not None and _field_name(model, key) is None:
            raise ConfigError(
                f"unknown config key {dotted!r} in {source}", key=dotted, source=source
            )
        if i == len(parts) - 1:
            node[key] = value
            return
        model = _section_model(model, key) if model is not None else None
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
