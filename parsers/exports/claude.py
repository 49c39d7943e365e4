"""Claude's data export: ``conversations.json``.

A list of conversations, each ``{uuid, name, created_at, chat_messages}``; a message is
``{uuid, sender, text, content, created_at}`` with ``sender`` ``human`` or ``assistant``. Newer
exports split a message into ``content`` items; their ``text`` items are the message (tool use,
tool results and thinking are dropped), and the flat ``text`` is the fallback for older ones.
``human`` is written ``user``, as in the ChatGPT reader, so both assistants read alike. What a
message showed besides text keeps its place: each of its ``attachments`` (text files) and
``files`` (images, PDFs) is a ``[file: NAME]`` or ``[image: NAME]`` line before the text, and an
``image`` content item an ``[image]`` line where it stood.
"""

from __future__ import annotations

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

_SPEAKERS = {"human": "user", "assistant": "assistant"}


class ClaudeReader(ExportReader):
    """Claude data export (``conversations.json``)."""

    name = "claude"
    extensions = (".json",)

    def detect(self, data: bytes, name: str) -> bool:
        text = head(data)
        return text[:1] in ("[", "{") and {"chat_messages", "uuid"} <= head_keys(text)

    def parse(self, data: bytes, name: str) -> list[Conversation]:
        document = load_json(data, name)
        items = [document] if isinstance(document, dict) else document
        expect(items, list, name, "the export")
        conversations = []
        for index, item in enumerate(items):
            where = f"conversation {index + 1}"
            expect(item, dict, name, where)
            chat = expect(item.get("chat_messages") or [], list, name, f"{where}'s chat_messages")
            messages = []
            for position, raw in enumerate(chat):
                expect(raw, dict, name, f"{where}, message {position + 1}")
                message = _message(raw)
                if message is not None:
                    messages.append(message)
            if not messages:
                continue
            uuid = item.get("uuid")
            conversations.append(
                Conversation(
                    title=str(item.get("name") or "Untitled conversation"),
                    messages=tuple(messages),
                    format=self.name,
                    source_name=name,
                    id=str(uuid) if uuid is not None else None,
                    created_at=from_iso(item.get("created_at")),
                )
            )
        return conversations


def _message(raw: dict[str, Any]) -> Message | None:
    sender = raw.get("sender")
    if not isinstance(sender, str) or sender not in _SPEAKERS:
        return None
    content = raw.get("content")
    if isinstance(content, list) and content:
        pieces = [_content_piece(item) for item in content if isinstance(item, dict)]
        text = "\n\n".join(piece for piece in pieces if piece)
    else:
        flat = raw.get("text")
        text = flat.strip() if isinstance(flat, str) else ""
    shown = _file_placeholders(raw)
    if shown:
        text = "\n".join([*shown, text]).strip()
    if not text:
        return None
    uuid = raw.get("uuid")
    return Message(
        speaker=_SPEAKERS[sender],
        text=text,
        created_at=from_iso(raw.get("created_at")),
        id=str(uuid) if uuid is not None else None,
    )


def _content_piece(item: dict[str, Any]) -> str:
    if item.get("type") == "text" and isinstance(item.get("text"), str):
        return str(item["text"]).strip()
    return placeholder("image") if item.get("type") == "image" else ""


def _file_placeholders(raw: dict[str, Any]) -> list[str]:
    shown = []
    for key in ("attachments", "files"):
        items = raw.get(key)
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict):
                name = item.get("file_name")
                name = name if isinstance(name, str) else None
                kind = "image" if is_image(name, item.get("file_type")) else "file"
                shown.append(placeholder(kind, name))
    return shown
