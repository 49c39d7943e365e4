"""Issue 36 §1: nothing outside the vault. Every setting that names a place in the vault must
lie inside it once ``..`` and symlinks are resolved, or the command stops before it reads or
writes anything; only regular files are ever opened as notes. The "outside" folder of each test
is a temp folder beside the test's vault, never a real path."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from aclarai.daemon.cli import main
from aclarai.daemon.config import load_config
from aclarai.daemon.intake.importer import import_sources
from aclarai.daemon.vault.bounds import VAULT_PLACES, bind_to_vault
from aclarai.daemon.vault.writer import sha256_bytes, write_if_unchanged
from aclarai.parsers import ConfigError, WriteConflict, parse_note

PROSE = "The release slipped by two days because the load test failed on Friday.\n"
EXPORT = (
    b'[{"title": "Plan", "create_time": 1717400000, "mapping": {"a": {"id": "a", "message": '
    b'{"author": {"role": "user"}, "content": {"content_type": "text", "parts": ["Hello"]}},'
    b' "parent": null, "children": []}}, "current_node": "a"}]'
)


def tree(root: Path) -> dict[str, object]:
    """Every entry under ``root``: a file's bytes and mode, a symlink's target, a folder."""
    found: dict[str, object] = {}
    for folder, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_file():
                found[rel] = (path.read_bytes(), path.stat().st_mode)
            else:
                found[rel] = "dir"
    return found


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """A vault of one ordinary note and, beside it, a folder of the user's that is no part
    of it: a note, an export and a subfolder, as a user's home would hold."""
    vault = tmp_path / "vault"
    (vault / "journal").mkdir(parents=True)
    (vault / "journal" / "day.md").write_text(PROSE)
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "note.md").write_text(PROSE)
    (outside / "sub" / "other.md").write_text("Bergen is on the west coast of Norway.\n")
    (outside / "chat.json").write_bytes(EXPORT)
    (vault / "linked").symlink_to(outside, target_is_directory=True)
    return vault, outside


def config_file(tmp_path: Path, settings: dict[str, object]) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path


def setting(key: str, value: str) -> dict[str, object]:
    section, name = key.split(".")
    return {section: {name: [value] if key == "adopt.folders" else value}}


def outside_values(outside: Path) -> list[str]:
    """A ``..`` that leaves the vault, an absolute path outside it, and a vault folder that is
    a symlink leading out."""
    return ["../outside/", str(outside), "linked/"]


def value_for(key: str, value: str) -> str:
    return value.rstrip("/") + "/Dashboard.md" if key == "dashboard.path" else value


COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "resync": lambda vault: ["resync", str(vault)],
    "watch": lambda vault: ["watch", str(vault)],
    "status": lambda vault: ["status", str(vault)],
    "claims": lambda vault: ["claims", str(vault)],
    "import": lambda vault: ["import", str(vault / "journal" / "day.md"), "--vault", str(vault)],
}


@pytest.mark.parametrize("key", VAULT_PLACES)
@pytest.mark.parametrize("which", ["dot-dot", "absolute", "symlink"])
def test_a_place_outside_the_vault_stops_every_command_before_it_starts(
    places: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    key: str,
    which: str,
) -> None:
    vault, outside = places
    raw = dict(zip(["dot-dot", "absolute", "symlink"], outside_values(outside), strict=True))
    value = value_for(key, raw[which])
    config = config_file(tmp_path, setting(key, value))
    before_vault, before_outside = tree(vault), tree(outside)
    for name, command in COMMANDS.items():
        code = main(["--config", str(config), *command(vault)])
        err = capsys.readouterr().err
        assert code == 1, name
        assert err.count("\n") == 1 and f"{key}: {value!r} is outside the vault" in err, err
    assert tree(vault) == before_vault
    assert tree(outside) == before_outside
    # Nothing was read either: no state was made for the vault.
    assert not (tmp_path / "state").exists()


