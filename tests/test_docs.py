"""The docs' promises: the README's first commands, every link, every config snippet, every flag,
and every shell example that needs no server, run on a copy of sample_vault/."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import unicodedata
from pathlib import Path

import pytest

from aclarai.daemon.cli import build_parser, main
from aclarai.daemon.config import load_config

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOC_PAGES = sorted((ROOT / "docs").glob("*.md"))
EXAMPLE_PAGES = [ROOT / "README.md", *DOC_PAGES]
"""The pages whose shell examples are run and whose text documents the flags."""
LINKED_PAGES = [*EXAMPLE_PAGES, ROOT / "benchmarks" / "README.md", ROOT / "CHANGELOG.md"]

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)
INLINE_CODE = re.compile(r"(`+).*?\1", re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks and inline code spans."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_readme_opens_with_make_run_and_make_test() -> None:
    first_block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["make run", "make test"]
    assert README.index("```sh") < README.index("\n## ")
    assert README.count("\n") <= 250


@pytest.mark.parametrize(
    "snippet",
    [s for page in EXAMPLE_PAGES for s in YAML_BLOCK.findall(page.read_text())],
    ids=lambda s: s.split("\n")[0],
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
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert f"aclarai {command}" in capsys.readouterr().out


def test_the_table_lists_every_command() -> None:
    assert set(re.findall(r"^\| `aclarai ([a-z-]+)", README, re.M)) == set(_subcommands())


# Links --------------------------------------------------------------------------------------


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: link syntax and punctuation dropped (but ``-`` and
    ``_``), lower case, each space a ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a Markdown page; a repeated heading gets ``-1``, ``-2`` …"""
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        match = re.match(r"#{1,6} (.+?)#*\s*$", line)
        if not match:
            continue
        slug = github_slug(match.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def _links() -> list[tuple[Path, str]]:
    return [
        (page, target)
        for page in LINKED_PAGES
        for target in sorted(set(LINK.findall(_prose(page.read_text()))))
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)
    ]


def test_github_slug() -> None:
    assert github_slug("Redis Stream: aclarai consume") == "redis-stream-aclarai-consume"
    assert github_slug("make run and make test") == "make-run-and-make-test"
    assert github_slug("The graph: SQLite or Neo4j?") == "the-graph-sqlite-or-neo4j"
    assert github_slug("Taking it back: unadopt") == "taking-it-back-unadopt"
    assert github_slug("`aclarai.graph` and the_store") == "aclaraigraph-and-the_store"


def test_the_pages_have_links() -> None:
    assert len(_links()) > 50


@pytest.mark.parametrize(
    ("page", "target"), _links(), ids=lambda v: _rel(v) if isinstance(v, Path) else v
)
def test_relative_link_resolves(page: Path, target: str) -> None:
    path_part, _, anchor = target.partition("#")
    linked = (page.parent / path_part).resolve() if path_part else page
    assert linked.exists(), f"{_rel(page)} links to {target}: no such file"
    if anchor:
        assert linked.suffix == ".md", f"{_rel(page)}: an anchor into {path_part}"
        assert anchor in anchors(linked), f"{_rel(page)}: {target}: no such heading"


# Flags --------------------------------------------------------------------------------------


def _long_options(parser: argparse.ArgumentParser) -> list[str]:
    return [
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    ]


def _command_sections() -> dict[str, str]:
    """``docs/commands.md``'s text under each ``## aclarai NAME`` heading, by NAME."""
    sections: dict[str, str] = {}
    text = (ROOT / "docs" / "commands.md").read_text()
    for part in re.split(r"^## ", text, flags=re.M)[1:]:
        heading, _, body = part.partition("\n")
        for name in re.findall(r"aclarai ([a-z-]+)", heading):
            sections[name] = body
    return sections


def test_every_option_of_aclarai_is_documented() -> None:
    text = (ROOT / "docs" / "commands.md").read_text()
    for option in [*_long_options(build_parser()), "--help"]:
        assert f"`{option}" in text, f"docs/commands.md does not name {option}"


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_every_flag_is_documented_under_its_command(command: str) -> None:
    sections = _command_sections()
    assert command in sections, f"docs/commands.md has no section for aclarai {command}"
    missing = [
        flag
        for flag in _long_options(_subcommands()[command])
        if f"`{flag}" not in sections[command]
    ]
    assert not missing, f"aclarai {command}: {missing} not in its docs/commands.md section"


# Shell examples -----------------------------------------------------------------------------

NEEDS_A_SERVER = {
    "watch": "the daemon: runs until it is stopped",
    "serve": "an HTTP server: runs until it is stopped",
    "consume": "reads a Redis Stream",
    "worker": "reads work from Redis",
    "mcp": "a server on stdio: runs until its client leaves",
}
"""aclarai commands the examples show but this test does not run, and why."""

NEEDS_A_SERVER_ARGS = {
    "--redis": "grades through workers over a Redis server",
    "neo4j": "needs a Neo4j server",
    "llm": "needs a model endpoint",
}
"""Arguments that make an aclarai line need a server, and which."""

OTHER_PROGRAMS = {
    "make": "builds the environment (minutes); the Makefile is its own test",
    "export": "sets a secret for the lines after it",
    "curl": "calls a running `aclarai serve`",
    "systemctl": "talks to the user's systemd",
    "journalctl": "reads the user's journal",
    "loginctl": "changes the user's login sessions",
    "echo": "the inotify limit: writes /etc through sudo",
    "sudo": "changes the system",
}
"""Programs other than aclarai that the examples call, none of which this test runs."""

