"""The public faces are complete and the architecture's import rules hold."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("parsers", "graph", "agents", "daemon")
# Only the factory picks concrete backends; everyone else sees the interfaces.
CONCRETE_BACKENDS = {
    "aclarai.graph.sqlite",
    "aclarai.graph.neo4j",
    "aclarai.agents.offline.evaluator",
    "aclarai.agents.offline.extractor",
    "aclarai.agents.llm.agents",
}

# A family of modules inside a room shows its own face, like the room's.
SUBPACKAGE_FACES = ("aclarai.parsers.exports",)

DAEMON_LAYERS: tuple[tuple[str, ...], ...] = (
    ("__init__", "cli"),
    ("loop",),
    ("service",),
    ("search",),
    ("reports",),
    ("factory",),
    ("workers",),
    ("intake",),
    ("vault",),
    ("stream_loop",),
    ("config", "logs", "progress", "redis_link"),
)
"""daemon/'s sub-rooms and top-level modules, top first: each imports only what lies below it,
so what two of them need lives below both."""
DAEMON_TOP_MODULES_MAX = 15
CLASS_LINES_MAX = 400


def _modules(room: str) -> list[Path]:
    """Every module of a room, its subpackages' included."""
    return sorted((ROOT / room).rglob("*.py"))


def _submodules(room: str) -> set[str]:
    """The names a room's modules and subpackages bind in its package."""
    return {p.stem for p in (ROOT / room).glob("*.py")} | {
        p.parent.name for p in (ROOT / room).glob("*/__init__.py")
    }


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
    submodules = _submodules(room)
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
                    assert name in (f"aclarai.{target}", *SUBPACKAGE_FACES), (
                        f"{room}/{path.name} reaches past the public face: {name}"
                    )


