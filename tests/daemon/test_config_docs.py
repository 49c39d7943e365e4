"""The shipped defaults and docs/configuration.md are what the config models give."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from aclarai.daemon.config.docs import configuration_page, default_yaml, keys, leaf_keys

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "stale: run `make config-docs` (python tools/config_docs.py) and commit the result"


def _dotted(data: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in data.items():
        name = f"{prefix}{key}"
        # The one key whose value is itself a mapping (agent to tools).
        if isinstance(value, dict) and name != "tools.agent_tool_mappings":
            yield from _dotted(value, f"{name}.")
        else:
            yield name


def test_the_shipped_defaults_are_generated_from_the_models() -> None:
    shipped = (ROOT / "aclarai.config.default.yaml").read_text(encoding="utf-8")
    assert shipped == default_yaml(), f"aclarai.config.default.yaml {REGENERATE}"


def test_the_configuration_page_is_generated_from_the_models() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page == configuration_page(), f"docs/configuration.md {REGENERATE}"


def test_every_key_of_the_defaults_is_described_on_the_page() -> None:
    shipped = yaml.safe_load((ROOT / "aclarai.config.default.yaml").read_text(encoding="utf-8"))
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    dotted = list(_dotted(shipped))
    assert sorted(dotted) == sorted(leaf_keys())
    missing = [key for key in dotted if f"| `{key}` |" not in page]
    assert missing == []
    assert "| `watch.quiet_period_s` | number, ≥ 0 | `3.0` | A file is processed" in page


def test_every_key_and_section_has_a_description() -> None:
    undescribed = [key.dotted for key in keys() if not key.description.strip()]
    assert undescribed == []