JOURNAL = {
    "2024-06-20.md": "# Thursday\n\nWe left Oslo on 3 June and reached Bergen by train.\n\n"
    "- The ferry to Stavanger takes four hours.\n- It was late again.\n",
    "2024-06-21.md": "The museum opens at 10:00 and closes at 17:00 on weekdays.\n",
}
"""``~/Notes/journal``: a folder of the user's own notes, as the examples call it."""

EXAMPLE_INPUTS = {
    "meeting.txt": "alice: The deploy to staging failed twice on Tuesday.\n"
    "bob: I rolled back to v2.3 and it is stable now.\n"
    "alice: Then we ship on Friday.\n",
    "messages.csv": "speaker,text,time\n"
    "alice,The vendor quoted 4000 euros for the audit.,2024-06-12T10:00:00Z\n"
    "bob,That is twice what we paid last year.,2024-06-12T10:01:00Z\n",
    "claims.jsonl": json.dumps(
        {
            "id": "c1",
            "source": "We left Oslo on 3 June and reached Bergen by train.",
            "claim": "We reached Bergen by train.",
        }
    )
    + "\n",
    "events.jsonl": json.dumps(
        {
            "event_id": "e1",
            "event_type": "answer",
            "agent": {"name": "docs", "type": "qa", "version": "1"},
            "interaction": {
                "user_query": "What is the capital of France?",
                "context": "Paris is the capital of France.",
                "answer": "The capital of France is Paris.",
            },
        }
    )
    + "\n",
    "labelled.jsonl": "".join(
        json.dumps({"source": source, "claim": claim, "label": label}) + "\n"
        for source, claim, label in [
            ("The museum opens at 10:00 on weekdays.", "The museum opens at 10:00.", True),
            ("The ferry to Stavanger takes four hours.", "The ferry takes four hours.", True),
            ("The museum opens at 10:00 on weekdays.", "The zoo was sold in 1990.", False),
            ("The ferry to Stavanger takes four hours.", "Bergen has no airport.", False),
        ]
    ),
}
"""The files the examples name, in the folder they run in."""


def _commands(block: str) -> list[list[str]]:
    """Each command of a shell block, as words: comments dropped, ``&&`` chains split."""
    commands = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            commands.append(words[:cut])
            words = words[cut + 1 :]
    return commands


def _examples(page: Path) -> list[list[str]]:
    return [words for block in SH_BLOCK.findall(page.read_text()) for words in _commands(block)]


def _environment(words: list[str]) -> dict[str, str]:
    """The ``VAR=value`` words a command starts with."""
    env = {}
    for word in words:
        if not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", word):
            break
        name, _, value = word.partition("=")
        env[name] = value
    return env


def _program(words: list[str]) -> tuple[str, list[str]]:
    """The program a command runs (after its ``VAR=value`` words) and its arguments."""
    rest = words[len(_environment(words)) :]
    return rest[0], rest[1:]


def _why_not_run(words: list[str]) -> str | None:
    """Why an example is not run here, from the lists above; ``None``: it runs."""
    program, args = _program(words)
    if program != "aclarai":
        return OTHER_PROGRAMS.get(program, f"unknown program {program}: review it")
    command = next((a for a in args if not a.startswith("-")), "")
    if command in NEEDS_A_SERVER:
        return NEEDS_A_SERVER[command]
    return next((why for arg, why in NEEDS_A_SERVER_ARGS.items() if arg in args), None)


def test_the_pages_have_examples_to_run() -> None:
    runnable = [w for page in EXAMPLE_PAGES for w in _examples(page) if not _why_not_run(w)]
    assert len(runnable) >= 20


def test_the_lists_of_examples_not_run_are_reviewed() -> None:
    """Each entry names a real command and is needed by an example: a list that no page needs
    any more, or that names a command aclarai lacks, is out of date."""
    assert set(NEEDS_A_SERVER) <= set(_subcommands())
    examples = [w for page in EXAMPLE_PAGES for w in _examples(page)]
    programs = {_program(w)[0] for w in examples}
    assert all(not why.startswith("unknown") for why in map(_why_not_run, examples) if why)
    assert set(OTHER_PROGRAMS) <= programs
    aclarai_args = {a for w in examples if _program(w)[0] == "aclarai" for a in _program(w)[1]}
    assert set(NEEDS_A_SERVER) | set(NEEDS_A_SERVER_ARGS) <= aclarai_args


@pytest.fixture
def example_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home whose ``~/Notes`` is a copy of sample_vault/ with a ``journal/`` of the user's own
    notes, and the examples' input files in the working folder."""
    home = tmp_path / "home"
    vault = home / "Notes"
    shutil.copytree(ROOT / "sample_vault", vault)
    (vault / "journal").mkdir()
    for name, text in JOURNAL.items():
        (vault / "journal" / name).write_text(text)
    (home / "Downloads").mkdir()
    shutil.copy(
        ROOT / "sample_vault" / "aclarai" / "inbox" / "conversations.json", home / "Downloads"
    )
    work = tmp_path / "work"
    work.mkdir()
    for name, text in EXAMPLE_INPUTS.items():
        (work / name).write_text(text)
    # State and config are already in temp folders (the suite's autouse isolation); ``~`` is the
    # one place the examples name besides them.
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    return home


def _home(word: str, home: Path) -> str:
    return re.sub(r"^~(?=/|$)", str(home), word)


@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=_rel)
def test_shell_examples_run(
    page: Path,
    example_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A page's examples run in order on one vault, as a reader following it would."""
    for words in _examples(page):
        if _why_not_run(words):
            continue
        _, args = _program(words)
        with monkeypatch.context() as env:
            for name, value in _environment(words).items():
                env.setenv(name, _home(value, example_home))
            code = main([_home(arg, example_home) for arg in args])
        out, err = capsys.readouterr()
        assert code == 0, f"{_rel(page)}: `{shlex.join(words)}` exited {code}\n{out}\n{err}"
