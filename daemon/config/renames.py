"""Keys that have a new name: the old one is still read for one release, with a warning."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aclarai.parsers import ConfigError

READ_UNTIL = "0.3"


@dataclass(frozen=True, slots=True)
class Rename:
    old: str
    new: str
    per_thousand: bool = False
    """The old key is in milliseconds, the new one in seconds."""

    def convert(self, value: Any) -> Any:
        if self.per_thousand and isinstance(value, int | float) and not isinstance(value, bool):
            return value / 1000
        return value

    def warning(self, old: str | None = None, new: str | None = None) -> str:
        """The one line telling that ``old`` (default: the dotted key) is now ``new``."""
        unit = ", in seconds" if self.per_thousand else ""
        return (
            f"config: {old or self.old} is now {new or self.new}{unit} "
            f"(the old name is read until {READ_UNTIL})"
        )


def _section(old: str, new: str, keys: tuple[str, ...]) -> tuple[Rename, ...]:
    return tuple(Rename(f"{old}.{key}", f"{new}.{key}") for key in keys)


RENAMES: tuple[Rename, ...] = (
    Rename("processing.workers", "processing.concurrent_notes"),
    Rename("processing.retries.max_attempts", "model.llm.max_attempts"),
    Rename("eval.workers", "eval.processes"),
    Rename("redis.url", "eval_stream.redis_url"),
    Rename("redis.claim_idle_ms", "eval_stream.reclaim_after_s", per_thousand=True),
    Rename("redis.block_ms", "eval_stream.block_s", per_thousand=True),
    *_section(
        "redis",
        "eval_stream",
        ("stream", "group", "results_stream", "dead_letter_stream", "max_deliveries", "batch"),
    ),
    Rename("workers.claim_idle_s", "grading_workers.reclaim_after_s"),
    Rename("workers.notes_at_once", "grading_workers.concurrent_notes"),
    Rename("workers.block_ms", "grading_workers.block_s", per_thousand=True),
    Rename("workers.jobs", "grading_workers.jobs_per_worker"),
    *_section(
        "workers",
        "grading_workers",
        ("redis_url", "prefix", "max_deliveries", "max_backlog", "heartbeat_s"),
    ),
)
_BY_OLD = {r.old: r for r in RENAMES}
_OLD_SECTIONS = {r.old.rsplit(".", 1)[0] for r in RENAMES}
_GONE_SECTIONS = {"redis", "workers", "processing.retries"}
"""Old sections that hold no current key: dropped from a layer once emptied of old keys."""


def renamed(dotted: str) -> Rename | None:
    """The rename of an old dotted key, or None for a current (or unknown) one."""
    return _BY_OLD.get(dotted)


def rename_keys(layer: dict[str, Any], source: str, warnings: list[str]) -> dict[str, Any]:
    """``layer`` (one YAML file) with every old key moved to its new name and value.

    Raises:
        ConfigError: the layer sets a key under both its old and its new name.
    """
    moved: list[tuple[Rename, Any]] = []
    _take_old(layer, (), moved, source)
    for rename, value in moved:
        node = layer
        *parents, leaf = rename.new.split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        if leaf in node:
            raise ConfigError(
                f"{rename.old} and {rename.new} are both set in {source}: keep {rename.new}",
                key=rename.new,
                source=source,
            )
        node[leaf] = rename.convert(value)
        warnings.append(rename.warning())
    return layer


def _take_old(
    node: dict[str, Any], prefix: tuple[str, ...], moved: list[tuple[Rename, Any]], source: str
) -> None:
    for key in list(node):
        dotted = ".".join((*prefix, str(key)))
        rename = _BY_OLD.get(dotted)
        if rename is not None:
            moved.append((rename, node.pop(key)))
        elif dotted in _OLD_SECTIONS and isinstance(node[key], dict):
            _take_old(node[key], (*prefix, str(key)), moved, source)
            if dotted not in _GONE_SECTIONS:
                continue
            if node[key]:
                unknown = f"{dotted}.{next(iter(node[key]))}"
                raise ConfigError(
                    f"unknown config key {unknown!r} in {source}", key=unknown, source=source
                )
            del node[key]
