"""The public faces are complete and the architecture's import rules hold."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("parsers", "graph", "agents", "daemon")
# Only the factory picks concrete backends; everyone else sees the interfaces.
CONCRETE_BACKENDS = {
    "aclarai.graph.sqlite",
    "aclarai.graph.neo4j",
    "aclarai.agents.offline",
    "aclarai.agents.offline_extractor",
    "aclarai.agents.llm",
}


def _modules(room: str) -> list[Path]:
    return sorted((ROOT / room).glob("*.py"))


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("room", ROOMS)
def test_all_lists_every_public_name(room: str) -> None:
    module = importlib.import_module(f"aclarai.{room}")
    exported = set(module.__all__)
    public = {name for name in vars(module) if not name.startswith("_")}
    submodules = {p.stem for p in _modules(room)}
    assert public - submodules - {"annotations"} <= exported
    for name in exported:
        assert hasattr(module, name), f"aclarai.{room}.__all__ names missing {name}"


def test_import_directions() -> None:
    allowed = {
        "parsers": set(),
        "graph": {"parsers"},
        "agents": {"parsers"},
        "daemon": {"parsers", "graph", "agents", "daemon"},
    }
    for room in ROOMS:
        for path in _modules(room):
            for name in _imports(path):
                if not name.startswith("aclarai."):
                    continue
                target = name.split(".")[1]
                if target == room:
                    continue
                assert target in allowed[room], f"{room}/{path.name} imports {name}"
                if path.name != "factory.py":
                    assert name == f"aclarai.{target}" or name not in CONCRETE_BACKENDS, (
                        f"{room}/{path.name} imports the concrete backend {name}"
                    )
                    assert name == f"aclarai.{target}", (
                        f"{room}/{path.name} reaches past the public face: {name}"
                    )


def test_only_the_grammar_module_holds_aclarai_comment_regexes() -> None:
    """One grammar: no regex for ``aclarai:`` comments anywhere else, tests included."""
    offenders = []
    for folder in (*ROOMS, "tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == ROOT / "parsers" / "grammar.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "re"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and "aclarai:" in str(node.args[0].value).lower()
                ):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_only_config_reads_the_environment() -> None:
    for room in ROOMS:
        for path in _modules(room):
            if path == ROOT / "daemon" / "config.py":
                continue
            source = path.read_text()
            assert "os.environ" not in source and "os.getenv" not in source, path
