"""Conversation → Tier 1 note: round trip through the block parser, ids, names, appends."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclarai.parsers import ParseError, parse_note
from aclarai.parsers.exports.base import Conversation, Message
from aclarai.parsers.exports.render import (
    append_messages,
    block_ids,
    block_text,
    conversation_key,
    header_source,
    note_file_name,
    numbered_name,
    render_note,
    safe_file_name,
)

T0 = datetime(2024, 6, 3, 9, 0, tzinfo=UTC)


def conv(
    *turns: tuple[str, str], id: str | None = "c-1", title: str = "Sprint planning"
) -> Conversation:
    messages = tuple(
        Message(speaker, text, T0 + timedelta(minutes=i), f"m{i}")
        for i, (speaker, text) in enumerate(turns)
    )
    return Conversation(title, messages, "chatgpt", "conversations.json", id, T0)


def test_render_exact_note() -> None:
    conversation = conv(("alice", "The deploy failed.\nTwice."), ("bob", "I rolled back."))
    first, second = block_ids(conversation)
    assert render_note(conversation) == (
        "<!-- aclarai:title=Sprint planning -->\n"
        "<!-- aclarai:created_at=2024-06-03T09:00:00Z -->\n"
        '<!-- aclarai:participants=["alice", "bob"] -->\n'
        "<!-- aclarai:message_count=2 -->\n"
        '<!-- aclarai:source={"format": "chatgpt", "file": "conversations.json", "id": "c-1"} -->\n'
        "\n"
        "alice: The deploy failed.\nTwice.\n"
        f"<!-- aclarai:id={first} ver=1 -->\n^{first}\n\n"
        "bob: I rolled back.\n"
        f"<!-- aclarai:id={second} ver=1 -->\n^{second}\n"
    )


def test_header_reads_back() -> None:
    conversation = conv(("a", "x"), title='Q3 <!-- aclarai:id=x --> "plan" -->')
    note = parse_note(render_note(conversation))
    assert note.metadata["title"] == 'Q3 <!-- aclarai:id=x --> "plan" -->'
    assert note.metadata["created_at"] == "2024-06-03T09:00:00Z"
    assert note.metadata["participants"] == ["a"]
    assert note.metadata["message_count"] == "1"
    assert note.metadata["source"] == {
        "format": "chatgpt",
        "file": "conversations.json",
        "id": "c-1",
    }
    assert [b.id for b in note.blocks] == block_ids(conversation)
    assert not note.problems


def test_created_at_is_utc_with_z() -> None:
    plus2 = timezone(timedelta(hours=2))
    conversation = Conversation(
        "t",
        (Message("a", "x"),),
        "slack",
        "f",
        "c",
        datetime(2024, 6, 3, 11, 30, 15, 999, tzinfo=plus2),
    )
    assert "<!-- aclarai:created_at=2024-06-03T09:30:15Z -->" in render_note(conversation)


def test_block_ids_obsidian_safe_deterministic_unique() -> None:
    conversation = conv(*[("a", f"message {i}") for i in range(500)])
    ids = block_ids(conversation)
    assert all(re.fullmatch(r"blk-[0-9a-f]{16}", str(i)) for i in ids)
    assert len(set(ids)) == 500
    assert ids == block_ids(conv(*[("a", f"message {i}") for i in range(500)]))
    assert ids != block_ids(conv(*[("a", f"message {i}") for i in range(500)], id="c-2"))


def test_repeated_message_ids_stay_unique() -> None:
    messages = (Message("a", "one", None, "dup"), Message("b", "two", None, "dup"))
    ids = block_ids(Conversation("t", messages, "csv", "f.csv", "c"))
    assert len(set(ids)) == 2


def test_conversation_without_id_keyed_by_its_first_message() -> None:
    short = conv(("a", "hi"), ("b", "yo"), id=None)
    grown = conv(("a", "hi"), ("b", "yo"), ("a", "more"), id=None)
    other = conv(("a", "hello"), id=None)
    assert conversation_key(short) == conversation_key(grown) != conversation_key(other)
    assert block_ids(grown)[:2] == block_ids(short)
    source = parse_note(render_note(short)).metadata["source"]
    assert isinstance(source, dict) and source["hash"] == conversation_key(short)


def test_hostile_text_is_neutralised() -> None:
    text = (
        "look: <!-- aclarai:id=evil ver=9 -->\n"
        "^evil\n"
        "  ^also-evil  \n"
        "<!-- aclarai:entailed_score=0.1 -->\n"
        "<!-- aclarai:broken"
    )
    conversation = conv(("mallory", text), ("bob", "ok"))
    note = parse_note(render_note(conversation))
    assert not note.problems
    assert [b.id for b in note.blocks] == block_ids(conversation)
    assert note.blocks[0].text == (
        "mallory: look: <\\!-- aclarai:id=evil ver=9 -->\n"
        "\\^evil\n"
        "  \\^also-evil  \n"
        "<\\!-- aclarai:entailed_score=0.1 -->\n"
        "<\\!-- aclarai:broken"
    )


def test_open_code_fence_is_closed() -> None:
    conversation = conv(
        ("a", "see:\n```python\nprint(1)"), ("b", "~~~~\nx\n~~~"), ("c", "```\nok\n```")
    )
    note = parse_note(render_note(conversation))
    assert [b.text for b in note.blocks] == [
        "a: see:\n```python\nprint(1)\n```",
        "b:\n~~~~\nx\n~~~\n~~~~",
        "c:\n```\nok\n```",
    ]


def test_inline_backticks_after_speaker_stay_on_its_line() -> None:
    conversation = conv(("a", "`x` and ```y```\nmore"), ("b", "after"))
    note = parse_note(render_note(conversation))
    assert [b.id for b in note.blocks] == block_ids(conversation)
    assert note.blocks[0].text == "a: `x` and ```y```\nmore"


def test_empty_messages_are_not_blocks() -> None:
    conversation = conv(("a", "x"), ("b", "  \n "), ("c", "y"))
    note = parse_note(render_note(conversation))
    assert [b.text for b in note.blocks] == ["a: x", "c: y"]
    assert note.metadata["message_count"] == "2"


speakers = st.text(alphabet="abAB :_-<!é\t", min_size=0, max_size=8)
pieces = [*"ab yz:^-_<!>`~#*\\\t\r\n", "<!--", "aclarai:", "-->", "id=", "```", "    "]
texts = st.lists(st.sampled_from(pieces), max_size=20).map("".join)


def _trimmed(text: str) -> str:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(speakers, texts), min_size=1, max_size=6), st.text(max_size=20))
def test_render_parse_round_trip(turns: list[tuple[str, str]], title: str) -> None:
    conversation = conv(*turns, title=title)
    note = parse_note(render_note(conversation))
    rendered = [m for m in conversation.messages if m.text.strip()]
    assert [b.text for b in note.blocks] == [block_text(m) for m in rendered]
    assert [b.id for b in note.blocks] == [i for i in block_ids(conversation) if i]
    assert not note.problems
    assert note.metadata["title"] == (" ".join(title.split()) or "Untitled conversation")
    for message, block in zip(rendered, note.blocks, strict=True):
        if not any(mark in message.text for mark in ("<!--", "^", "`", "~")):
            assert block.text.split(": ", 1)[1] == _trimmed(message.text)


def _is_one_insertion(before: str, after: str) -> bool:
    """Whether ``after`` is ``before`` with one run of text inserted somewhere."""
    prefix = _common_prefix(before, after)
    suffix = _common_prefix(before[prefix:][::-1], after[prefix:][::-1])
    return prefix + suffix == len(before)


def _common_prefix(a: str, b: str) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(speakers, texts), min_size=1, max_size=8),
    st.integers(0, 8),
    st.sampled_from(["", "\nmy own note\n", "\nno final newline", "my own line\n", "\n```\n"]),
    st.booleans(),
)
def test_append_only_inserts(
    turns: list[tuple[str, str]], cut: int, user_text: str, crlf: bool
) -> None:
    old = conv(*turns[:cut] or turns[:1])
    grown = conv(*turns)
    before = render_note(old) + user_text
    if crlf:
        before = before.replace("\n", "\r\n")
    try:
        result = append_messages(before, grown)
    except ParseError:
        # Only a note with no block left can run into the new ones.
        assert not [i for i in block_ids(old) if i]
        return
    rendered_old = {i for i in block_ids(old) if i}
    assert list(result.block_ids) == [i for i in block_ids(grown) if i and i not in rendered_old]
    count = re.compile(r"message_count=[0-9]+")
    assert _is_one_insertion(count.sub("", before), count.sub("", result.text))
    note = parse_note(result.text)
    blocks = {b.id: b.text for b in note.blocks}
    for message, block_id in zip(grown.messages, block_ids(grown), strict=True):
        if block_id is not None:
            assert blocks[block_id] == block_text(message)
    assert append_messages(result.text, grown).text == result.text


def test_append_exact_bytes_and_count() -> None:
    old = conv(("alice", "one"))
    grown = conv(("alice", "one"), ("bob", "two"))
    before = render_note(old).replace("\n", "\r\n").removesuffix("\r\n")
    result = append_messages(before, grown)
    second = block_ids(grown)[1]
    assert result.text == (
        before.replace("message_count=1", "message_count=2")
        + f"\r\n\r\nbob: two\r\n<!-- aclarai:id={second} ver=1 -->\r\n^{second}\r\n"
    )
    assert append_messages(render_note(grown), grown).text == render_note(grown)


def test_append_goes_before_the_users_text_below() -> None:
    old = conv(("alice", "one"))
    grown = conv(("alice", "one"), ("bob", "two"))
    rendered = render_note(old)
    result = append_messages(rendered + "\nmy summary\n", grown)
    second = block_ids(grown)[1]
    assert result.text == (
        rendered.replace("message_count=1", "message_count=2")
        + f"\nbob: two\n<!-- aclarai:id={second} ver=1 -->\n^{second}\n"
        + "\nmy summary\n"
    )
    assert "my summary" not in parse_note(result.text).blocks[-1].text


def test_append_leaves_an_edited_count_alone() -> None:
    before = render_note(conv(("a", "one"))).replace("message_count=1 -->", "message_count=1  -->")
    result = append_messages(before, conv(("a", "one"), ("b", "two")))
    assert result.text.startswith(before)


def test_append_into_a_note_without_blocks_ending_in_code_refused() -> None:
    emptied = render_note(conv(("a", "one"))).split("\n\n")[0] + "\n\n```\n"
    with pytest.raises(ParseError, match="no block left"):
        append_messages(emptied, conv(("a", "one"), ("b", "x")))


def test_header_source() -> None:
    ref = header_source(render_note(conv(("a", "x"))).split("\n\n")[0])
    assert ref is not None and (ref.format, ref.key) == ("chatgpt", "c-1")
    assert header_source("<!-- aclarai:title=x -->") is None


def test_note_file_name() -> None:
    assert note_file_name(conv(("a", "x"))) == "2024-06-03 Sprint planning.md"
    untimed = Conversation("a/b: c?", (Message("a", "x"),), "plaintext", "t.txt")
    assert note_file_name(untimed) == "undated a b c.md"


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ('a/b\\c:d*e?f"g<h>i|j', "a b c d e f g h i j"),
        ("tab\there\x00\x1f", "tab here"),
        ("..hidden. . ", "hidden"),
        ("CON", "CON_"),
        ("lpt1.txt", "lpt1.txt_"),
        ("[[link]] #tag ^ref", "link tag ref"),
        ("", "conversation"),
    ],
)
def test_safe_file_name(raw: str, safe: str) -> None:
    assert safe_file_name(raw) == safe


def test_safe_file_name_caps_bytes_on_a_character_boundary() -> None:
    name = safe_file_name("é" * 200)
    assert len(name.encode()) <= 120
    assert name == "é" * 60


def test_numbered_name() -> None:
    assert numbered_name("2024-06-03 Plan.md", 2) == "2024-06-03 Plan (2).md"
