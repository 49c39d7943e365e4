"""Telegram Desktop's JSON export: ``result.json``.

Either one chat, ``{name, type, id, messages}``, or a whole account, whose chats are under
``chats.list``. A message's ``text`` is a string or a list of strings and entity objects
(``{"type": "link", "text": …}``, bold, mentions …): their texts joined are the message.
Service messages (joins, pins, calls) are skipped. A photo or file is a line before the caption,
``[image: NAME]`` or ``[file: NAME]`` (``[image]`` when the export left the file out), so a
photo with no caption is kept. The time is ``date_unixtime`` when present (exact, UTC), else
``date``, which Telegram writes in local time without a zone and is therefore read as UTC.
"""

from __future__ import annotations

from typing import Any

from aclarai.parsers.exports._common import (
    base_name,
    expect,
    from_epoch,
    from_iso,
    head,
    head_keys,
    is_image,
    load_json,
    placeholder,
)
from aclarai.parsers.exports.base import Conversation, ExportReader, Message

_UNNAMED = {"saved_messages": "Saved Messages"}


class TelegramReader(ExportReader):
    """Telegram Desktop ``result.json`` (one chat or the full export)."""

    name = "telegram"
    extensions = (".json",)

    def detect(self, data: bytes, name: str) -> bool:
        text = head(data)
        if text[:1] != "{":
            return False
        keys = head_keys(text)
        if "guild" in keys:
            return False
        # A full export's chats may start past the head, behind a long contact list.
        return (
            "personal_information" in keys
            or {"chats", "list"} <= keys
            or ("messages" in keys and bool({"date_unixtime", "from_id"} & keys))
        )

    def parse(self, data: bytes, name: str) -> list[Conversation]:
        document = expect(load_json(data, name), dict, name, "a Telegram export")
        if "chats" in document:
            chats = expect(document["chats"], dict, name, "chats")
            items = expect(chats.get("list"), list, name, "chats.list")
        else:
            items = [document]
        conversations = []
        for index, chat in enumerate(items):
            expect(chat, dict, name, f"chat {index + 1}")
            conversation = _chat(chat, name, index)
            if conversation is not None:
                conversations.append(conversation)
        return conversations


def _chat(chat: dict[str, Any], name: str, index: int) -> Conversation | None:
    raw_messages = expect(chat.get("messages"), list, name, f"chat {index + 1}'s messages")
    messages = []
    for position, raw in enumerate(raw_messages):
        expect(raw, dict, name, f"chat {index + 1}, message {position + 1}")
        if raw.get("type", "message") != "message":
            continue
        text = "\n".join(filter(None, [_media(raw), _text(raw.get("text")).strip()]))
        if not text:
            continue
        message_id = raw.get("id")
        messages.append(
            Message(
                speaker=str(raw.get("from") or raw.get("from_id") or "unknown"),
                text=text,
                created_at=from_epoch(raw.get("date_unixtime")) or from_iso(raw.get("date")),
                id=str(message_id) if message_id is not None else None,
            )
        )
    if not messages:
        return None
    chat_id = chat.get("id")
    return Conversation(
        title=str(
            chat.get("name") or _UNNAMED.get(str(chat.get("type")), f"Telegram chat {chat_id}")
        ),
        messages=tuple(messages),
        format=TelegramReader.name,
        source_name=name,
        id=str(chat_id) if chat_id is not None else None,
        created_at=messages[0].created_at,
    )


def _media(raw: dict[str, Any]) -> str | None:
    if "photo" in raw:
        return placeholder("image", _file_name(raw.get("photo")))
    if "file" not in raw:
        return None
    name = raw.get("file_name")
    name = name if isinstance(name, str) else _file_name(raw.get("file"))
    return placeholder("image" if is_image(name, raw.get("mime_type")) else "file", name)


def _file_name(path: Any) -> str | None:
    # "(File not included. Change data exporting settings to download.)" names no file.
    if not isinstance(path, str) or path.startswith("("):
        return None
    return base_name(path)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            piece if isinstance(piece, str) else str(piece.get("text") or "")
            for piece in value
            if isinstance(piece, (str, dict))
        )
    return ""
