"""The one configuration object and the loader of its layers.

Precedence, highest first: explicit overrides (CLI flags) > ``ACLARAI_<SECTION>__<KEY>``
environment variables > the user's YAML file (``--config``, else
``$XDG_CONFIG_HOME/aclarai/config.yaml``) > ``aclarai.config.default.yaml`` shipped with the
package. ``ACLARAI_STATE_DIR`` moves all state elsewhere. Unknown keys are errors naming the key
and where it came from; so are values the models refuse, and old key names
(:mod:`.renames`) are read with one warning line each. This is the only module that reads
``os.environ``.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from aclarai.daemon.config.renames import rename_keys, renamed
from aclarai.daemon.config.sections import (
    CONTRADICTION,
    AdoptSettings,
    DashboardSettings,
    EvalSettings,
    EvalStreamSettings,
    GradingWorkersSettings,
    GraphSettings,
    ImportSettings,
    LoggingSettings,
    ModelSettings,
    ProcessingSettings,
    QueueSettings,
    SearchSettings,
    ServiceSettings,
    StateSettings,
    ThresholdSettings,
    ToolsSettings,
    VaultSettings,
    WatchSettings,
    WindowSettings,
)
from aclarai.parsers import ConfigError

DEFAULT_CONFIG_NAME = "aclarai.config.default.yaml"
ENV_PREFIX = "ACLARAI_"
COMMAND_LINE = "the command line"
DEFAULTS = "the shipped defaults"

log = logging.getLogger(__name__)


class Config(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, use_attribute_docstrings=True
    )

    vault: VaultSettings = VaultSettings()
    """Which vault, and which of its files are notes."""
    state: StateSettings = StateSettings()
    """Where aclarai keeps a vault's state: outside the vault, since sync tools corrupt live
    SQLite files."""
    graph: GraphSettings = GraphSettings()
    """The store of the knowledge graph."""
    model: ModelSettings = ModelSettings()
    """What extracts and grades the claims: the offline models, or any OpenAI-compatible
    endpoint."""
    window: WindowSettings = WindowSettings()
    """How many neighbouring blocks go with a block as its context."""
    processing: ProcessingSettings = ProcessingSettings()
    """How the daemon and ``resync`` work through the queue of changed blocks."""
    eval: EvalSettings = EvalSettings()
    """The offline evaluator's processes."""
    threshold: ThresholdSettings = ThresholdSettings()
    """What counts as a weak claim."""
    watch: WatchSettings = WatchSettings()
    """How the daemon follows the vault (``aclarai watch``)."""
    queue: QueueSettings = QueueSettings()
    """Retries of a block whose grading failed."""
    tools: ToolsSettings = ToolsSettings()
    """The tools the LLM agents may call."""
    service: ServiceSettings = ServiceSettings()
    """The evaluation service: ``aclarai serve`` (HTTP), ``evaluate``, ``consume`` and ``mcp``
    grade answers with these."""
    eval_stream: EvalStreamSettings = EvalStreamSettings()
    """The Redis Stream that ``aclarai consume`` evaluates events from."""
    grading_workers: GradingWorkersSettings = GradingWorkersSettings()
    """Grading workers (``aclarai worker``) over Redis Streams, for a vault graded on several
    machines."""
    # "import" is a Python keyword: the field has another name, the YAML key is "import".
    import_: ImportSettings = Field(ImportSettings(), alias="import")
    """``aclarai import`` and the inbox of chat exports."""
    adopt: AdoptSettings = AdoptSettings()
    """Ordinary notes given block ids as they change."""
    logging: LoggingSettings = LoggingSettings()
    """What the commands log, on standard error."""
    dashboard: DashboardSettings = DashboardSettings()
    """The dashboard note in the vault."""
    search: SearchSettings = SearchSettings()
    """``aclarai search`` and ``aclarai check``: the index of the vault's blocks."""

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
        # realpath, not Path.resolve: Python 3.11 raises RuntimeError on a symlink loop.
        resolved = os.path.realpath(vault.expanduser())
        key = hashlib.sha256(resolved.encode()).hexdigest()[:12]
        return self._state_home() / f"{Path(resolved).name or 'vault'}-{key}"

    def worker_state_dir(self) -> Path:
        """Where a grading worker (``aclarai worker``) keeps its model caches: ``state.dir``, or
        ``worker`` under the XDG state home's ``aclarai``; a worker has no vault."""
        if self.state.dir:
            return Path(self.state.dir).expanduser()
        return self._state_home() / "worker"

    def _state_home(self) -> Path:
        """``aclarai`` under ``$XDG_STATE_HOME`` (default ``~/.local/state``)."""
        base = self._env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        return Path(base) / "aclarai"

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
            _set_dotted(data, dotted.split("."), value, source=COMMAND_LINE)
        return _build(data, self._env, {dotted: COMMAND_LINE for dotted in overrides})


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
    """Build the configuration from every layer.

    Raises:
        ConfigError: a key is unknown, a value invalid or two keys contradict each other; the
            message is one line naming the dotted key and the file or variable that set it.
    """
    environ = dict(os.environ if env is None else env)
    data = _read_yaml(default_config_path())
    origins: dict[str, str] = {}
    warnings: list[str] = []
    user_path = path if path is not None else user_config_path(environ)
    if path is not None and not path.exists():
        raise ConfigError(f"config file {path} does not exist", source=str(path))
    try:
        if user_path.exists():
            layer = rename_keys(_read_yaml(user_path), str(user_path), warnings)
            _check_keys(layer, Config, (), str(user_path))
            _deep_merge(data, layer, (), origins, str(user_path))
        for dotted, (value, name) in _env_layer(environ, warnings).items():
            _set_dotted(data, dotted.split("."), value, source=name)
            origins[dotted] = name
    finally:
        for line in warnings:
            log.warning("%s", line)
    for dotted, value in (overrides or {}).items():
        _set_dotted(data, dotted.split("."), value, source=COMMAND_LINE)
        origins[dotted] = COMMAND_LINE
    return _build(data, environ, origins)