def _daemon_unit(name: str) -> str:
    """The sub-room or top-level module of ``daemon/`` that a dotted name under it belongs to."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 else "__init__"


def _upward_imports(path: Path, unit: str) -> list[str]:
    """The imports of ``path``, a module of ``daemon/{unit}``, that break :data:`DAEMON_LAYERS`:
    of a room that does not lie below its own, or of one placed nowhere."""
    rank = {name: depth for depth, layer in enumerate(DAEMON_LAYERS) for name in layer}
    found = []
    for name in sorted(_imports(path)):
        if not name.startswith("aclarai.daemon"):
            continue
        target = _daemon_unit(name)
        if target not in rank:
            found.append(f"{name}: daemon/{target} is placed nowhere")
        elif target != unit and rank[target] <= rank[unit]:
            found.append(f"{name}: daemon/{target} does not lie below daemon/{unit}")
    return found


def test_daemon_rooms_import_one_way() -> None:
    placed = {unit for layer in DAEMON_LAYERS for unit in layer}
    offenders = []
    for path in _modules("daemon"):
        unit = path.relative_to(ROOT / "daemon").parts[0].removesuffix(".py")
        assert unit in placed, f"daemon/{unit} has no place in DAEMON_LAYERS"
        offenders += [f"{path.relative_to(ROOT)}: {f}" for f in _upward_imports(path, unit)]
    assert offenders == []


@pytest.mark.parametrize(
    ("unit", "source", "finding"),
    [
        ("reports", "from aclarai.daemon.loop.take import DrainStats", "does not lie below"),
        ("factory", "from aclarai.daemon.service.core import judge_specs", "does not lie below"),
        ("vault", "import aclarai.daemon.cli", "does not lie below"),
        ("intake", "from aclarai.daemon.scan import walk", "placed nowhere"),
    ],
)
def test_the_one_way_check_catches(tmp_path: Path, unit: str, source: str, finding: str) -> None:
    path = tmp_path / "module.py"
    path.write_text(source + "\nfrom aclarai.daemon.config import Config\n")
    [found] = _upward_imports(path, unit)
    assert finding in found


def test_daemon_keeps_few_modules_at_its_top() -> None:
    top = sorted(p.name for p in (ROOT / "daemon").glob("*.py"))
    assert len(top) <= DAEMON_TOP_MODULES_MAX, top
    rooms = {p.parent.name for p in (ROOT / "daemon").glob("*/__init__.py")}
    assert rooms == {unit for layer in DAEMON_LAYERS for unit in layer} - {
        p.stem for p in (ROOT / "daemon").glob("*.py")
    }


def test_no_class_is_longer_than_the_limit() -> None:
    long = [
        f"{path.relative_to(ROOT)}:{node.name} {node.end_lineno - node.lineno + 1} lines"
        for room in ROOMS
        for path in _modules(room)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > CLASS_LINES_MAX
    ]
    assert long == []


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
            if path == ROOT / "daemon" / "config" / "load.py":
                continue
            source = path.read_text()
            assert "os.environ" not in source and "os.getenv" not in source, path


# Spelled in parts, so that this file does not itself name the folder it forbids.
SHARED = "/".join(("..", "shared"))
"""The folder beside the repository that only this workplace has."""


def _machine_dependencies(path: Path) -> list[str]:
    """What in ``path`` would make the suite need more than Python, pip and make."""
    found = []
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value == "shared"
        ):
            found.append(f"{path.name}:{node.lineno} reads {SHARED}")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        line, value = node.lineno, node.value
        words = value.split()
        if SHARED in value:
            found.append(f"{path.name}:{line} reads {SHARED}")
        if value == "redis-server":
            found.append(f"{path.name}:{line} looks redis-server up on the PATH")
        if words[:1] in (["apt"], ["apt-get"]) or value in ("apt", "apt-get"):
            found.append(f"{path.name}:{line} calls apt")
    return found


def test_the_suite_needs_only_python_pip_and_make() -> None:
    """No test reads the workplace's shared folder, finds ``redis-server`` on the PATH or
    installs with apt: a fresh clone on a machine with only Python, pip and make must pass
    ``make test``."""
    offenders = [
        finding
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path != Path(__file__).resolve()
        for finding in _machine_dependencies(path)
    ]
    assert offenders == []
    for script in (ROOT / ".ci" / "run", ROOT / "Makefile"):
        for number, line in enumerate(script.read_text().splitlines(), 1):
            command = line.split("#", 1)[0].split()
            assert not {"apt", "apt-get", "sudo"} & set(command), f"{script.name}:{number}"


@pytest.mark.parametrize(
    ("source", "finding"),
    [
        ('DATA = ROOT.parent / "shared" / "data"', f"reads {SHARED}"),
        (f'open("{SHARED}/data/true/begin.csv")', f"reads {SHARED}"),
        ('shutil.which("redis-server")', "looks redis-server up on the PATH"),
        ('subprocess.run(["redis-server", "--port", "0"])', "looks redis-server up on the PATH"),
        ('subprocess.run(["apt-get", "install", "-y", "redis"])', "calls apt"),
        ('os.system("apt install redis-server")', "calls apt"),
    ],
)
def test_machine_dependency_check_catches(tmp_path: Path, source: str, finding: str) -> None:
    path = tmp_path / "test_example.py"
    path.write_text(source + "\n")
    assert any(finding in f for f in _machine_dependencies(path))


def _test_module_imports(path: Path) -> list[str]:
    """The test modules and conftest files that the module at ``path`` imports."""
    return sorted(
        name
        for name in _imports(path)
        if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith(("test_", "conftest"))
    )


def test_no_test_module_imports_another() -> None:
    """What tests share lives in tests/helpers/ (and each folder's fixtures in its conftest):
    a test module that imports another runs that module's tests' set-up for nothing and breaks
    when it moves."""
    offenders = {
        path.relative_to(ROOT).as_posix(): found
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if (found := _test_module_imports(path))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "source",
    [
        "from tests.daemon.loop.test_resync_llm import NOTES",
        "from tests.daemon.conftest import note_text",
        "def helper():\n    from tests.parsers.test_marks import ordinary_notes",
    ],
)
def test_the_test_import_check_catches(tmp_path: Path, source: str) -> None:
    path = tmp_path / "test_example.py"
    path.write_text(source + "\n")
    assert _test_module_imports(path) != []


def test_every_project_error_belongs_to_the_one_tree() -> None:
    """Every exception class the rooms define is an ``AclaraiError``, so the command line maps
    each to its exit status in one place."""
    from aclarai.daemon.cli import EXIT_STATUS
    from aclarai.parsers import AclaraiError

    outside = []
    for room in ROOMS:
        for path in _modules(room):
            parts = path.relative_to(ROOT / room).with_suffix("").parts
            name = ".".join(("aclarai", room, *(p for p in parts if p != "__init__")))
            module = importlib.import_module(name)
            for value in vars(module).values():
                if (
                    isinstance(value, type)
                    and issubclass(value, BaseException)
                    and value.__module__ == name
                    and not issubclass(value, AclaraiError)
                ):
                    outside.append(f"{name}.{value.__name__}")
    assert outside == []
    assert EXIT_STATUS[-1][0] is AclaraiError, "the root comes last: it catches the rest"


def test_only_the_neo4j_store_imports_the_driver() -> None:
    importers = [
        path.relative_to(ROOT).as_posix()
        for room in ROOMS
        for path in _modules(room)
        if any(name == "neo4j" or name.startswith("neo4j.") for name in _imports(path))
    ]
    assert importers == ["graph/neo4j.py"]
    # And no command on the embedded store loads it: importing the rooms does not.
    probe = (
        "import sys, aclarai.graph, aclarai.daemon.loop.resync, aclarai.daemon.reports.status, "
        "aclarai.daemon.cli; print('neo4j' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


SUBPACKAGES = sorted(
    ".".join(p.parent.relative_to(ROOT).parts)
    for room in ROOMS
    for p in (ROOT / room).glob("*/__init__.py")
)


def test_every_subpackage_is_packaged() -> None:
    """A sub-room missing from pyproject's package list would be left out of the wheel."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert [p for p in SUBPACKAGES if f'"aclarai.{p}"' not in pyproject] == []


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_each_subpackage_shows_a_short_public_face(package: str) -> None:
    module = importlib.import_module(f"aclarai.{package}")
    assert module.__doc__, f"aclarai.{package} says what it holds"
    exported = set(module.__all__)
    folder = ROOT.joinpath(*package.split("."))
    submodules = {p.stem for p in folder.glob("*.py")}
    public = {name for name in vars(module) if not name.startswith("_")}
    assert public - submodules - {"annotations"} <= exported
    for name in exported:
        assert hasattr(module, name), f"aclarai.{package}.__all__ names missing {name}"


def _calls(path: Path, attribute: str) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == attribute
        for node in ast.walk(ast.parse(path.read_text()))
    )


def test_only_the_note_sync_path_syncs_notes_to_the_store() -> None:
    callers = [
        path.relative_to(ROOT).as_posix()
        for room in ("parsers", "agents", "daemon")
        for path in _modules(room)
        if _calls(path, "sync_files")
    ]
    assert callers == ["daemon/vault/notesync.py"]


def test_the_watcher_never_reads_a_note() -> None:
    """It looks at files (stat) and leaves the one read to the note-sync path."""
    tree = ast.parse((ROOT / "daemon" / "loop" / "watcher.py").read_text())
    reads = [
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in {"read_bytes", "read_text", "open", "read"}
    ]
    assert reads == []
