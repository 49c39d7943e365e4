"""The README's promises: its first commands, and every config snippet it shows loads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aclarai.daemon.config import load_config

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_opens_with_make_run_and_make_test() -> None:
    first_block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["make run", "make test"]
    assert README.index("```sh") < README.index("\n## ")


@pytest.mark.parametrize(
    "snippet", re.findall(r"```yaml\n(.*?)```", README, re.S), ids=lambda s: s.split("\n")[0]
)
def test_config_snippets_load(tmp_path: Path, snippet: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(snippet)
    load_config(path, env={})


@pytest.mark.parametrize(
    "command", sorted(set(re.findall(r"^\| `aclarai ([a-z-]+)", README, re.M)))
)
def test_every_command_in_the_table_exists(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from aclarai.daemon.cli import main

    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert f"aclarai {command}" in capsys.readouterr().out
