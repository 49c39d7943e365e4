"""The files written from the configuration models: the shipped defaults
(``aclarai.config.default.yaml``) and the reference page (``docs/configuration.md``).

``make config-docs`` (``tools/config_docs.py``) writes both; a test fails when either differs
from what these functions give.
"""

from __future__ import annotations

import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard, Union, get_args, get_origin

import annotated_types
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from aclarai.daemon.config.load import Config, env_name
from aclarai.daemon.config.renames import READ_UNTIL, RENAMES

WIDTH = 100
YAML_HEADER = """\
# aclarai default configuration. Copy the keys you want to change into
# ~/.config/aclarai/config.yaml (or pass --config FILE); every key can also be set with an
# environment variable ACLARAI_<SECTION>__<KEY>, e.g. ACLARAI_GRAPH__BACKEND=neo4j.
# Unknown keys are errors. Every key is described in docs/configuration.md.
#
# Generated from the models in daemon/config/ by `make config-docs`: edit them, not this file.
"""


@dataclass(frozen=True, slots=True)
class Key:
    """One key of the configuration: a leaf, or a section holding keys."""

    dotted: str
    name: str
    field: FieldInfo
    default: Any
    section: type[BaseModel] | None

    @property
    def depth(self) -> int:
        return self.dotted.count(".")

    @property
    def description(self) -> str:
        return (self.field.description or "").replace("``", "`")


def keys() -> Iterator[Key]:
    """Every key of the configuration in order, each section before the keys inside it."""
    return _keys(Config, "", Config().model_dump(mode="json", by_alias=True))


def _keys(model: type[BaseModel], prefix: str, defaults: dict[str, Any]) -> Iterator[Key]:
    for name, field in model.model_fields.items():
        key_name = field.alias or name
        dotted = f"{prefix}{key_name}"
        annotation = field.annotation
        section = annotation if _is_section(annotation) else None
        yield Key(dotted, key_name, field, defaults[key_name], section)
        if section is not None:
            yield from _keys(section, f"{dotted}.", defaults[key_name])


def leaf_keys() -> list[str]:
    """The dotted name of every key that holds a value."""
    return [key.dotted for key in keys() if key.section is None]


def default_yaml() -> str:
    """The shipped defaults file: every key with its default, its description above it."""
    lines = [YAML_HEADER.rstrip("\n")]
    for key in keys():
        indent = "  " * key.depth
        if key.depth == 0:
            lines.append("")
        lines += _comment(key.description, indent)
        if key.section is not None:
            lines.append(f"{indent}{key.name}:")
            continue
        value = key.default
        if isinstance(value, dict) and value:
            block = yaml.safe_dump(value, default_flow_style=False, sort_keys=False)
            lines.append(f"{indent}{key.name}:")
            lines += [f"{indent}  {line}" for line in block.splitlines()]
        else:
            lines.append(f"{indent}{key.name}: {_flow(value)}")
    return "\n".join(lines) + "\n"


def configuration_page() -> str:
    """``docs/configuration.md``: where the configuration comes from, then every section with a
    table of its keys."""
    every = list(keys())
    top = [key.dotted for key in every if key.section is not None and key.depth == 0]
    index = ", ".join(f"[`{name}`](#{name})" for name in top)
    parts = [_INTRO.rstrip("\n"), f"Sections: {index}; then [Old names](#old-names)."]
    for section in (key for key in every if key.section is not None):
        hashes = "#" * (section.depth + 2)
        parts.append(f"{hashes} `{section.dotted}`\n\n{_one_line(section.description)}")
        rows = [
            f"| `{key.dotted}` | {_type_name(key.field)} | {_default_cell(key.default)} "
            f"| {_cell(key.description)} |"
            for key in every
            if key.section is None and key.dotted.rpartition(".")[0] == section.dotted
        ]
        if rows:
            parts.append(
                "\n".join(
                    ["| Key | Type | Default | Description |", "| --- | --- | --- | --- |", *rows]
                )
            )
    parts.append(_renames_table())
    return "\n\n".join(parts) + "\n"


