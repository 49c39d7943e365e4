"""WhatsApp's "Export chat" text file.

Two line forms start a message, in every locale's date order and clock:

- Android: ``12/31/23, 9:05 PM - Name: text`` or ``31.12.23, 21:05 - Name: text``
- iOS: ``[31/12/2023, 21:05:07] Name: text`` or ``[12/31/23, 9:05:07 PM] Name: text``

Any other line continues the message above it. Whether a file's dates are day-first or
month-first is decided for the whole file: a first component over 12 makes it day-first, a second
one over 12 month-first; with neither, files with AM/PM times are read month-first (en_US) and
24-hour ones day-first (most other locales). A four-digit first component is a year (ISO dates).

Media keep their place as a placeholder line, with any caption after it: ``image omitted`` (or
``Bild weggelassen``) is ``[image]``, ``<attached: NAME>`` and ``NAME (file attached)`` are
``[image: NAME]`` or ``[file: NAME]``, ``<Media omitted>`` is ``[media]``, and ``video``,
``audio``, ``sticker``, ``GIF``, ``document`` and ``contact card`` likewise. Skipped: lines without
``Name:`` (joins, subject changes), the encryption notice, deleted messages, and on iOS every
other text that starts with a U+200E mark, which is how iOS flags machine-written text. U+200E
marks are removed from what is kept, and Android's ``<This message was edited>`` suffix too.
Times carry no zone and are read as UTC. The title comes from the file name
(``WhatsApp Chat with X.txt``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from aclarai.parsers.exports._common import (
    base_name,
    decode,
    fail,
    head,
    is_image,
    placeholder,
    stem,
)
from aclarai.parsers.exports.base import Conversation, ExportReader, Message

_DATE = r"(?P<a>\d{1,4})[./-](?P<b>\d{1,2})[./-](?P<c>\d{1,4}),?\s+"
_CLOCK = r"(?P<hour>\d{1,2})[:.](?P<minute>\d{2})"
_AMPM = r"(?:[\s\u202f]?(?P<ampm>[AaPp])\.?[\s\u202f]?[Mm]\.?)?"
_IOS = re.compile(_DATE + _CLOCK + r"[:.](?P<second>\d{2})" + _AMPM + r"\]\s*(?P<rest>.*)", re.S)
_ANDROID = re.compile(
    _DATE + _CLOCK + r"(?:[:.](?P<second>\d{2}))?" + _AMPM + r"\s[-–]\s(?P<rest>.*)", re.S
)
_LRM = "\u200e"
_PLACEHOLDER = re.compile(r"this message was deleted|you deleted this message|null", re.I)
# Every placeholder ends in one of these; checking the ending first keeps the regexes off the
# ordinary messages.
_PLACEHOLDER_ENDS = ("deleted", "message", "null")
_KINDS = r"(?P<kind>image|video|audio|sticker|gif|document|contact card|bild|dokument)"
# A line as a person could type it: only the placeholder, and a file name with an extension.
_MEDIA = re.compile(
    r"<?(?:media omitted|medien ausgeschlossen|medien weggelassen)>?"
    r"|<attached: (?P<attached>[^>]*)>|(?P<file>[^\s<>]+\.[A-Za-z0-9]{1,5}) \(file attached\)"
    r"|" + _KINDS + r" (?:omitted|weggelassen)",
    re.I,
)
# A line iOS marked with U+200E as its own: names with spaces, and text before the kind
# (``Report.pdf • 3 pages document omitted``).
_MARKED_MEDIA = re.compile(
    r"<?(?:media omitted|medien ausgeschlossen|medien weggelassen)>?"
    r"|<attached: (?P<attached>[^>]*)>|(?P<file>.+?) \(file attached\)"
    r"|(?:[^\n]* )?" + _KINDS + r" (?:omitted|weggelassen)",
    re.I,
)
_MEDIA_KINDS = {"bild": "image", "dokument": "file", "document": "file", "contact card": "contact"}
_NOTICES = (
    "messages and calls are end-to-end encrypted",
    "messages to this chat are now secured",
    "messages to this group are now secured",
    "nachrichten und anrufe sind ende-zu-ende",
)
_EDITED = "<This message was edited>"
_TITLE = re.compile(r"WhatsApp[ -]Chat (?:with|mit|con|avec|met|com|-) (?P<who>.+)", re.I)
_MAX_NAME = 60
# Where year, month and day sit among a date's three numbers, for each date order.
_ORDERS = {"ymd": (0, 1, 2), "dmy": (2, 1, 0), "mdy": (2, 0, 1)}


@dataclass(slots=True)
class _Record:
    """A line that starts a message, and the lines that continue it."""

    number: int
    date: tuple[int, int, int]
    clock: tuple[int, int, int]
    ampm: str | None
    speaker: str | None
    """None for a system line (no ``Name:``)."""
    lines: list[str]


class WhatsAppReader(ExportReader):
    """WhatsApp ``.txt`` chat export (Android and iOS, any locale's dates)."""

    name = "whatsapp"
    extensions = (".txt",)

    def detect(self, data: bytes, name: str) -> bool:
        for line in head(data).splitlines():
            line = line.lstrip(_LRM + "\ufeff").strip()
            if line:
                return _start(line) is not None
        return False

    def parse(self, data: bytes, name: str) -> list[Conversation]:
        text = decode(data, name)
        records: list[_Record] = []
        for number, line in enumerate(text.splitlines(), 1):
            match = _start(line.lstrip(_LRM))
            if match is None:
                if records:
                    records[-1].lines.append(line.replace(_LRM, ""))
                continue
            a, b, c, hour, minute, second, ampm, rest = match.group(
                "a", "b", "c", "hour", "minute", "second", "ampm", "rest"
            )
            speaker, body = _speaker(rest)
            records.append(
                _Record(
                    number,
                    (int(a), int(b), int(c)),
                    (int(hour), int(minute), int(second or 0)),
                    ampm,
                    speaker,
                    [body],
                )
            )
        if not records:
            raise fail(name, "no WhatsApp message lines (like '12/31/23, 9:05 PM - Name: text')")
        order = _date_order(records)
        messages = []
        for record in records:
            if record.speaker is None:
                continue
            body = "\n".join(record.lines).replace(_LRM, "").strip()
            body = body.removesuffix(_EDITED).strip()
            first, _, caption = body.partition("\n")
            shown = _media(first, marked=record.lines[0].lstrip().startswith(_LRM))
            if shown is not None:
                body = "\n".join(filter(None, [shown, caption.strip()]))
            elif record.lines[0].startswith(_LRM) or not body or _is_placeholder(body):
                continue
            messages.append(
                Message(
                    speaker=record.speaker,
                    text=body,
                    created_at=_moment(record, order, name),
                )
            )
        if not messages:
            return []
        return [
            Conversation(
                title=_title(name),
                messages=tuple(messages),
                format=self.name,
                source_name=name,
                created_at=messages[0].created_at,
            )
        ]


def _start(line: str) -> re.Match[str] | None:
    if line.startswith("["):
        return _IOS.match(line, 1)
    return _ANDROID.match(line)


def _speaker(rest: str) -> tuple[str | None, str]:
    """(name, text) of a message line's remainder; no name for a system line."""
    name, colon, body = rest.partition(": ")
    if not colon and rest.endswith(":"):
        name, colon, body = rest[:-1], ":", ""
    name = name.replace(_LRM, "").strip()
    if not colon or not name or len(name) > _MAX_NAME or '"' in name or "“" in name:
        return None, rest
    return name, body


def _media(line: str, *, marked: bool) -> str | None:
    """The placeholder for a line that stands for a photo or another file, else None.

    ``marked``: the line starts with U+200E, WhatsApp's own text on iOS; only then may a free
    text come before the kind, and a file name have spaces and no extension.
    """
    if not line.lower().endswith((">", "omitted", "weggelassen", "(file attached)")):
        return None
    match = (_MARKED_MEDIA if marked else _MEDIA).fullmatch(line)
    if match is None:
        return None
    name = match.group("attached") or match.group("file")
    if name:
        return placeholder("image" if is_image(name) else "file", name)
    kind = (match.group("kind") or "media").lower()
    return placeholder(_MEDIA_KINDS.get(kind, kind))


def _is_placeholder(body: str) -> bool:
    lowered = body.lower()
    if lowered.startswith(_NOTICES):
        return True
    return lowered.endswith(_PLACEHOLDER_ENDS) and _PLACEHOLDER.fullmatch(body) is not None


def _date_order(records: list[_Record]) -> str:
    """``"ymd"``, ``"dmy"`` or ``"mdy"`` for the whole file."""
    day_first = month_first = twelve_hour = False
    for record in records:
        first, second, _ = record.date
        if first > 31:
            return "ymd"
        day_first = day_first or first > 12
        month_first = month_first or second > 12
        twelve_hour = twelve_hour or record.ampm is not None
    if day_first != month_first:
        return "dmy" if day_first else "mdy"
    return "mdy" if twelve_hour else "dmy"


def _moment(record: _Record, order: str, name: str) -> datetime:
    year_at, month_at, day_at = _ORDERS[order]
    date = record.date
    year = date[year_at]
    if year < 100:
        year += 2000
    hour, minute, second = record.clock
    if record.ampm is not None:
        hour = hour % 12 + (12 if record.ampm in "Pp" else 0)
    try:
        return datetime(year, date[month_at], date[day_at], hour, minute, second, tzinfo=UTC)
    except ValueError as exc:
        raise fail(name, f"line {record.number}: {exc} (dates read as {order})") from exc


def _title(name: str) -> str:
    parts = name.replace("\\", "/").split("/")
    label = stem(name)
    if label == "_chat" and len(parts) > 1:
        label = stem(parts[-2])
    match = _TITLE.fullmatch(label)
    return match.group("who") if match else label or base_name(name)
