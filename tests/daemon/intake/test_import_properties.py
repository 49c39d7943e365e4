"""Properties of ``aclarai import`` on real files: twice is once, growth only appends."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from aclarai.daemon.intake.importer import import_sources
from aclarai.parsers import parse_note
from tests.helpers.import_samples import chatgpt_conversation, chatgpt_export, write
from tests.helpers.vault import vault_snapshot

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
        once = vault_snapshot(vault, pattern="*.md", mask_times=False)
        second = import_sources([export], vault, "conversations/")
        assert (second.created, second.extended, second.unchanged) == (0, 0, len(convs))
        assert vault_snapshot(vault, pattern="*.md", mask_times=False) == once


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
        before = vault_snapshot(vault, pattern="*.md", mask_times=False)
        new = [chatgpt_conversation(cid, f"T {cid}", t) for cid, t in convs]
        report = import_sources(
            [write(root / "new.json", chatgpt_export(*new))], vault, "conversations/"
        )
        after = vault_snapshot(vault, pattern="*.md", mask_times=False)
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
