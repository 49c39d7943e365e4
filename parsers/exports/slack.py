"""Slack's workspace export, as a folder or zip, and a single day file of one.

A workspace export holds ``users.json``, ``channels.json`` (and ``groups.json``, ``mpims.json``,
``dms.json`` for private conversations) and one folder per channel with one file per day,
``<channel>/<YYYY-MM-DD>.json``, each a list of messages. Every day of every channel becomes one
conversation, titled ``#channel YYYY-MM-DD`` with the id ``slack:<channel id>:<date>``. A day
file given on its own knows its channel only by its folder's name (``slack:general:<date>``), and
no channel at all when it has no folder (then it has no id).

Message text is Slack's markup: ``<@U123>`` becomes ``@name`` (names from ``users.json``, else from
the message's own ``user_profile``), ``<#C123|general>`` ``#general``, ``<url|label>``
``label (url)``, ``<url>`` the url, ``<!here>`` ``@here``; ``&amp;``, ``&lt;`` and ``&gt;`` are
unescaped. An edited message's ``text`` already is its edited text. Thread replies follow their
parent (when the parent is in the same day file), each thread in time order. Joins, leaves,
topic changes and other notices, bot and app messages and messages with neither text nor files
are skipped. Each file a message shares is a line after its text, ``[image: NAME]`` for an image
and ``[file: NAME]`` for any other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from aclarai.parsers.exports._common import (
    base_name,
    expect,
    fail,
    head,
    head_keys,
    is_image,
    load_json,
    placeholder,
    stem,
)
from aclarai.parsers.exports.base import Conversation, ExportReader, Message

_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_MARKUP = re.compile(r"<([^<>\n]*)>")
_MESSAGE_TYPE = re.compile(r'"type"\s*:\s*"message"')
# Subtypes that are people talking; everything else (joins, topics, bots, pins …) is a notice.
_SPOKEN_SUBTYPES = (None, "thread_broadcast", "file_share", "me_message")
# Private channels, group DMs and DMs are listed apart from channels; DM folders are named by id.
_LISTINGS = (("channels.json", "name"), ("groups.json", "name"), ("mpims.json", "name"))


class SlackReader(ExportReader):
    """Slack workspace export (folder or zip) or one ``<channel>/<YYYY-MM-DD>.json`` day file."""

    name = "slack"
    extensions = (".zip", ".json")

    def detect(self, data: bytes, name: str) -> bool:
        text = head(data)
        return (
            text[:1] == "[" and "ts" in head_keys(text) and _MESSAGE_TYPE.search(text) is not None
        )

    def parse(self, data: bytes, name: str) -> list[Conversation]:
        items = expect(load_json(data, name), list, name, "a Slack day file")
        parts = name.replace("\\", "/").split("/")
        folder = parts[-2] if len(parts) > 1 else None
        day = stem(name) if _DAY.fullmatch(stem(name)) else None
        # Without users.json, the profiles that messages carry are the only names there are.
        users = {
            raw["user"]: _user_name(raw["user_profile"])
            for raw in items
            if isinstance(raw, dict)
            and isinstance(raw.get("user"), str)
            and isinstance(raw.get("user_profile"), dict)
        }
        conversation = _Workspace(users, {}).day(items, folder, folder, day, name)
        return [conversation] if conversation else []

    def detect_bundle(self, files: Mapping[str, bytes]) -> bool:
        root = _root(files)
        return root is not None and any(True for _ in _day_files(files, root))

    def parse_bundle(self, files: Mapping[str, bytes]) -> list[Conversation]:
        root = _root(files)
        if root is None:
            raise fail("Slack export", "no channels.json or users.json at its top")
        users: dict[str, str] = {}
        if f"{root}users.json" in files:
            listing = _listing(files, f"{root}users.json")
            users = {str(user["id"]): _user_name(user) for user in listing if "id" in user}
        folders: dict[str, tuple[str, str]] = {}
        for listing_name, key in _LISTINGS:
            if f"{root}{listing_name}" in files:
                for channel in _listing(files, f"{root}{listing_name}"):
                    label = str(channel.get(key) or channel.get("id") or "")
                    folders[label] = (str(channel.get("id") or label), label)
        if f"{root}dms.json" in files:
            for channel in _listing(files, f"{root}dms.json"):
                if "id" in channel:
                    folders[str(channel["id"])] = (str(channel["id"]), str(channel["id"]))
        workspace = _Workspace(users, {cid: label for cid, label in folders.values()})
        conversations = []
        for member, folder, day in _day_files(files, root):
            items = expect(load_json(files[member], member), list, member, "a Slack day file")
            channel_id, label = folders.get(folder, (folder, folder))
            conversation = workspace.day(items, channel_id, label, day, member)
            if conversation:
                conversations.append(conversation)
        return conversations


def _root(files: Mapping[str, bytes]) -> str | None:
    """The folder prefix (``""`` or ``"name/"``) holding the export's listings, if any."""
    candidates = sorted(
        member[: -len(base_name(member))]
        for member in files
        if base_name(member) in ("channels.json", "users.json") and member.count("/") <= 1
    )
    return candidates[0] if candidates else None


