"""Helpers every reader shares: strict decoding, JSON with errors a user can act on, dates.

Every failure is a :class:`~aclarai.parsers.errors.ParseError` whose message starts with the
file's name, so a reader never lets a ``KeyError`` or ``UnicodeDecodeError`` escape.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from aclarai.parsers.errors import ParseError

HEAD_BYTES = 64 * 1024
"""How much of a file detection looks at: enough for the first keys of any JSON export, and
cheap for a 100 MB one."""

_KEY = re.compile(r'"([A-Za-z_]+)"\s*:')
_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".heic", ".heif", ".bmp", ".svg")


def fail(name: str, what: str) -> ParseError:
    """The error for a file that is not a valid export; the caller raises it."""
    return ParseError(f"{name}: {what}", path=name)


def decode(data: bytes, name: str) -> str:
    """UTF-8 text (a leading BOM dropped), or a ParseError saying where it stops being UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise fail(name, f"not UTF-8 text (invalid byte at offset {exc.start})") from exc


def load_json(data: bytes, name: str) -> Any:
    """The parsed JSON document, or a ParseError naming the line and column where it breaks."""
    text = decode(data, name)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise fail(name, f"not valid JSON ({exc.msg} at {where}; truncated?)") from exc
    except RecursionError as exc:
        raise fail(name, "JSON nested too deeply") from exc


def head(data: bytes) -> str:
    """The start of a file as text, for detection; never raises."""
    return data[:HEAD_BYTES].decode("utf-8", "replace").lstrip("\ufeff \t\r\n")


def head_keys(text: str) -> set[str]:
    """The JSON object keys that occur in ``text`` (a file's head)."""
    return set(_KEY.findall(text))


def expect(value: Any, kind: type, name: str, what: str) -> Any:
    """``value`` when it is a ``kind`` (list or dict); else a ParseError naming the part."""
    if not isinstance(value, kind):
        expected = "a list" if kind is list else "an object"
        raise fail(name, f"{what} should be {expected}, not {type(value).__name__}")
    return value


def from_epoch(value: Any) -> datetime | None:
    """A UTC datetime from seconds since the epoch (number or numeric string); None if absent."""
    if value is None or value == "":
        return None
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def from_iso(value: Any) -> datetime | None:
    """An aware datetime from an ISO 8601 string (UTC when it has no zone); None if not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def placeholder(kind: str, file_name: str | None = None) -> str:
    """What stands in a message for an image or a file it showed: ``[image]``, ``[file: a.pdf]``.

    The name is kept to its base name on one line, without brackets, so the placeholder stays one
    piece of plain text."""
    if not file_name or not file_name.strip():
        return f"[{kind}]"
    clean = " ".join(base_name(file_name).replace("[", "(").replace("]", ")").split())
    return f"[{kind}: {clean}]" if clean else f"[{kind}]"


def is_image(file_name: str | None, mime_type: object = None) -> bool:
    """Whether a file is an image, by its MIME type or else its name's extension."""
    if isinstance(mime_type, str) and "/" in mime_type:
        return mime_type.lower().startswith("image/")
    return bool(file_name) and base_name(file_name or "").lower().endswith(_IMAGE_EXTENSIONS)


def base_name(name: str) -> str:
    """The last ``/``-separated part of a file or bundle member name."""
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def stem(name: str) -> str:
    """The base name without its last extension."""
    base = base_name(name)
    return base.rsplit(".", 1)[0] if "." in base[1:] else base
