"""The less travelled paths of each reader, one behaviour per test."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from aclarai.parsers import ParseError
from aclarai.parsers.exports import (
    ChatGPTReader,
    ClaudeReader,
    CsvReader,
    DiscordReader,
    SlackReader,
    TelegramReader,
    WhatsAppReader,
)


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def test_chatgpt_child_cycle_without_current_node_is_a_parse_error() -> None:
    mapping = {"r": {"parent": None, "children": ["a"]}, "a": {"parent": "r", "children": ["r"]}}
    with pytest.raises(ParseError, match="child links form a cycle"):
        ChatGPTReader().parse(_json([{"id": "x", "mapping": mapping}]), "c.json")


def test_chatgpt_parts_that_are_not_a_list_and_odd_times_are_tolerated() -> None:
    def node(parent: str | None, parts: Any, when: Any) -> dict[str, Any]:
        content = {"content_type": "text", "parts": parts}
        message = {"author": {"role": "user"}, "content": content, "create_time": when}
        return {"parent": parent, "message": message}

    mapping = {"a": node(None, "not a list", 1.0), "b": node("a", ["kept"], "soon")}
    [conversation] = ChatGPTReader().parse(
        _json({"id": 7, "mapping": mapping, "current_node": "b"}), "c.json"
    )
    assert conversation.id == "7"
    assert conversation.title == "Untitled conversation"
    assert [(m.text, m.created_at) for m in conversation.messages] == [("kept", None)]


def test_readers_without_a_bundle_form_say_so() -> None:
    assert not ChatGPTReader().detect_bundle({"conversations.json": b"[]"})
    with pytest.raises(NotImplementedError, match="chatgpt has no multi-file form"):
        ChatGPTReader().parse_bundle({})


def test_deeply_nested_json_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="nested too deeply"):
        ClaudeReader().parse(b"[" * 100_000 + b"]" * 100_000, "c.json")


def test_claude_skips_unknown_senders_and_invalid_dates() -> None:
    chat = [
        {"sender": "system", "text": "You are helpful."},
        {"sender": "human", "text": "hi", "created_at": "yesterday"},
    ]
    [conversation] = ClaudeReader().parse(_json({"uuid": None, "chat_messages": chat}), "c.json")
    assert conversation.id is None
    assert [(m.speaker, m.created_at, m.id) for m in conversation.messages] == [
        ("user", None, None)
    ]


def test_csv_without_spoken_rows_or_times() -> None:
    assert CsvReader().parse(b"author,text\nann,\nbob,  \n", "a.csv") == []
    [chat] = CsvReader().parse(b"author,text,time\nann,hi\n,yo,\n", "a.csv")
    assert [(m.speaker, m.text, m.created_at) for m in chat.messages] == [
        ("ann", "hi", None),
        ("unknown", "yo", None),
    ]


def test_discord_without_spoken_messages_or_author() -> None:
    notices = {"guild": None, "channel": {"id": 5}, "messages": [{"type": "GuildMemberJoin"}]}
    assert DiscordReader().parse(_json(notices), "d.json") == []
    bare = {"channel": {"id": 5}, "messages": [{"content": "hi", "mentions": None}]}
    [conversation] = DiscordReader().parse(_json(bare), "d.json")
    assert (conversation.title, conversation.id) == ("#5", "5")
    assert [(m.speaker, m.id) for m in conversation.messages] == [("unknown", None)]


def test_slack_bundle_with_dms_and_date_markup() -> None:
    day = [
        {
            "type": "message",
            "user": "U9",
            "text": "due <!date^1717405200^{date}|June 3rd>",
            "ts": "1.0",
        },
        {"type": "message", "user": "U9", "text": "no ts"},
        {"type": "message", "user": "U9", "text": "team <!subteam^S1|@devs>", "ts": "2.0"},
        {"type": "message", "user": "UX", "user_profile": {"name": "ext"}, "text": "hi", "ts": "3"},
    ]
    files = {
        "users.json": _json([{"id": "U9"}, {"name": "nobody"}]),
        "dms.json": _json([{"id": "D01", "members": ["U9"]}, {"members": []}]),
        "D01/2024-06-03.json": _json(day),
        "D01/2024-06-04.json": _json([{"type": "message", "subtype": "channel_join", "ts": "9.0"}]),
    }
    [dm] = SlackReader().parse_bundle(files)
    assert (dm.title, dm.id) == ("#D01 2024-06-03", "slack:D01:2024-06-03")
    assert [(m.speaker, m.text) for m in dm.messages] == [
        ("U9", "due June 3rd"),
        ("U9", "team @devs"),
        ("ext", "hi"),  # from another workspace: only the message's profile names them
    ]


def test_slack_bundle_without_listings_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match=r"no channels\.json or users\.json"):
        SlackReader().parse_bundle({"general/2024-06-03.json": b"[]"})


def test_telegram_chat_without_text_is_left_out() -> None:
    chats = {
        "chats": {
            "list": [
                {"id": 1, "type": "personal_chat", "messages": [{"type": "message", "text": None}]},
                {"id": 2, "messages": [{"type": "message", "text": "hi", "from": None}]},
            ]
        }
    }
    [chat] = TelegramReader().parse(_json(chats), "result.json")
    assert (chat.title, chat.id) == ("Telegram chat 2", "2")
    assert [(m.speaker, m.created_at) for m in chat.messages] == [("unknown", None)]


def test_whatsapp_edge_lines() -> None:
    reader = WhatsAppReader()
    assert not reader.detect(b"\n\n", "empty.txt")
    assert (
        reader.parse(b"1/2/24, 10:00 - Alex joined using this group's invite link\n", "w.txt") == []
    )
    text = (
        "[1/2/24, 10:00:00 AM] Ann: Messages and calls are end-to-end encrypted.\n"
        "[1/2/24, 10:01:00 AM] Ann:\nfirst line on the next line\n"
    )
    [chat] = reader.parse(text.encode(), "w.txt")
    assert [(m.speaker, m.text, m.created_at) for m in chat.messages] == [
        ("Ann", "first line on the next line", datetime(2024, 1, 2, 10, 1, tzinfo=UTC))
    ]
