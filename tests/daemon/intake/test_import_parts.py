"""Issue 21, item 7: a conversation too long for one note becomes parts under the size limit."""

from __future__ import annotations

import re
from pathlib import Path

from aclarai.parsers import parse_note
from tests.helpers.cli import cli, daemon_env
from tests.helpers.import_samples import chatgpt_conversation, chatgpt_export, write

LIMIT_MB = 0.02
LIMIT = int(LIMIT_MB * 1024 * 1024)
FACTS = [
    "The {n}th deploy of the billing API went out on June {d} at 10:{m:02d}.",
    "Build {n} took {m} minutes on the runner in Frankfurt.",
    "Ticket {n} was closed by Dana after {d} days.",
]


def _turns(count: int) -> list[str]:
    return [
        FACTS[i % 3].format(n=i, d=1 + i % 28, m=i % 60) + " It was logged in the ops channel."
        for i in range(count)
    ]


def _parts(vault: Path) -> dict[str, bytes]:
    folder = vault / "conversations"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_long_conversation_split_under_limit(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    env = daemon_env(
        ACLARAI_VAULT__MAX_FILE_MB=str(LIMIT_MB), ACLARAI_STATE_DIR=str(tmp_path / "state")
    )
    export = write(
        tmp_path / "conversation.json",
        chatgpt_export(chatgpt_conversation("c-ops", "Ops log", _turns(240))),
    )

    out = cli("import", str(export), "--vault", str(vault), env=env)
    parts = _parts(vault)
    count = len(parts)
    assert count >= 4
    assert re.search(rf"^notes created +{count}$", out, re.MULTILINE)
    assert list(parts) == [f"2024-06-03 Ops log (part {n:03d}).md" for n in range(1, count + 1)]
    ids = [b.id for data in parts.values() for b in parse_note(data.decode()).blocks]
    assert len(ids) == len(set(ids)) == 240
    for data in parts.values():
        assert len(data) < LIMIT

    # Re-importing the same export changes no byte.
    again = cli("import", str(export), "--vault", str(vault), env=env)
    assert re.search(rf"^notes unchanged +{count}$", again, re.MULTILINE)
    assert _parts(vault) == parts

    # resync reads and grades every part, and each stays under the limit with its scores.
    graded = cli("resync", str(vault), env=env)
    assert "max_file_mb" not in graded
    assert re.search(rf"^notes seen +{count}$", graded, re.MULTILINE)
    scored = _parts(vault)
    for data in scored.values():
        assert len(data) < LIMIT
        assert all(block.scores for block in parse_note(data.decode()).blocks)

    # The conversation grows: the full parts keep their bytes, the last fills up, new ones follow.
    write(export, chatgpt_export(chatgpt_conversation("c-ops", "Ops log", _turns(300))))
    grown = cli("import", str(export), "--vault", str(vault), env=env)
    assert re.search(r"^notes created +[1-9]", grown, re.MULTILINE)
    after = _parts(vault)
    names = list(scored)
    assert all(after[name] == scored[name] for name in names[:-1])
    assert len(after) > count
    ids = [b.id for data in after.values() for b in parse_note(data.decode()).blocks]
    assert len(ids) == len(set(ids)) == 300
    last = after[names[-1]].decode()
    assert last.endswith(f"[[{list(after)[count].removesuffix('.md')}|next part]] →\n")
    assert cli("import", str(export), "--vault", str(vault), env=env).count("unchanged") == 1
    assert _parts(vault) == after


def _ids_once(vault: Path, count: int) -> None:
    """Every message id is in exactly one of the conversation's notes."""
    ids = [b.id for data in _parts(vault).values() for b in parse_note(data.decode()).blocks]
    assert len(ids) == len(set(ids)) == count


def test_changed_limit_adds_no_message_twice(tmp_path: Path) -> None:
    export = write(
        tmp_path / "conversation.json",
        chatgpt_export(chatgpt_conversation("c-ops", "Ops log", _turns(240))),
    )
    for name, first, second in (("grows", LIMIT_MB, 1.0), ("shrinks", 1.0, LIMIT_MB)):
        vault = tmp_path / name
        vault.mkdir()
        for limit in (first, second):
            env = daemon_env(
                ACLARAI_VAULT__MAX_FILE_MB=str(limit),
                ACLARAI_STATE_DIR=str(tmp_path / f"{name}-state"),
            )
            out = cli("import", str(export), "--vault", str(vault), env=env)
            _ids_once(vault, 240)
        # Nothing is written when the limit changes: every message is already in a note.
        assert re.search(r"^messages written +0$", out, re.MULTILINE), out
        # The small limit's parts stay as they are; the large limit's one note gets no parts.
        assert (len(_parts(vault)) >= 4) == (name == "grows")