_INTRO = """\
# Configuration

<!-- Generated from the models in daemon/config/ by `make config-docs`: edit them, not this
page. -->

Every command reads one configuration, in layers; a layer sets only the keys it names and the
one above it wins:

1. a command-line flag (`--graph`, `--backend`, `--redis`, `--jobs`, `--log-level`, …);
2. an environment variable `ACLARAI_<SECTION>__<KEY>`: the dotted key in capitals with `__` for
   each dot, e.g. `ACLARAI_WATCH__QUIET_PERIOD_S=5` for `watch.quiet_period_s`; the value is
   read as YAML (`true`, `12`, `null`, `[a, b]`). `ACLARAI_STATE_DIR` sets `state.dir`;
3. your YAML file: `--config FILE`, else `$XDG_CONFIG_HOME/aclarai/config.yaml`
   (`~/.config/aclarai/config.yaml`);
4. the defaults, [`aclarai.config.default.yaml`](../aclarai.config.default.yaml), shipped in
   the package.

Copy into your file only the keys you change. Every command checks the whole configuration
before it does anything: an unknown key, a value of the wrong type or out of range, a log level,
a crontab line that does not parse, or two keys that contradict each other (a review threshold
not below the pass threshold, both answer weights 0) stops it with one line naming the dotted
key and the file or variable that set it, and exit status 1. Keys that were renamed are still
read under their old names for a while, each with a warning: see [Old names](#old-names).

Secrets are never in the file: the configuration names the environment variable that holds each
(`graph.neo4j.password_env`, `model.llm.api_key_env`, `service.token_env`).
"""


def _renames_table() -> str:
    rows = [
        f"| `{r.old}` | `{r.new}`{' (seconds: the old value / 1000)' if r.per_thousand else ''} "
        f"| `{env_name(r.old)}` | `{env_name(r.new)}` |"
        for r in RENAMES
    ]
    return "\n".join(
        [
            "## Old names",
            "",
            *textwrap.wrap(
                f"These keys have a new name. The old one is still read until {READ_UNTIL}, in "
                "a file and in the environment, with one warning line naming the new key; a key "
                "set under both names in one file (or in the environment) is an error.",
                WIDTH,
            ),
            "",
            "| Old key | New key | Old variable | New variable |",
            "| --- | --- | --- | --- |",
            *rows,
        ]
    )


def _is_section(annotation: Any) -> TypeGuard[type[BaseModel]]:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _comment(text: str, indent: str) -> list[str]:
    lines: list[str] = []
    for n, paragraph in enumerate(text.split("\n\n")):
        if n:
            lines.append(f"{indent}#")
        lines += textwrap.wrap(
            " ".join(paragraph.split()),
            WIDTH - 2,
            initial_indent=f"{indent}# ",
            subsequent_indent=f"{indent}# ",
            break_long_words=False,
            break_on_hyphens=False,
        )
    return lines


def _flow(value: Any) -> str:
    dumped = yaml.safe_dump(value, default_flow_style=True, width=1000)
    return dumped.removesuffix("\n").removesuffix("\n...")


def _one_line(text: str) -> str:
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))


def _cell(text: str) -> str:
    return "<br><br>".join(" ".join(p.split()) for p in text.split("\n\n")).replace("|", "\\|")


def _default_cell(value: Any) -> str:
    shown = _flow(value)
    if len(shown) > 40:
        return "see [the defaults](../aclarai.config.default.yaml)"
    return f"`{shown}`"


def _type_name(field: FieldInfo) -> str:
    name = _annotation_name(field.annotation)
    bounds = []
    for item in field.metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            if isinstance(item, annotated_types.BaseMetadata) and hasattr(item, attr):
                bounds.append(f"{sign} {getattr(item, attr)}")
    return ", ".join([name, *bounds])


def _annotation_name(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return " or ".join([*(_annotation_name(a) for a in inner), "null"])
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin is tuple:
        return f"list of {_annotation_name(args[0])}s"
    if origin is dict:
        return f"mapping of {_annotation_name(args[0])} to {_annotation_name(args[1])}"
    if _is_section(annotation):
        return annotation.__name__.removesuffix("Spec").lower()
    names = {int: "integer", float: "number", str: "string", bool: "boolean", Any: "any"}
    return names.get(annotation, str(annotation))
