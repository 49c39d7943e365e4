"""Reading JSON-lines input the one way: as bytes, each line decoded on its own.

A file and standard input are read alike, and a bad line (not UTF-8, not JSON, not an object)
gives an error for that line only, naming it, while the rest is read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class JsonLine:
    """One non-blank input line: its object, or why it has none."""

    number: int
    record: dict[str, Any] | None
    error: str | None = None


def read_json_lines(lines: Iterable[bytes]) -> Iterator[JsonLine]:
    """Every non-blank line of ``lines`` (a binary file, ``sys.stdin.buffer``), in order."""
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield JsonLine(
                number,
                None,
                f"line {number}: not UTF-8: invalid byte 0x{raw[exc.start]:02x} "
                f"at column {exc.start + 1}",
            )
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            yield JsonLine(number, None, f"line {number}: invalid JSON: {exc.msg}")
            continue
        except (ValueError, RecursionError) as exc:
            # Valid JSON that Python will not decode: a number of thousands of digits, or
            # nesting deeper than the interpreter's recursion limit.
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            yield JsonLine(number, None, f"line {number}: invalid JSON: {reason}")
            continue
        if not isinstance(record, dict):
            yield JsonLine(number, None, f"line {number}: expected a JSON object")
            continue
        yield JsonLine(number, record)
