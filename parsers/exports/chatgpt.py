"""ChatGPT's data export: ``conversations.json``.

The file is a list of conversations, or a single conversation object as single-conversation
exporters write it (found by its ``mapping`` object wherever it is in the file: a long first
message may push the rest past what detection reads of a file's head). Each keeps its messages as
a tree, ``mapping`` (node id → ``{message, parent, children}``): editing a prompt
or regenerating an answer starts a branch. ``current_node`` is the leaf the user last saw, so the
conversation is that leaf's chain of parents, read root first; the other branches were edited
away, and are counted as such (:attr:`Conversation.edited_away`). A node with no ``parent`` key
takes the node listing it among its ``children`` as its parent. Where the links do not join the
nodes into one tree (single-conversation exporters write nodes without links; a node may name a
parent missing from the mapping), every message is read, in ``create_time`` order; ties, and
messages with no time (after the one before them in the mapping), keep the mapping's order.

Kept: ``user`` and ``assistant`` messages addressed to everyone, with content type ``text`` or
``multimodal_text``: string parts as they are, an image part as ``[image]`` (``[image: NAME]``
when the message's attachments name it), and an attached file no part shows as ``[file: NAME]``
(``[image: NAME]`` for an image) before the text, so a message never loses what was shown.
Skipped: system and tool messages, messages hidden from the conversation
(``metadata.is_visually_hidden_from_conversation``), assistant calls to tools (``recipient``
other than ``all``), and messages with no text left.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aclarai.parsers.exports._common import (
    expect,
    fail,
    from_epoch,
    head,
    head_keys,
    is_image,
    load_json,
    placeholder,
)
from aclarai.parsers.exports.base import Conversation, ExportReader, Message

# Tuples, not sets: a malformed export may put a list where a string belongs.
_SPOKEN_ROLES = ("user", "assistant")
_TEXT_TYPES = ("text", "multimodal_text")
_MAPPING_KEY = b'"mapping"'
_MAPPING_OBJECT = re.compile(rb'"mapping"\s*:\s*\{')


class ChatGPTReader(ExportReader):
    """ChatGPT data export (``conversations.json``)."""

    name = "chatgpt"
    extensions = (".json",)

    def detect(self, data: bytes, name: str) -> bool:
        text = head(data)
        if text[:1] == "{":
            return _has_mapping_object(data)
        return text[:1] == "[" and {"mapping", "children"} <= head_keys(text)

    def parse(self, data: bytes, name: str) -> list[Conversation]:
        document = load_json(data, name)
        items = [document] if isinstance(document, dict) else document
        expect(items, list, name, "the export")
        conversations = []
        for index, item in enumerate(items):
            conversation = _conversation(item, name, index)
            if conversation.messages:
                conversations.append(conversation)
        return conversations


def _has_mapping_object(data: bytes) -> bool:
    """Whether a ``"mapping": {`` key is anywhere in the file, outside a string."""
    start = data.find(_MAPPING_KEY)
    while start >= 0:
        # Inside a JSON string the quotes would be escaped.
        if data[start - 1 : start] != b"\\" and _MAPPING_OBJECT.match(data, start):
            return True
        start = data.find(_MAPPING_KEY, start + 1)
    return False


def _conversation(item: Any, name: str, index: int) -> Conversation:
    where = f"conversation {index + 1}"
    expect(item, dict, name, where)
    mapping = expect(item.get("mapping") or {}, dict, name, f"{where}'s mapping")
    read = {
        node_id: message
        for node_id, node in mapping.items()
        if isinstance(node, dict) and (message := _message(node_id, node, name, where))
    }
    tree = _Tree.of(mapping)
    if tree.joined(name, where):
        leaf = item.get("current_node")
        if leaf is None:
            leaf = tree.newest_leaf(name, where)
        branch = tree.branch(leaf, name, where)
        messages = [read[node_id] for node_id in branch if node_id in read]
        below = tree.below(branch[-1]) if branch else set()
        edited_away = sum(1 for node_id in read if node_id not in branch and node_id not in below)
    else:
        messages, edited_away = _by_time(list(read.values())), 0
    conversation_id = item.get("id") or item.get("conversation_id")
    return Conversation(
        title=str(item.get("title") or "Untitled conversation"),
        messages=tuple(messages),
        format=ChatGPTReader.name,
        source_name=name,
        id=str(conversation_id) if conversation_id is not None else None,
        created_at=from_epoch(item.get("create_time")),
        messages_read=len(read),
        edited_away=edited_away,
    )


@dataclass(frozen=True, slots=True)
class _Tree:
    """The mapping's nodes as their links join them: a node's ``parent``, else (a node with no
    ``parent`` key at all) the node that lists it among its ``children``."""

    nodes: frozenset[str]
    parent: dict[str, str]
    children: dict[str, list[str]]

    @classmethod
    def of(cls, mapping: Mapping[str, Any]) -> _Tree:
        nodes = {key: node for key, node in mapping.items() if isinstance(node, dict)}
        parent: dict[str, str] = {}
        children: dict[str, list[str]] = {}
        for node_id, node in nodes.items():
            up = node.get("parent")
            if isinstance(up, str):
                parent[node_id] = up
            kids = node.get("children")
            for kid in kids if isinstance(kids, list) else ():
                if isinstance(kid, str) and kid in nodes:
                    children.setdefault(node_id, []).append(kid)
                    if "parent" not in nodes[kid]:
                        parent.setdefault(kid, node_id)
        for node_id, up in parent.items():
            listed = children.setdefault(up, [])
            if node_id not in listed:
                listed.append(node_id)
        return cls(frozenset(nodes), parent, children)

    def joined(self, name: str, where: str) -> bool:
        """Whether the links join every node into one tree, whose root is in the mapping."""
        roots = {self._root(node_id, name, where) for node_id in self.nodes}
        return len(roots) <= 1 and roots <= self.nodes

    def _root(self, node_id: str, name: str, where: str) -> str:
        seen: set[str] = set()
        while node_id in self.parent:
            if node_id in seen:
                raise fail(name, f"{where}: the mapping's parent links form a cycle at {node_id!r}")
            seen.add(node_id)
            node_id = self.parent[node_id]
        return node_id

    def branch(self, leaf: Any, name: str, where: str) -> list[str]:
        """Node ids from the root down to ``leaf``."""
        chain: list[str] = []
        node_id = leaf
        while node_id is not None:
            if not isinstance(node_id, str):
                raise fail(name, f"{where}: a node id should be a string, not {node_id!r}")
            if node_id not in self.nodes:
                raise fail(name, f"{where}: node {node_id!r} is missing from the mapping")
            if node_id in chain:
                raise fail(name, f"{where}: the mapping's parent links form a cycle at {node_id!r}")
            chain.append(node_id)
            node_id = self.parent.get(node_id)
        chain.reverse()
        return chain

    def newest_leaf(self, name: str, where: str) -> str | None:
        """The end of the newest branch: from the root, each node's last child."""
        roots = sorted(node_id for node_id in self.nodes if node_id not in self.parent)
        if not roots:
            return None
        node_id = roots[0]
        for _ in range(len(self.nodes)):
            kids = self.children.get(node_id)
            if not kids:
                return node_id
            node_id = kids[-1]
        raise fail(name, f"{where}: the mapping's child links form a cycle")

    def below(self, leaf: str) -> set[str]:
        """The nodes under ``leaf``: never edited away (a ``current_node`` with children is no
        leaf, and what follows it is lost, not a branch)."""
        found: set[str] = set()
        todo = list(self.children.get(leaf, ()))
        while todo:
            node_id = todo.pop()
            if node_id not in found:
                found.add(node_id)
                todo.extend(self.children.get(node_id, ()))
        return found


def _by_time(messages: list[Message]) -> list[Message]:
    """``messages`` (in mapping order) in ``create_time`` order, stable: a message with no time
    keeps its place after the one before it."""
    keyed = []
    at = float("-inf")
    for position, message in enumerate(messages):
        if message.created_at is not None:
            at = message.created_at.timestamp()
        keyed.append((at, position, message))
    keyed.sort(key=lambda entry: entry[:2])
    return [message for _, _, message in keyed]


def _pieces(parts: list[Any], attachments: list[Any]) -> list[str]:
    """A placeholder for each attached file no part shows (the app shows them above the
    message), then the text of each part and a placeholder for each image part."""
    files = {
        str(item.get("id")): item
        for item in attachments
        if isinstance(item, dict) and isinstance(item.get("name"), str)
    }
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, str):
            if part.strip():
                pieces.append(part.strip())
        elif isinstance(part, dict) and part.get("content_type") == "image_asset_pointer":
            pointer = str(part.get("asset_pointer") or "")
            shown = next((key for key in files if key and pointer.endswith(key)), None)
            item = files.pop(shown) if shown is not None else None
            pieces.append(placeholder("image", item["name"] if item else None))
    others = [
        placeholder("image" if is_image(name, item.get("mime_type")) else "file", name)
        for name, item in ((item["name"], item) for item in files.values())
    ]
    return [*others, *pieces]


def _message(node_id: str, node: dict[str, Any], name: str, where: str) -> Message | None:
    message = node.get("message")
    if message is None:
        return None
    expect(message, dict, name, f"{where}: the message of node {node_id!r}")
    author = message.get("author") or {}
    metadata = message.get("metadata") or {}
    content = message.get("content") or {}
    if (
        not isinstance(author, dict)
        or not isinstance(content, dict)
        or author.get("role") not in _SPOKEN_ROLES
        or message.get("recipient", "all") not in ("all", None)
        or (isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation"))
        or content.get("content_type") not in _TEXT_TYPES
    ):
        return None
    parts = content.get("parts")
    if not isinstance(parts, list):
        return None
    attachments = metadata.get("attachments") if isinstance(metadata, dict) else None
    if len(parts) == 1 and isinstance(parts[0], str) and not attachments:
        text = parts[0].strip()  # nearly every message: skip the generator
    else:
        text = "\n".join(_pieces(parts, attachments if isinstance(attachments, list) else []))
    if not text:
        return None
    return Message(
        speaker=str(author.get("name") or author["role"]),
        text=text,
        created_at=from_epoch(message.get("create_time")),
        id=node_id,
    )
