"""``aclarai evaluate FILE.jsonl``: score ``{"id", "source", "claim"}`` lines, streaming.

Output lines come in input order, one per input line; a bad line (not UTF-8, not JSON, a field
missing) gives an error record for that line only. Input is read as bytes and each line decoded on
its own, the same way for a file and for standard input. Memory stays constant: lines are read,
scored and written in small chunks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import IO, Any

from aclarai.agents import EvalItem, Evaluator
from aclarai.daemon.service.jsonl import JsonLine, read_json_lines
from aclarai.parsers import SCORE_NAMES, named_scores

CHUNK = 64


def _item(line: JsonLine) -> tuple[Any, EvalItem | None, str | None]:
    """The line's id, its item, or why it has none."""
    record = line.record
    if record is None:
        return None, None, line.error
    ident = record.get("id")
    for field in ("source", "claim"):
        if not isinstance(record.get(field), str) or not record[field].strip():
            return ident, None, f"line {line.number}: field {field!r} must be a non-empty string"
        if not _is_text(record[field]):
            return ident, None, f"line {line.number}: field {field!r} holds a lone surrogate escape"
    return ident, EvalItem(claim=record["claim"], source=record["source"]), None


def _is_text(value: str) -> bool:
    """Whether ``value`` is Unicode text (JSON's ``\\ud800`` escapes can make it otherwise)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _dumps(record: dict[str, Any]) -> str:
    text = json.dumps(record, ensure_ascii=False)
    # An id echoed back may hold a lone surrogate: escaped, the line is still valid JSON.
    return text if _is_text(text) else json.dumps(record)


def evaluate_lines(lines: Iterable[bytes], evaluator: Evaluator) -> Iterator[dict[str, Any]]:
    """One output record per non-blank input line, in order."""
    read = read_json_lines(lines)
    while chunk := list(islice(read, CHUNK)):
        parsed = [_item(line) for line in chunk]
        items = [item for _, item, _ in parsed if item is not None]
        scores = iter(evaluator.evaluate_batch(items) if items else [])
        for ident, item, error in parsed:
            if item is None:
                yield {
                    "id": ident,
                    **dict.fromkeys(SCORE_NAMES),
                    "verdict": None,
                    "status": f"error: {error}",
                }
                continue
            score = next(scores)
            yield {
                "id": ident,
                **named_scores(score),
                "verdict": score.verdict,
                "status": score.status,
            }


@dataclass(frozen=True, slots=True)
class BatchCounts:
    errors: int
    """Lines that could not be read (an error record each)."""
    evaluated: int
    """Lines evaluated."""
    failed: int
    """Evaluations that gave no score (status other than ``ok``)."""


def run_batch(
    source: IO[bytes],
    out: IO[str],
    evaluator: Evaluator,
    *,
    progress: Callable[[int], None] | None = None,
) -> BatchCounts:
    """Stream ``source`` to ``out``; return what came of the lines."""
    errors = evaluated = failed = 0
    for count, record in enumerate(evaluate_lines(source, evaluator), 1):
        if record["status"].startswith("error"):
            errors += 1
        else:
            evaluated += 1
            failed += record["status"] != "ok"
        out.write(_dumps(record) + "\n")
        if progress is not None:
            progress(count)
    out.flush()
    return BatchCounts(errors, evaluated, failed)
