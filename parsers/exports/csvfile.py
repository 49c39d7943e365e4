"""CSV and TSV chat logs with a header row.

The columns are found by name (case, spaces and dashes ignored): the speaker in ``speaker``,
``user_name``, ``username``, ``author``, ``from``, ``sender``, ``user`` or ``name``; the text in
``message``, ``text``, ``content`` or ``body``; the time, optional, in ``timestamp``, ``time``,
``date``, ``datetime`` or ``created_at`` (ISO 8601, or seconds or milliseconds since the epoch);
a message id, optional, in ``id`` or ``message_id``. The delimiter is a tab for ``.tsv`` files and
otherwise whichever of tab, comma, semicolon or bar the header uses most. Rows without text are
skipped; the file is one conversation titled after its name.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from datetime import datetime

from aclarai.parsers.exports._common import decode, fail, from_epoch, from_iso, head, stem
from aclarai.parsers.exports.base import Conversation, ExportReader, Message

_SPEAKER = ("speaker", "user_name", "username", "author", "from", "sender", "user", "name")
_TEXT = ("message", "text", "content", "body")
_TIME = ("timestamp", "time", "date", "datetime", "created_at")
_ID = ("id", "message_id")
_DELIMITERS = "\t,;|"
_MILLISECONDS = 10**11
"""An epoch number above this is in milliseconds (10**11 seconds is the year 5138)."""


class CsvReader(ExportReader):
    """CSV/TSV with a header naming the speaker and text columns."""

    name = "csv"
    extensions = (".csv", ".tsv")

    def detect(self, data: bytes, name: str) -> bool:
        first = head(data).partition("\n")[0]
        columns = _header(first, _delimiter(first, name))
        return (
            len(columns) >= 2
            and _find(columns, _SPEAKER) is not None
            and _find(columns, _TEXT) is not None
        )

    def parse(self, data: bytes, name: str) -> list[Conversation]:
        text = decode(data, name)
        delimiter = _delimiter(text.partition("\n")[0], name)
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
        try:
            columns = [_normal(cell) for cell in next(reader, [])]
            speaker_at, text_at = _find(columns, _SPEAKER), _find(columns, _TEXT)
            if speaker_at is None or text_at is None:
                raise fail(
                    name,
                    f"no {'speaker' if speaker_at is None else 'text'} column in the header "
                    f"({', '.join(columns) or 'empty'}); expected one of "
                    f"{', '.join(_SPEAKER if speaker_at is None else _TEXT)}",
                )
            time_at, id_at = _find(columns, _TIME), _find(columns, _ID)
            messages = []
            for row in reader:
                body = _cell(row, text_at).strip()
                if not body:
                    continue
                stamp = _cell(row, time_at).strip()
                messages.append(
                    Message(
                        speaker=_cell(row, speaker_at).strip() or "unknown",
                        text=body,
                        created_at=_moment(stamp),
                        id=_cell(row, id_at).strip() or None,
                    )
                )
        except csv.Error as exc:
            raise fail(name, f"not valid CSV at line {reader.line_num} ({exc})") from exc
        if not messages:
            return []
        return [
            Conversation(
                title=stem(name),
                messages=tuple(messages),
                format=self.name,
                source_name=name,
                created_at=messages[0].created_at,
            )
        ]


def _normal(cell: str) -> str:
    return cell.strip().strip('"').lower().replace(" ", "_").replace("-", "_")


def _delimiter(first_line: str, name: str) -> str:
    if name.lower().endswith(".tsv"):
        return "\t"
    return max(_DELIMITERS, key=first_line.count)


def _header(first_line: str, delimiter: str) -> list[str]:
    return [_normal(cell) for cell in first_line.split(delimiter)]


def _find(columns: Sequence[str], names: Sequence[str]) -> int | None:
    for wanted in names:
        if wanted in columns:
            return columns.index(wanted)
    return None


def _cell(row: Sequence[str], index: int | None) -> str:
    return row[index] if index is not None and index < len(row) else ""


def _moment(stamp: str) -> datetime | None:
    if not stamp:
        return None
    try:
        number = float(stamp)
    except ValueError:
        return from_iso(stamp)
    return from_epoch(number / 1000 if number > _MILLISECONDS else number)