def _day_files(files: Mapping[str, bytes], root: str) -> list[tuple[str, str, str]]:
    found = []
    for member in files:
        if not member.startswith(root):
            continue
        parts = member[len(root) :].split("/")
        if len(parts) == 2 and parts[1].endswith(".json") and _DAY.fullmatch(parts[1][:-5]):
            found.append((member, parts[0], parts[1][:-5]))
    return sorted(found, key=lambda entry: (entry[1], entry[2]))


def _listing(files: Mapping[str, bytes], member: str) -> list[dict[str, Any]]:
    items = expect(load_json(files[member], member), list, member, "the listing")
    return [expect(item, dict, member, "each entry") for item in items]


def _user_name(user: Mapping[str, Any]) -> str:
    profile = user.get("profile")
    if not isinstance(profile, dict):
        profile = {}
    return str(
        user.get("real_name")
        or profile.get("real_name")
        or profile.get("display_name")
        or user.get("name")
        or user.get("id")
    )


class _Workspace:
    """What a day file's text refers to: user names and channel names by id."""

    def __init__(self, users: dict[str, str], channels: dict[str, str]) -> None:
        self.users = users
        self.channels = channels

    def day(
        self,
        items: list[Any],
        channel_id: str | None,
        label: str | None,
        day: str | None,
        name: str,
    ) -> Conversation | None:
        kept: list[tuple[str, tuple[int, int], Message]] = []
        keys: dict[str, tuple[int, int]] = {}
        for index, raw in enumerate(items):
            expect(raw, dict, name, f"message {index + 1}")
            ts = raw.get("ts")
            if ts is None:
                continue
            key = _ts_key(ts, name, index)
            keys[str(ts)] = key
            message = self._message(raw, str(ts), key)
            if message is not None:
                kept.append((str(raw.get("thread_ts") or ts), key, message))
        # A thread sorts at its parent's time, so its replies follow the parent; the parent may
        # come after a reply in the list, hence the roots are looked up once all are known.
        ordered = sorted(kept, key=lambda entry: (keys.get(entry[0], entry[1]), entry[1]))
        messages = tuple(entry[2] for entry in ordered)
        if not messages:
            return None
        first = messages[0].created_at
        day = day or (first.date().isoformat() if first else "")
        title = f"#{label} {day}" if label else f"Slack {day}"
        return Conversation(
            title=title,
            messages=messages,
            format=SlackReader.name,
            source_name=name,
            id=f"slack:{channel_id}:{day}" if channel_id else None,
            created_at=first,
        )

    def _message(self, raw: dict[str, Any], ts: str, key: tuple[int, int]) -> Message | None:
        text = raw.get("text")
        files = raw.get("files")
        if (
            raw.get("type", "message") != "message"
            or raw.get("subtype") not in _SPOKEN_SUBTYPES
            or raw.get("bot_id")
            or not isinstance(text, str)
            or not (text.strip() or files)
        ):
            return None
        if "<" in text:
            text = _MARKUP.sub(self._markup, text)
        if "&" in text:
            text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        if isinstance(files, list):
            text = "\n".join([text.strip(), *map(_file_placeholder, files)]).strip()
        if not text:
            return None
        return Message(
            speaker=self._speaker(raw),
            text=text.strip(),
            # Exact: a float's error at today's epoch is far below the half microsecond that
            # fromtimestamp rounds to.
            created_at=datetime.fromtimestamp(key[0] + key[1] / 1e6, UTC),
            id=ts,
        )

    def _speaker(self, raw: Mapping[str, Any]) -> str:
        user = raw.get("user")
        if isinstance(user, str) and user in self.users:
            return self.users[user]
        # People from other workspaces (Slack Connect) are missing from users.json.
        profile = raw.get("user_profile")
        if isinstance(profile, dict):
            return _user_name(profile | {"id": user})
        return str(user or raw.get("username") or "unknown")

    def _markup(self, match: re.Match[str]) -> str:
        target, _, label = match.group(1).partition("|")
        sigil = target[:1]
        if sigil == "@":
            return "@" + (label or self.users.get(target[1:], target[1:]))
        if sigil == "#":
            return "#" + (label or self.channels.get(target[1:], target[1:]))
        if sigil == "!":
            if target.startswith("!date"):
                return label
            return label if label.startswith("@") else "@" + (label or target[1:].split("^")[0])
        if not label or label in (target, target.removeprefix("mailto:")):
            return label or target
        return f"{label} ({target})"


def _file_placeholder(item: Any) -> str:
    if not isinstance(item, dict):
        return placeholder("file")
    name = item.get("name") or item.get("title")
    name = name if isinstance(name, str) else None
    return placeholder("image" if is_image(name, item.get("mimetype")) else "file", name)


def _ts_key(ts: Any, name: str, index: int) -> tuple[int, int]:
    """``"1717405200.000100"`` as (seconds, microseconds), exact where a float is not."""
    seconds, _, fraction = str(ts).partition(".")
    if not seconds.isdigit() or not (fraction.isdigit() or fraction == ""):
        raise fail(name, f"message {index + 1} has an invalid ts {ts!r}")
    return int(seconds), int(fraction[:6].ljust(6, "0"))
