"""Fuzzing resync with vaults built from nasty parts (issue 15, "find the class").

Each example is a real vault on disk: good notes (verifiable utterances, any line endings, a BOM,
a final lone CR, trailing spaces, headers) beside random bytes, text from every Unicode category,
comments nested, unterminated or holding absurd numbers, markers inside code, symlinks that loop
or lead out of the vault, a FIFO and a folder named like a note. After a resync (the library
function, in-process, for speed; one case runs the real command line):

- nothing raises, and every log line is one line that names a file of the vault;
- a file that cannot be a note (undecodable, binary, a bad symlink) gets exactly one line;
- every block of every good note carries its three scores;
- no byte outside the touched comments changed, in any file, inside the vault or out.

Files that cannot be read for lack of permission are not simulated: the tests run as root, which
reads any file whatever its mode. The FIFO and the folder named ``x.md`` stand in for paths that
cannot be read as a note.

The number of examples comes from the Hypothesis profile (tests/conftest.py): ``make fuzz`` runs
many more.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclarai.daemon.config import load_config
from aclarai.daemon.loop.resync import resync
from aclarai.parsers import SCORE_NAMES, parse_note
from tests.helpers.cli import daemon_env, run_cli
from tests.helpers.notes import without_aclarai_comments

SENTENCES = (
    "alice: The deploy to staging failed twice on Tuesday.",
    "bob: I rolled back to v2.3 and it is stable now.",
    "erin: The database migration took 40 minutes on Friday.",
    "carol: The Berlin office moved to a new building in March 2024.",
    "frank: The invoice for order 5521 was paid on 3 June.",
    "gina: Paris hosted the summit with 40 delegates.",
)
"""Utterances the offline backend always gives three scores."""

FUZZ_TIMEOUT_S = max(120, settings.default.max_examples)
"""The whole run of examples is one test: a second per example, for `make fuzz`."""
UNREADABLE = ("binary", "latin1", "loop", "outside")
"""Kinds of file that must give exactly one log line."""


@dataclass
class Vault:
    root: Path
    outside: Path
    good: list[str] = field(default_factory=list)
    """Notes whose every block must be scored."""
    kinds: dict[str, str] = field(default_factory=dict)
    """Every path made (vault-relative) → its kind."""
    before: dict[str, bytes] = field(default_factory=dict)
    """The bytes of every regular file, in the vault and out, before the resync."""


# ---------------------------------------------------------------------------------------------
# The parts


@st.composite
def good_notes(draw: st.DrawFn, name: str) -> str:
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    header = draw(
        st.sampled_from(
            ["", "\ufeff", "---\ntitle: t  \n---\n", "<!-- aclarai:title=T -->\n\n", "# Notes\n\n"]
        )
    )
    blocks = []
    sentences = draw(st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=4))
    for k, sentence in enumerate(sentences):
        bid = f"g-{name}-{k}"
        pad = draw(st.sampled_from(["", "  ", "\t"]))
        inline = draw(st.booleans())
        marker = f"<!-- aclarai:id={bid} ver={draw(st.integers(0, 5))} -->"
        lines = [f"{sentence} {marker}{pad}"] if inline else [sentence + pad, marker]
        if draw(st.booleans()):
            lines.append(f"^{bid}")
        blocks.append(eol.join(lines))
    body = (eol * draw(st.integers(1, 2))).join(blocks)
    ending = draw(st.sampled_from(["", "\n", "\r\n", "\r"]))
    return header.replace("\n", eol) + body + ending


huge = st.sampled_from(
    ["99999999999999999999", "2147483648", "9" * 5000, "-1", "1e309", "0x10", "١٢", "nan"]
)


@st.composite
def nasty_lines(draw: st.DrawFn, name: str) -> str:
    bid = f"n-{name}-{draw(st.integers(0, 3))}"
    return draw(
        st.one_of(
            st.text(max_size=40),
            st.sampled_from(SENTENCES),
            huge.map(lambda n: f"<!-- aclarai:id={bid} ver={n} -->"),
            huge.map(lambda n: f"<!-- aclarai:entailed_score={n} -->"),
            st.just(f"<!-- <!-- aclarai:id={bid} --> -->"),
            st.just(f"<!-- aclarai:id={bid} ver=1"),
            st.just("<!-- aclarai:"),
            st.just(f"<!-- aclarai:participants={'[' * 200} -->"),
            st.sampled_from(["```", "~~~", "    indented code"]),
            st.just(f"    code <!-- aclarai:id={bid} ver=1 -->"),
            st.just(f"^{bid}"),
            st.sampled_from(["\ufeff", "\r", "a\rb", "\u2028", "\x0b\x0c", "---", "\x85"]),
        )
    )


@st.composite
def nasty_texts(draw: st.DrawFn, name: str) -> str:
    lines = draw(st.lists(nasty_lines(name), max_size=12))
    endings = draw(st.lists(st.sampled_from(["\n", "\r\n", "\r", "\r\r\n"]), min_size=len(lines)))
    return "".join(line + end for line, end in zip(lines, endings, strict=False))


PART_KINDS = (
    "good",
    "nasty",
    "unicode",
    "bytes",
    "binary",
    "latin1",
    "loop",
    "outside",
    "dangling",
    "fifo",
    "folder",
    "empty",
)


@st.composite
def vault_plans(draw: st.DrawFn) -> list[tuple[str, str, str | bytes]]:
    """(name, kind, content) of each file, the first always a good note."""
    kinds = ["good", *draw(st.lists(st.sampled_from(PART_KINDS), min_size=1, max_size=8))]
    plan: list[tuple[str, str, str | bytes]] = []
    for index, kind in enumerate(kinds):
        name = f"f{index:02d}-{kind}"
        content: str | bytes = ""
        if kind in ("good", "folder"):
            content = draw(good_notes(name))
        elif kind == "nasty":
            content = draw(nasty_texts(name))
        elif kind == "unicode":
            content = draw(st.text(min_size=1).filter(lambda t: "\0" not in t))
        elif kind == "bytes":
            content = draw(st.binary(min_size=1, max_size=200))
        elif kind == "binary":
            content = draw(st.binary(max_size=50)) + b"\0" + draw(st.binary(max_size=50))
        elif kind == "latin1":
            content = f"{SENTENCES[0]} café <!-- aclarai:id=n-{name} -->\n".encode("latin-1")
        plan.append((name, kind, content))
    return plan


def build(root: Path, outside: Path, plan: list[tuple[str, str, str | bytes]]) -> Vault:
    vault = Vault(root, outside)
    secret = outside / "secret.md"
    secret.write_text(f"{SENTENCES[1]}\n<!-- aclarai:id=s-1 ver=1 -->\n", encoding="utf-8")
    for name, kind, content in plan:
        rel = f"{name}.md"
        path = root / rel
        if kind == "good":
            path.write_bytes(str(content).encode("utf-8"))
            vault.good.append(rel)
        elif kind == "folder":
            path.mkdir()
            (path / "inner.md").write_bytes(str(content).encode("utf-8"))
            vault.good.append(f"{rel}/inner.md")
        elif kind in ("nasty", "unicode"):
            path.write_bytes(str(content).encode("utf-8"))
        elif kind in ("bytes", "binary", "latin1", "empty"):
            path.write_bytes(content if isinstance(content, bytes) else b"")
        elif kind == "loop":
            os.symlink(f"{name}-b.md", path)
            os.symlink(rel, root / f"{name}-b.md")
            vault.kinds[f"{name}-b.md"] = kind
        elif kind == "outside":
            os.symlink(secret, path)
        elif kind == "dangling":
            os.symlink(root / "nowhere" / "x.md", path)
        elif kind == "fifo":
            os.mkfifo(path)
        vault.kinds[rel] = kind
    for base in (root, outside):
        for folder, _, files in os.walk(base):
            for file in files:
                path = Path(folder) / file
                if path.is_file() and not path.is_symlink() and stat.S_ISREG(path.stat().st_mode):
                    vault.before[str(path)] = path.read_bytes()
    return vault


@contextmanager
def fresh_vault(plan: list[tuple[str, str, str | bytes]]) -> Iterator[tuple[Vault, Path]]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "vault").mkdir()
        (base / "outside").mkdir()
        yield build(base / "vault", base / "outside", plan), base / "state"


# ---------------------------------------------------------------------------------------------
# The checks


def check_lines(vault: Vault, lines: list[str]) -> None:
    """Every line names a file of the vault; each unreadable file gets exactly one."""
    for line in lines:
        assert "\n" not in line and "Traceback" not in line, line
        assert any(rel in line for rel in vault.kinds), f"names no file: {line!r}"
    for rel, kind in vault.kinds.items():
        mentions = [line for line in lines if f"{rel}:" in line or line.endswith(rel)]
        if kind in UNREADABLE:
            assert len(mentions) == 1, (rel, mentions)
    for rel in vault.good:
        assert not [line for line in lines if rel in line], rel


def check_files(vault: Vault) -> None:
    """Good notes scored; no byte outside the aclarai comments changed, anywhere."""
    for rel in vault.good:
        blocks = parse_note((vault.root / rel).read_bytes().decode("utf-8")).blocks
        assert blocks and all(set(b.scores) == set(SCORE_NAMES) for b in blocks), rel
    for name, data in vault.before.items():
        after = Path(name).read_bytes()
        if after == data:
            continue
        try:
            old, new = data.decode("utf-8"), after.decode("utf-8")
        except UnicodeDecodeError:
            pytest.fail(f"{name}: an undecodable file was written")
        assert without_aclarai_comments(new) == without_aclarai_comments(old), name
    for rel, kind in vault.kinds.items():
        path = vault.root / rel
        if kind in ("loop", "outside", "dangling"):
            assert path.is_symlink(), rel
        if kind == "fifo":
            assert stat.S_ISFIFO(path.lstat().st_mode), rel


# ---------------------------------------------------------------------------------------------
# The tests


@pytest.mark.slow
@pytest.mark.timeout(FUZZ_TIMEOUT_S)
@given(vault_plans())
def test_resync_of_a_nasty_vault_scores_every_good_note_and_changes_no_user_byte(
    plan: list[tuple[str, str, str | bytes]],
) -> None:
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("aclarai")
    logger.addHandler(handler)
    try:
        with fresh_vault(plan) as (vault, state):
            env = {"ACLARAI_STATE_DIR": str(state), "XDG_CONFIG_HOME": str(state / "config")}
            summary = resync(load_config(env=env), vault.root)
            assert summary.store_error is None
            assert all(r.exc_info is None for r in records)
            check_lines(vault, [r.getMessage() for r in records])
            check_files(vault)
    finally:
        logger.removeHandler(handler)


EVERY_PART = [
    ("f00-good", "good", f"{SENTENCES[0]}\r\n<!-- aclarai:id=g-0 ver=1 -->\r\n^g-0\r"),
    ("f01-nasty", "nasty", "x <!-- aclarai:id=n-1 ver=99999999999999999999 -->\n```\n"),
    ("f02-binary", "binary", b"\0\1\2\xff"),
    ("f03-latin1", "latin1", "café: the menu changed <!-- aclarai:id=n-3 -->".encode("latin-1")),
    ("f04-loop", "loop", ""),
    ("f05-outside", "outside", ""),
    ("f06-dangling", "dangling", ""),
    ("f07-fifo", "fifo", ""),
    ("f08-folder", "folder", f"\ufeff{SENTENCES[2]} <!-- aclarai:id=g-8 -->"),
    ("f09-nasty", "nasty", f"{SENTENCES[3]}\r<!-- <!-- aclarai:id=n-9 --> -->\n~~~\n"),
    ("f10-empty", "empty", b""),
]


def test_resync_command_on_a_vault_of_every_nasty_part_exits_0_or_1_one_line_per_problem() -> None:
    with fresh_vault(EVERY_PART) as (vault, state):
        done = run_cli("resync", str(vault.root), env=daemon_env(ACLARAI_STATE_DIR=str(state)))
        assert done.returncode in (0, 1), done.stderr
        lines = [line.split(": ", 1)[1] for line in done.stderr.splitlines()]
        assert len(lines) == len(done.stderr.splitlines())
        check_lines(vault, lines)
        check_files(vault)
        assert "notes rewritten" in done.stdout
