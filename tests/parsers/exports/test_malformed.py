"""Broken input is a ParseError that says what is wrong, never a KeyError or TypeError."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclarai.parsers import ParseError
from aclarai.parsers.exports import Conversation, ExportReader, readers

READERS = {reader.name: reader for reader in readers()}


@pytest.mark.parametrize(
    ("reader", "data", "words"),
    [
        (
            "chatgpt",
            b'[{"title": "x", "mapping": {"a": {',
            "not valid JSON .* line 1 column 35; truncated",
        ),
        ("chatgpt", b'"hello"', "the export should be a list, not str"),
        ("chatgpt", b"[1]", "conversation 1 should be an object, not int"),
        ("chatgpt", b"\xff\xfe[\x00]\x00", r"not UTF-8 text \(invalid byte at offset 0\)"),
        (
            "claude",
            b'[{"chat_messages": {"a": 1}}]',
            "conversation 1's chat_messages should be a list",
        ),
        ("claude", b'[{"chat_messages": [null]}]', "conversation 1, message 1 should be an object"),
        ("slack", b'{"ok": true}', "a Slack day file should be a list, not dict"),
        ("slack", b"[1]", "message 1 should be an object"),
        ("discord", b'{"guild": {}, "channel": {}, "messages": null}', "messages should be a list"),
        ("discord", b"[]", "a DiscordChatExporter export should be an object"),
        ("telegram", b'{"chats": {"list": 5}}', "chats.list should be a list"),
        ("telegram", b'{"name": "x", "messages": {}}', "chat 1's messages should be a list"),
        (
            "whatsapp",
            b"12/31/23, 9:05 PM - A: caf\xe9\n",
            r"not UTF-8 text \(invalid byte at offset 26\)",
        ),
        ("plaintext", b"alice: \xc3\x28\n", "not UTF-8 text"),
        ("csv", b"user,text\nA,\xff\n", "not UTF-8 text"),
        ("csv", b'user,text\nA,"unclosed\n', "not valid CSV at line 2 .unexpected end of data"),
    ],
)
def test_malformed_input_names_the_file_and_the_problem(
    reader: str, data: bytes, words: str
) -> None:
    with pytest.raises(ParseError, match=f"^broken.file: {words}") as caught:
        READERS[reader].parse(data, "broken.file")
    assert caught.value.path == "broken.file"


def test_truncated_sample_is_a_parse_error() -> None:
    document = [{"uuid": "u", "name": "n", "chat_messages": [{"sender": "human", "text": "hi"}]}]
    data = json.dumps(document).encode()
    for cut in range(1, len(data)):
        with pytest.raises(ParseError):
            READERS["claude"].parse(data[:cut], "conversations.json")


# Keys of every JSON format, so generated documents reach deep into each reader's shape checks.
_KEYS = st.sampled_from(
    [
        "mapping", "current_node", "parent", "children", "message", "author", "role", "name",
        "content", "parts", "content_type", "metadata", "recipient", "create_time", "id",
        "conversation_id", "title", "uuid", "chat_messages", "sender", "text", "type",
        "created_at", "ts", "thread_ts", "user", "subtype", "bot_id", "user_profile", "guild",
        "channel", "messages", "timestamp", "nickname", "mentions", "chats", "list", "from",
        "date", "date_unixtime", "is_visually_hidden_from_conversation",
    ]
)  # fmt: skip
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=True)
    | st.sampled_from(["user", "assistant", "human", "text", "message", "Default", "a", "1.5"])
    | st.text(max_size=8)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=40,
)


def _survives(reader: ExportReader, data: bytes, name: str) -> None:
    try:
        result = reader.parse(data, name)
    except ParseError:
        return
    assert all(isinstance(item, Conversation) for item in result)
    reader.detect(data, name)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    document=_JSON, reader=st.sampled_from(["chatgpt", "claude", "slack", "discord", "telegram"])
)
def test_any_json_is_read_or_refused_with_a_parse_error(document: Any, reader: str) -> None:
    _survives(READERS[reader], json.dumps(document).encode(), "general/2024-06-03.json")


@settings(max_examples=300)
@given(
    text=st.text(alphabet=st.sampled_from('0123456789/.,:- []APMap\u200e\u202fxyz\n\t;"|T')),
    reader=st.sampled_from(["whatsapp", "plaintext", "csv"]),
    name=st.sampled_from(["2024-06-03 chat.csv", "2024-99-99.txt", "x.tsv", "a/_chat.txt"]),
)
def test_any_text_is_read_or_refused_with_a_parse_error(text: str, reader: str, name: str) -> None:
    _survives(READERS[reader], text.encode(), name)


@settings(max_examples=100)
@given(data=st.binary(max_size=200))
def test_any_bytes_are_read_or_refused_by_every_reader(data: bytes) -> None:
    for reader in READERS.values():
        _survives(reader, data, "file.bin")