def _env_layer(environ: Mapping[str, str], warnings: list[str]) -> dict[str, tuple[Any, str]]:
    """The ``ACLARAI_*`` variables as dotted key to (value, variable), old names renamed.

    Raises:
        ConfigError: one key is set by its old and its new variable.
    """
    found: dict[str, tuple[Any, str]] = {}
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX):
            continue
        if name == "ACLARAI_STATE_DIR":
            found["state.dir"] = (raw, name)
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        if len(parts) < 2:
            continue
        value, dotted = _parse_env_value(raw), ".".join(parts)
        rename = renamed(dotted)
        if rename is not None:
            new_name = env_name(rename.new)
            if new_name in environ:
                raise ConfigError(
                    f"{name} and {new_name} are both set: keep {new_name}",
                    key=rename.new,
                    source=name,
                )
            warnings.append(rename.warning(name, new_name))
            value, dotted = rename.convert(value), rename.new
        found[dotted] = (value, name)
    return found


def env_name(dotted: str) -> str:
    """The environment variable that sets a dotted key."""
    return ENV_PREFIX + dotted.upper().replace(".", "__")


def _build(data: dict[str, Any], env: Mapping[str, str], origins: Mapping[str, str]) -> Config:
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc.errors()[0], data, origins) from exc
    config._env = dict(env)
    return config


def _config_error(error: Any, data: dict[str, Any], origins: Mapping[str, str]) -> ConfigError:
    """One line naming the dotted key (both, for a contradiction) and where each was set."""
    section = ".".join(str(p) for p in error["loc"])
    if error["type"] == CONTRADICTION:
        ctx = error["ctx"]
        keys = {slot: f"{section}.{ctx[slot]}" for slot in ("first", "second")}
        named = {
            slot: f"{key} ({_value_at(data, key)!r}, from {_origin(key, origins)})"
            for slot, key in keys.items()
        }
        return ConfigError(
            f"invalid config: {ctx['template'].format(**named)}",
            key=keys["first"],
            source=_origin(keys["first"], origins),
        )
    message = str(error["msg"]).removeprefix("Value error, ")
    source = _origin(section, origins)
    return ConfigError(
        f"invalid config value for {section} (from {source}): {message}", key=section, source=source
    )


def _origin(dotted: str, origins: Mapping[str, str]) -> str:
    """Where the value of ``dotted`` was set: by it, by a section holding it, or by a key in it."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        found = origins.get(".".join(parts[:end]))
        if found is not None:
            return found
    inside = [where for key, where in origins.items() if key.startswith(f"{dotted}.")]
    return inside[0] if inside else DEFAULTS


def _value_at(data: Mapping[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


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


def _deep_merge(
    base: dict[str, Any],
    layer: Mapping[str, Any],
    prefix: tuple[str, ...],
    origins: dict[str, str],
    source: str,
) -> None:
    for key, value in layer.items():
        dotted = (*prefix, str(key))
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _deep_merge(base[key], value, dotted, origins, source)
        else:
            base[key] = value
            origins[".".join(dotted)] = source


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
