"""Issue 21, item 7: what an import used to lose or let Obsidian hide, and long conversations."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aclarai.parsers import parse_note, reader_text
from aclarai.parsers.exports import (
    ChatGPTReader,
    ClaudeReader,
    Conversation,
    DiscordReader,
    ExportReader,
    Message,
    PlainTextReader,
    SlackReader,
    TelegramReader,
    WhatsAppReader,
    detect,
)
from aclarai.parsers.exports.parts import (
    SCORE_ROOM,
    part_file_name,
    render_part,
    split_parts,
)
from aclarai.parsers.exports.render import block_ids, render_note

SAMPLES = Path(__file__).parent / "samples"
T0 = datetime(2024, 6, 3, 9, 0, tzinfo=UTC)
_HIDING = re.compile(r"([%<$!])")


def conv(*turns: tuple[str, str], title: str = "Sprint planning") -> Conversation:
    messages = tuple(
        Message(speaker, text, T0 + timedelta(minutes=i), f"m{i}")
        for i, (speaker, text) in enumerate(turns)
    )
    return Conversation(title, messages, "chatgpt", "conversations.json", "c-1", T0)


def typed(text: str) -> str:
    """What a reader sees of ``alice: text`` with every ``%``, ``<``, ``$`` and ``!`` shown as
    typed."""
    return reader_text("alice: " + _HIDING.sub(r"\\\1", text))


@pytest.mark.parametrize(
    "text",
    [
        "Use %% to start a comment in Obsidian. Everything after it is hidden.",
        "Open %% here\nand it was never closed",
        "Balanced %%hidden%% is still said",
        "An HTML comment <!-- opened and never closed",
        "Display math $$x = 1 left open",
        "Three %%% and four %%%% percent signs",
        # Each dollar of a run is escaped: one left bare would pair with another as math.
        "$$x$$ and $$$",
        "a$$b$$c$$",
        "Costs $5, math $$x$$ left $$ open",
    ],
)
def test_percent_percent_escaped(text: str) -> None:
    conversation = conv(("alice", text), ("bob", "The next message is still there."))
    note = render_note(conversation)
    blocks = parse_note(note).blocks
    assert [b.id for b in blocks] == block_ids(conversation)
    # The whole message survives as block text, read as typed; the next block is untouched.
    assert reader_text(blocks[0].text) == f"alice: {text}"
    assert blocks[1].text == "bob: The next message is still there."
    # Nothing is left that Obsidian reads as a comment, an HTML comment or an open math block.
    assert "%%" not in note
    assert [line for line in note.splitlines() if "<!--" in line] == [
        line for line in note.splitlines() if line.startswith("<!-- aclarai:")
    ]
    assert note.count("$$") % 2 == 0


@given(
    st.lists(st.sampled_from(["%", "$$", "$$$", "<", "!", "-", "\n", "a", "b"]), max_size=30)
    .map("".join)
    .filter(str.strip)
)
def test_hiding_syntax_never_swallows_the_next_block(text: str) -> None:
    # No spaces, backticks or tildes: no code, where the syntax is left as typed. No lone
    # dollar either: "$a$" is inline math, and the importer leaves it so.
    conversation = conv(("alice", text), ("bob", "Still here."))
    note = render_note(conversation)
    blocks = parse_note(note).blocks
    assert [b.id for b in blocks] == block_ids(conversation)
    assert blocks[1].text == "bob: Still here."
    # What hides or runs on is read as typed. Math a message closes is left to render as
    # math, where a reader sees no escapes: its text is not compared.
    if not ("$$" in text and text.count("$$") % 2 == 0 and "$$$" not in text):
        assert reader_text(blocks[0].text) == typed(text.strip("\n"))
    assert "%%" not in note and "<!--" not in blocks[0].text
    assert note.count("$$") % 2 == 0


def test_percent_percent_inside_code_is_kept_as_typed() -> None:
    text = "Run this:\n```sql\nSELECT '%%' <!-- x\n```\nand `%%` inline, but %% outside"
    [block] = parse_note(render_note(conv(("alice", text)))).blocks
    assert block.text == (
        "alice: Run this:\n```sql\nSELECT '%%' <!-- x\n```\nand `%%` inline, but %\\% outside"
    )
    # Code shows "%%" as typed; only the one outside it opens a comment, and it is escaped.
    [inline] = parse_note(render_note(conv(("alice", "`%%` code and %% out")))).blocks
    assert inline.text == "alice: `%%` code and %\\% out"
    assert reader_text(inline.text) == "alice: %% code and %% out"
    # Indented like code, but after "speaker: " the first line is a paragraph, so it is escaped.
    [first] = parse_note(render_note(conv(("alice", "    %% first\n\n    %% code")))).blocks
    assert first.text == "alice:     %\\% first\n\n    %% code"


def test_balanced_math_is_left_as_math() -> None:
    [block] = parse_note(render_note(conv(("alice", "Euler: $$e^{i\\pi} + 1 = 0$$")))).blocks
    assert block.text == "alice: Euler: $$e^{i\\pi} + 1 = 0$$"


def test_two_line_speaker_file() -> None:
    data = b"alice: The deploy failed twice on Tuesday.\nbob: I rolled back to v2.3.\n"
    assert PlainTextReader().detect(data, "standup.txt")
    reader = detect(data, "standup.txt")
    assert reader is not None and reader.name == "plaintext"
    [chat] = reader.parse(data, "standup.txt")
    assert [(m.speaker, m.text) for m in chat.messages] == [
        ("alice", "The deploy failed twice on Tuesday."),
        ("bob", "I rolled back to v2.3."),
    ]


def test_single_chatgpt_conversation() -> None:
    [packing, retro] = json.loads((SAMPLES / "chatgpt" / "conversations.json").read_bytes())
    single = json.dumps(retro, indent=2).encode()
    reader = detect(single, "Q2 retro.json")
    assert reader is not None and reader.name == "chatgpt"
    [conversation] = reader.parse(single, "Q2 retro.json")
    assert (conversation.title, conversation.id) == ("Q2 retro", retro["conversation_id"])
    assert [m.speaker for m in conversation.messages] == ["Dana", "assistant"]
    # As an exporter writes one from the API: a node's message comes before its links, so a
    # long first message pushes "children" and "parent" past the head detection reads.
    long = dict(packing)
    first = "u-0001"
    long["mapping"] = {first: packing["mapping"][first], **packing["mapping"]}
    long["mapping"][first] = {
        "id": first,
        "message": {
            **packing["mapping"][first]["message"],
            "content": {"content_type": "text", "parts": ["Lisbon? " * 20_000]},
        },
        "parent": packing["mapping"][first]["parent"],
        "children": packing["mapping"][first]["children"],
    }
    data = json.dumps(long).encode()
    assert data.index(b'"children"') > 64 * 1024
    reader = detect(data, "conversation.json")
    assert reader is not None and reader.name == "chatgpt"
    [read] = reader.parse(data, "conversation.json")
    assert read.messages[0].text.startswith("Lisbon? Lisbon?")
    # A JSON object that only mentions a mapping inside a string is not ChatGPT's.
    other = json.dumps({"note": '"mapping": {"a": 1}', "children": []}).encode()
    assert not ChatGPTReader().detect(other, "other.json")


def _chatgpt_image() -> bytes:
    message = {
        "id": "u1",
        "author": {"role": "user"},
        "create_time": 1717405200.0,
        "content": {
            "content_type": "multimodal_text",
            "parts": [
                {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-A"},
                "What is on this photo?",
                {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-Z"},
            ],
        },
        "metadata": {
            "attachments": [
                {"id": "file-A", "name": "whiteboard.png", "mime_type": "image/png"},
                {"id": "file-P", "name": "notes.pdf", "mime_type": "application/pdf"},
            ]
        },
        "recipient": "all",
    }
    mapping = {
        "root": {"id": "root", "message": None, "parent": None, "children": ["u1"]},
        "u1": {"id": "u1", "message": message, "parent": "root", "children": []},
    }
    return json.dumps({"id": "c", "title": "Photo", "mapping": mapping}).encode()


def _claude_image() -> bytes:
    message: dict[str, Any] = {
        "uuid": "m1",
        "sender": "human",
        "text": "",
        "content": [{"type": "image"}, {"type": "text", "text": "Is this chart right?"}],
        "files": [{"file_name": "chart.png"}],
        "attachments": [{"file_name": "data.csv", "file_type": "text/csv"}],
    }
    return json.dumps([{"uuid": "c", "name": "Chart", "chat_messages": [message]}]).encode()


def _slack_image() -> bytes:
    return json.dumps(
        [
            {
                "type": "message",
                "user": "U1",
                "text": "The new logo",
                "ts": "1717405200.000100",
                "files": [{"id": "F1", "name": "logo.svg", "mimetype": "image/svg+xml"}],
            },
            {"type": "message", "user": "U1", "text": "", "ts": "1717405201.000100", "files": [{}]},
        ]
    ).encode()


def _discord_image() -> bytes:
    message = {
        "id": "1",
        "type": "Default",
        "timestamp": "2024-06-03T09:00:00+00:00",
        "content": "",
        "author": {"id": "9", "name": "theo"},
        "attachments": [{"id": "a", "url": "https://x/a", "fileName": "crash.jpg"}],
    }
    return json.dumps(
        {
            "guild": {"id": "g", "name": "G"},
            "channel": {"id": "c", "name": "help"},
            "messages": [message],
        }
    ).encode()


def _telegram_image() -> bytes:
    messages = [
        {
            "id": 1,
            "type": "message",
            "date_unixtime": "1717405200",
            "from": "Ivan",
            "photo": "photos/photo_1.jpg",
            "text": "The venue",
        },
        {
            "id": 2,
            "type": "message",
            "date_unixtime": "1717405260",
            "from": "Ivan",
            "photo": "(File not included. Change data exporting settings to download.)",
            "text": "",
        },
        {
            "id": 3,
            "type": "message",
            "date_unixtime": "1717405320",
            "from": "Ivan",
            "file": "files/plan.pdf",
            "mime_type": "application/pdf",
            "text": "",
        },
    ]
    return json.dumps(
        {"name": "Trip", "type": "private_group", "id": 5, "messages": messages}
    ).encode()


def _whatsapp_image() -> bytes:
    return (
        "[03.06.24, 21:07:11] Anna: \u200eimage omitted\n"
        "[03.06.24, 21:07:30] Anna: \u200e<attached: 00000012-PHOTO-2024-06-03.jpg>\n"
        "[03.06.24, 21:08:00] Ben: IMG-20240603-WA0001.jpg (file attached)\n"
        "Der Kuchen\n"
        "[03.06.24, 21:09:00] Ben: Schön\n"
    ).encode()


@pytest.mark.parametrize(
    ("reader", "data", "name", "texts"),
    [
        (
            ChatGPTReader(),
            _chatgpt_image(),
            "conversations.json",
            ["[file: notes.pdf]\n[image: whiteboard.png]\nWhat is on this photo?\n[image]"],
        ),
        (
            ClaudeReader(),
            _claude_image(),
            "conversations.json",
            ["[file: data.csv]\n[image: chart.png]\n[image]\n\nIs this chart right?"],
        ),
        (
            SlackReader(),
            _slack_image(),
            "design/2024-06-03.json",
            ["The new logo\n[image: logo.svg]", "[file]"],
        ),
        (DiscordReader(), _discord_image(), "help.json", ["[image: crash.jpg]"]),
        (
            TelegramReader(),
            _telegram_image(),
            "result.json",
            ["[image: photo_1.jpg]\nThe venue", "[image]", "[file: plan.pdf]"],
        ),
        (
            WhatsAppReader(),
            _whatsapp_image(),
            "WhatsApp Chat - Familie.txt",
            [
                "[image]",
                "[image: 00000012-PHOTO-2024-06-03.jpg]",
                "[image: IMG-20240603-WA0001.jpg]\nDer Kuchen",
                "Schön",
            ],
        ),
    ],
    ids=lambda value: value.name if isinstance(value, ExportReader) else "",
)
def test_image_part_placeholder(
    reader: ExportReader, data: bytes, name: str, texts: list[str]
) -> None:
    assert reader.detect(data, name)
    [conversation] = reader.parse(data, name)
    assert [m.text for m in conversation.messages] == texts
    # The placeholder is plain text in the note: it reads back as typed.
    blocks = parse_note(render_note(conversation)).blocks
    assert [b.text.split(": ", 1)[1] for b in blocks] == texts


def _long(count: int, size: int = 300) -> Conversation:
    return conv(
        *[("alice" if i % 2 else "bob", f"{i:05d} " + "word " * (size // 5)) for i in range(count)]
    )


def test_parts_fit_under_the_limit_with_room_for_scores() -> None:
    conversation = _long(200)
    limit = 16 * 1024
    parts = split_parts(conversation, limit)
    assert len(parts) > 3
    assert [part.number for part in parts] == list(range(1, len(parts) + 1))
    assert [e for part in parts for e in part.blocks] == [
        (m, i) for m, i in zip(conversation.messages, block_ids(conversation), strict=True)
    ]
    names = [part_file_name(conversation, part.number) for part in parts]
    assert names == sorted(names)
    assert names[0] == "2024-06-03 Sprint planning (part 001).md"
    for index, part in enumerate(parts):
        text = render_part(
            conversation,
            part,
            previous=names[index - 1] if index else None,
            following=names[index + 1] if index + 1 < len(parts) else None,
        )
        graded = len(text.encode()) + SCORE_ROOM * len(part.blocks)
        assert graded <= limit
        note = parse_note(text)
        assert [b.id for b in note.blocks] == [i for _, i in part.blocks]
        assert note.metadata["title"] == f"Sprint planning (part {part.number})"
        source = note.metadata["source"]
        assert isinstance(source, dict) and source["part"] == part.number
        if index:
            assert f"[[{names[index - 1].removesuffix('.md')}|previous part]]" in text
        if index + 1 < len(parts):
            assert text.endswith(f"[[{names[index + 1].removesuffix('.md')}|next part]] →\n")


def test_a_growing_conversation_keeps_its_earlier_parts() -> None:
    short, grown = _long(120), _long(180)
    before, after = split_parts(short, 16 * 1024), split_parts(grown, 16 * 1024)
    assert after[: len(before) - 1] == before[:-1]
    assert set(before[-1].blocks) <= set(after[len(before) - 1].blocks)
    assert split_parts(short, None)[0].blocks == tuple(
        (m, i) for m, i in zip(short.messages, block_ids(short), strict=True)
    )
