"""Properties of ``aclarai import`` on real files: twice is once, growth only appends."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from aclarai.daemon.intake.importer import import_sources
from aclarai.parsers import parse_note
from tests.helpers.import_samples import chatgpt_conversation, chatgpt_export, write

pieces = [*"abc xyz.,:^-_<!>`~#\n", "<!-- aclarai:id=x -->", "```"]
utterance = (
    st.lists(st.sampled_from(pieces), min_size=1, max_size=15)
    .map("".join)
    .filter(lambda text: bool(text.strip()))
)
conversations = st.lists(
    st.tuples(st.sampled_from(["c1", "c2", "c3"]), st.lists(utterance, min_size=1, max_size=6)),
    min_size=1,
    max_size=3,
    unique_by=lambda c: c[0],
)


def _snapshot(vault: Path) -> dict[str, bytes]:
    return {p.relative_to(vault).as_posix(): p.read_bytes() for p in vault.rglob("*.md")}


@settings(max_examples=40, deadline=None)
@given(conversations)
def test_import_twice_is_no_change(convs: list[tuple[str, list[str]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        vault = root / "vault"
        vault.mkdir()
        export = write(
            root / "conversations.json",
            chatgpt_export(*(chatgpt_conversation(cid, f"T {cid}", turns) for cid, turns in convs)),
        )
        first = import_sources([export], vault, "conversations/")
        assert first.errors == [] and first.created == len(convs)
        once = _snapshot(vault)
        second = import_sources([export], vault, "conversations/")
        assert (second.created, second.extended, second.unchanged) == (0, 0, len(convs))
        assert _snapshot(vault) == once


@settings(max_examples=40, deadline=None)
@given(conversations, st.data())
def test_grown_export_only_appends(convs: list[tuple[str, list[str]]], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        vault = root / "vault"
        vault.mkdir()
        cuts = [data.draw(st.integers(1, len(turns))) for _, turns in convs]
        old = [
            chatgpt_conversation(cid, f"T {cid}", t[:cut])
            for (cid, t), cut in zip(convs, cuts, strict=True)
        ]
        import_sources([write(root / "old.json", chatgpt_export(*old))], vault, "conversations/")
        before = _snapshot(vault)
        new = [chatgpt_conversation(cid, f"T {cid}", t) for cid, t in convs]
        report = import_sources(
            [write(root / "new.json", chatgpt_export(*new))], vault, "conversations/"
        )
        after = _snapshot(vault)
        assert report.created == 0 and report.errors == []
        assert set(after) == set(before)
        grown = sum(len(t) - cut for (_, t), cut in zip(convs, cuts, strict=True))
        assert report.messages == grown
        for name, old_bytes in before.items():
            old_note = parse_note(old_bytes.decode())
            new_note = parse_note(after[name].decode())
            count = old_note.metadata["message_count"]
            kept = old_bytes.replace(f"message_count={count}".encode(), b"")
            assert (
                after[name]
                .replace(f"message_count={new_note.metadata['message_count']}".encode(), b"")
                .startswith(kept)
            )
            old_blocks = [(b.id, b.text) for b in old_note.blocks]
            assert [(b.id, b.text) for b in new_note.blocks][: len(old_blocks)] == old_blocks