def test_the_environment_and_import_into_are_checked_too(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    vault, outside = places
    before = tree(outside)
    code = main(["import", str(outside / "chat.json"), "--vault", str(vault), "--into", "../x"])
    assert code == 1
    assert "import.folder: '../x' is outside the vault" in capsys.readouterr().err
    monkeypatch.setenv("ACLARAI_IMPORT__INBOX", str(outside))
    assert main(["resync", str(vault)]) == 1
    assert f"import.inbox: {str(outside)!r} is outside the vault" in capsys.readouterr().err
    # The library's own entry point holds the same line.
    with pytest.raises(ConfigError, match=r"import\.folder: '\.\./outside' is outside"):
        import_sources([outside / "chat.json"], vault, "../outside")
    assert tree(outside) == before
    assert not (vault / "conversations").exists()


def test_adopt_folders_of_the_whole_disk_is_refused(
    places: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault, _ = places
    config = config_file(tmp_path, {"adopt": {"folders": ["/"]}})
    assert main(["--config", str(config), "resync", str(vault)]) == 1
    assert "adopt.folders: '/' is outside the vault" in capsys.readouterr().err
    assert (vault / "journal" / "day.md").read_text() == PROSE


def test_places_inside_the_vault_by_any_path_are_used(
    places: tuple[Path, Path], tmp_path: Path
) -> None:
    vault, outside = places
    before = tree(outside)
    (vault / "aclarai" / "inbox").mkdir(parents=True)
    (vault / "aclarai" / "inbox" / "chat.json").write_bytes(EXPORT)
    settings = {
        # An absolute path inside the vault, and a ``..`` that stays inside it.
        "adopt": {"folders": [str(vault / "journal"), "journal/../journal"]},
        "dashboard": {"path": str(vault / "reports" / "Quality.md")},
        "import": {"folder": "chats/../talks", "inbox": str(vault / "aclarai" / "inbox")},
    }
    config = config_file(tmp_path, settings)
    assert main(["--config", str(config), "resync", str(vault)]) == 0
    assert parse_note((vault / "journal" / "day.md").read_text()).blocks
    assert (vault / "reports" / "Quality.md").exists()
    assert [p.name for p in (vault / "talks").iterdir()] == ["2024-06-03 Plan.md"]
    assert (vault / ".aclarai" / "imported" / "chat.json").exists()
    assert tree(outside) == before


def test_bound_places_are_clean_vault_relative_paths(places: tuple[Path, Path]) -> None:
    vault, _ = places
    config = load_config(
        env={
            "ACLARAI_ADOPT__FOLDERS": f"['.', '{vault}/journal/', 'journal/./x/..']",
            "ACLARAI_DASHBOARD__PATH": f"{vault}/aclarai/../D.md",
        }
    )
    bound = bind_to_vault(config, vault)
    assert bound.adopt.folders == (".", "journal", "journal")
    assert bound.dashboard.path == "D.md"
    assert bound.import_.folder == "conversations"
    assert bound.import_.inbox == "aclarai/inbox"
    assert bound.import_.archive == ".aclarai/imported"
    assert bind_to_vault(bound, vault) == bound
    with pytest.raises(ConfigError, match=r"dashboard\.path: '\.\./D\.md' is outside the vault"):
        bind_to_vault(load_config(env={"ACLARAI_DASHBOARD__PATH": "../D.md"}), vault)


def _finishes(target: Callable[[], object], timeout_s: float = 30.0) -> object:
    """``target()``'s result; fails when it is still running after ``timeout_s`` (a hang)."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(target()), daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), "hung"
    return result[0]


def test_a_named_pipe_in_the_vault_never_blocks_adopt_or_resync(
    places: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault, _ = places
    os.mkfifo(vault / "journal" / "pipe.md")
    (vault / "aclarai" / "inbox").mkdir(parents=True)
    os.mkfifo(vault / "aclarai" / "inbox" / "export.json")
    assert _finishes(lambda: main(["adopt", str(vault)])) == 0
    assert parse_note((vault / "journal" / "day.md").read_text()).blocks
    assert _finishes(lambda: main(["unadopt", str(vault / "journal")])) == 0
    assert (vault / "journal" / "day.md").read_text() == PROSE
    config = config_file(tmp_path, {"adopt": {"folders": ["journal"]}})
    assert _finishes(lambda: main(["--config", str(config), "resync", str(vault)])) == 0
    assert parse_note((vault / "journal" / "day.md").read_text()).blocks
    skipped = [line for line in capsys.readouterr().err.splitlines() if "not a regular" in line]
    # One line each: adopt, unadopt, resync's adopt of adopt.folders and its walk of the vault.
    assert sum("pipe.md" in line for line in skipped) == 4
    assert sum("export.json" in line for line in skipped) == 1
    assert (vault / "journal" / "pipe.md").is_fifo()


def test_a_note_linked_from_outside_is_never_written(
    places: tuple[Path, Path], tmp_path: Path
) -> None:
    vault, outside = places
    (vault / "journal" / "theirs.md").symlink_to(outside / "note.md")
    before = tree(outside)
    assert main(["adopt", str(vault)]) == 0
    assert main(["adopt", str(vault / "journal" / "theirs.md")]) == 0
    config = config_file(tmp_path, {"adopt": {"folders": ["."]}})
    assert main(["--config", str(config), "resync", str(vault)]) == 0
    assert tree(outside) == before
    assert (vault / "journal" / "theirs.md").is_symlink()
    assert parse_note((vault / "journal" / "day.md").read_text()).blocks


def test_the_writer_never_replaces_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "outside.md"
    target.write_text(PROSE)
    link = tmp_path / "link.md"
    link.symlink_to(target)
    with pytest.raises(WriteConflict, match="not a regular file"):
        write_if_unchanged(link, b"changed\n", expected_sha256=sha256_bytes(PROSE.encode()))
    assert link.is_symlink() and target.read_text() == PROSE


def test_a_dashboard_that_links_to_a_note_never_overwrites_it(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    vault, _ = places
    home = vault / "Home.md"
    home.write_text(PROSE)
    (vault / "aclarai").mkdir()
    (vault / "aclarai" / "Dashboard.md").symlink_to(home)
    assert main(["adopt", str(vault)]) == 0
    adopted = home.read_text()
    assert main(["resync", str(vault)]) == 0
    assert (vault / "aclarai" / "Dashboard.md").is_symlink()
    assert "aclarai:id=" in home.read_text() and "Dashboard" not in home.read_text()
    assert home.read_text() != adopted, "the note the dashboard links to is graded like any note"
    assert "dashboard not written" in capsys.readouterr().err
