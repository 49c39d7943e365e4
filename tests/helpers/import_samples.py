"""Realistic export files for the import tests, written from the formats' public descriptions."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

T0 = 1717405200.0  # 2024-06-03T09:00:00Z


def chatgpt_node(
    node_id: str, parent: str | None, role: str, text: str, at: float, children: list[str]
) -> dict[str, Any]:
    return {
        "id": node_id,
        "parent": parent,
        "children": children,
        "message": {
            "id": node_id,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": at,
            "update_time": None,
            "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully",
            "weight": 1.0,
            "metadata": {},
            "recipient": "all",
        },
    }


def chatgpt_conversation(
    conv_id: str, title: str, turns: list[str], start: float = T0
) -> dict[str, Any]:
    """A linear ChatGPT conversation: user and assistant take turns."""
    mapping: dict[str, Any] = {
        "root": {"id": "root", "message": None, "parent": None, "children": ["n0"] if turns else []}
    }
    for i, text in enumerate(turns):
        parent = "root" if i == 0 else f"n{i - 1}"
        children = [f"n{i + 1}"] if i + 1 < len(turns) else []
        role = "user" if i % 2 == 0 else "assistant"
        mapping[f"n{i}"] = chatgpt_node(f"n{i}", parent, role, text, start + 10 * i, children)
    return {
        "title": title,
        "create_time": start,
        "update_time": start + 10 * len(turns),
        "mapping": mapping,
        "current_node": f"n{len(turns) - 1}" if turns else "root",
        "conversation_id": conv_id,
        "id": conv_id,
        "moderation_results": [],
        "is_archived": False,
    }


SPRINT = [
    "We ship the billing API on June 10.",
    "Then the load test has to pass by June 7, and Alice runs it on the staging cluster.",
    "The staging cluster has 12 nodes since Monday.",
]
VENDOR = [
    "Acme quoted 40,000 euros for the yearly licence.",
    "That is 15% above last year's price.",
]


def chatgpt_export(*conversations: dict[str, Any]) -> bytes:
    return json.dumps(list(conversations), indent=1).encode("utf-8")


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


SLACK_USERS = [
    {
        "id": "U01ALICE",
        "name": "alice",
        "real_name": "Alice Martin",
        "profile": {"real_name": "Alice Martin", "display_name": "alice"},
    },
    {
        "id": "U02BOB",
        "name": "bob",
        "real_name": "Bob Chen",
        "profile": {"real_name": "Bob Chen", "display_name": "bob"},
    },
]
SLACK_CHANNELS = [
    {"id": "C0GENERAL", "name": "general", "created": 1700000000, "members": ["U01ALICE", "U02BOB"]}
]
SLACK_DAY = [
    {
        "type": "message",
        "subtype": "channel_join",
        "user": "U02BOB",
        "text": "<@U02BOB> has joined the channel",
        "ts": "1717405100.000100",
    },
    {
        "type": "message",
        "user": "U01ALICE",
        "text": "The deploy to staging failed twice on Tuesday, <@U02BOB>.",
        "ts": "1717405200.000200",
        "thread_ts": "1717405200.000200",
        "reply_count": 1,
    },
    {
        "type": "message",
        "user": "U02BOB",
        "text": "I rolled back to v2.3, see <https://ci.example.com/runs/42|run 42>.",
        "ts": "1717405260.000300",
        "thread_ts": "1717405200.000200",
        "parent_user_id": "U01ALICE",
    },
    {
        "type": "message",
        "user": "U01ALICE",
        "text": "The migration 0042 times out after 300 seconds.",
        "ts": "1717405320.000400",
        "edited": {"user": "U01ALICE", "ts": "1717405330.000000"},
    },
    {
        "type": "message",
        "subtype": "bot_message",
        "bot_id": "B1",
        "text": "Build #42 failed",
        "ts": "1717405330.000500",
    },
]


def slack_zip(path: Path, days: dict[str, list[dict[str, Any]]] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("users.json", json.dumps(SLACK_USERS))
        archive.writestr("channels.json", json.dumps(SLACK_CHANNELS))
        for day, items in (days or {"2024-06-03": SLACK_DAY}).items():
            archive.writestr(f"general/{day}.json", json.dumps(items, indent=1))
    return path
