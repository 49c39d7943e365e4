"""Plain-text transcripts: ``speaker: text`` lines.

::

    [2024-06-03 09:14] alice: The deploy failed twice.
    It failed again this morning.

    [09:20] bob: I rolled back.

A line ``speaker: text``, optionally after a ``[HH:MM]``, ``[HH:MM:SS]`` or ``[YYYY-MM-DD HH:MM]``
time, starts a message; any other non-blank line continues the message above it, so messages may
be one per line or separated by blank lines. A time without a date takes the last date seen, or
the ``YYYY-MM-DD`` in the file name; with neither the message has no time. Lines before the first
speaker are a preamble and are dropped.

Detection is deliberately strict, because a Markdown note has ``Word: text`` lines too: no
headings, fences, tables or front matter; at least 60% of the non-blank lines are speaker lines;
and speakers take turns: someone speaks twice, or the file is one exchange (two speaker lines,
``alice: hi`` and ``bob: hello``), the shortest conversation there is.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time

from aclarai.parsers.exports._common import decode, fail, head, stem
from aclarai.parsers.exports.base import Conversation, ExportReader, Message

_LINE = re.compile(
    r"(?:\[(?:(?P<date>\d{4}-\d{2}-\d{2})[ T])?"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2}))?\]\s*)?"
    r"(?P<speaker>[^\W\d_][^:,\t\[\]<>/\\#*`|]{0,39}?)[ \t]*:(?:[ \t]+(?P<text>.*))?"
)
_FILE_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_MARKDOWN = re.compile(r"#{1,6}\s|```|~~~|\|")
_MAX_WORDS = 4
_DETECT_LINES = 200


class PlainTextReader(ExportReader):
    """``speaker: text`` transcripts, with optional ``[time]`` prefixes."""

    name = "plaintext"
    extensions = (".txt", ".md")

    def detect(self, data: bytes, name: str) -> bool:
        lines = [line.strip() for line in head(data).splitlines() if line.strip()]
        lines = lines[:_DETECT_LINES]
        if not lines or lines[0] == "---" or any(_MARKDOWN.match(line) for line in lines):
            return False
        speakers = [turn.group("speaker").strip() for line in lines if (turn := _turn(line))]
        return (
            len(speakers) >= 2
            and len(speakers) * 10 >= len(lines) * 6
            and (len(set(speakers)) < len(speakers) or len(speakers) == 2)
        )

    def parse(self, data: bytes, name: str) -> list[Conversation]:
        text = decode(data, name)
        found = _FILE_DATE.search(stem(name))
        day = _date(found.group()) if found else None
        messages: list[Message] = []
        speaker: str | None = None
        lines: list[str] = []
        moment: datetime | None = None
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line:
                continue
            match = _turn(line)
            if match is None:
                if speaker is not None:
                    lines.append(line)
                continue
            if speaker is not None:
                _flush(messages, speaker, lines, moment)
            if match.group("date"):
                day = _date(match.group("date"))
                if day is None:
                    raise fail(name, f"line {number}: invalid date {match.group('date')}")
            speaker = match.group("speaker").strip()
            lines = [match.group("text") or ""]
            moment = _moment(match, day, name, number)
        if speaker is not None:
            _flush(messages, speaker, lines, moment)
        if not messages:
            raise fail(name, "no 'speaker: text' lines")
        return [
            Conversation(
                title=stem(name),
                messages=tuple(messages),
                format=self.name,
                source_name=name,
                created_at=messages[0].created_at,
            )
        ]


def _turn(line: str) -> re.Match[str] | None:
    """The match of a line that starts a message; None for any other line."""
    match = _LINE.fullmatch(line)
    if match is None or match.group("speaker").count(" ") >= _MAX_WORDS:
        return None
    return match


def _date(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _flush(
    messages: list[Message], speaker: str, lines: list[str], moment: datetime | None
) -> None:
    body = "\n".join(lines).strip()
    if body:
        messages.append(Message(speaker=speaker, text=body, created_at=moment))


def _moment(match: re.Match[str], day: date | None, name: str, number: int) -> datetime | None:
    if match.group("hour") is None or day is None:
        return None
    try:
        clock = time(
            int(match.group("hour")), int(match.group("minute")), int(match.group("second") or 0)
        )
    except ValueError as exc:
        raise fail(name, f"line {number}: invalid time ({exc})") from exc
    return datetime.combine(day, clock, UTC)
