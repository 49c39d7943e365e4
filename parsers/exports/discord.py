"""DiscordChatExporter's JSON export: one channel per file.

``{guild: {id, name}, channel: {id, name, category}, messages: [...]}``; a message is
``{id, type, timestamp, content, author: {id, name, nickname}, mentions: [...]}``. Only ``Default``
and ``Reply`` messages are people talking; joins, pins, calls, thread and name changes are
skipped. Each attachment is a line after the text (``[image: NAME]`` for an image, else
``[file: NAME]``), so a message of an attachment alone is kept too. The author is shown by their
nickname in the guild when they have one, else by their user name. User mentions ``<@123>`` left
raw in the content are written ``@name`` from the message's ``mentions``.
"""

from __future__ import annotations

import re
from typing import Any

from aclarai.parsers.exports._common import (
    expect,
    from_iso,
    head,
    head_keys,
    is_image,
    load_json,
    placeholder,
)
from aclarai.parsers.exports.base import Conversation, ExportReader, Message

_SPOKEN_TYPES = ("Default", "Reply")
_MENTION = re.compile(r"<@!?(\d+)>")


class DiscordReader(ExportReader):
    """DiscordChatExporter JSON (one channel)."""

    name = "discord"
    extensions = (".json",)

    def detect(self, data: bytes, name: str) -> bool:
        text = head(data)
        return text[:1] == "{" and {"guild", "channel", "messages"} <= head_keys(text)

    def parse(self, data: bytes, name: str) -> list[Conversation]:
        document = expect(load_json(data, name), dict, name, "a DiscordChatExporter export")
        guild = expect(document.get("guild") or {}, dict, name, "guild")
        channel = expect(document.get("channel") or {}, dict, name, "channel")
        items = expect(document.get("messages"), list, name, "messages")
        messages = []
        for index, raw in enumerate(items):
            expect(raw, dict, name, f"message {index + 1}")
            message = _message(raw)
            if message is not None:
                messages.append(message)
        if not messages:
            return []
        channel_name = str(channel.get("name") or channel.get("id") or "channel")
        guild_name = guild.get("name")
        channel_id = channel.get("id")
        return [
            Conversation(
                title=f"{guild_name} #{channel_name}" if guild_name else f"#{channel_name}",
                messages=tuple(messages),
                format=self.name,
                source_name=name,
                id=str(channel_id) if channel_id is not None else None,
                created_at=messages[0].created_at,
            )
        ]


def _message(raw: dict[str, Any]) -> Message | None:
    content = raw.get("content")
    if raw.get("type", "Default") not in _SPOKEN_TYPES or not isinstance(content, str):
        return None
    attachments = raw.get("attachments")
    if isinstance(attachments, list) and attachments:
        content = "\n".join([content.strip(), *map(_attachment, attachments)])
    content = content.strip()
    if not content:
        return None
    author = raw.get("author")
    if not isinstance(author, dict):
        author = {}
    if "<@" in content:
        names = {
            str(user.get("id")): _display(user)
            for user in raw.get("mentions") or ()
            if isinstance(user, dict)
        }
        content = _MENTION.sub(lambda m: "@" + names.get(m.group(1), m.group(1)), content)
    message_id = raw.get("id")
    return Message(
        speaker=_display(author),
        text=content,
        created_at=from_iso(raw.get("timestamp")),
        id=str(message_id) if message_id is not None else None,
    )


def _attachment(item: Any) -> str:
    name = item.get("fileName") if isinstance(item, dict) else None
    name = name if isinstance(name, str) else None
    return placeholder("image" if is_image(name) else "file", name)


def _display(user: dict[str, Any]) -> str:
    return str(user.get("nickname") or user.get("name") or user.get("id") or "unknown")
