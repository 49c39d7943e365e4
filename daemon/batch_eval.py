"""``aclarai evaluate FILE.jsonl``: score ``{"id", "source", "claim"}`` lines, streaming.

Output lines come in input order, one per input line; a bad line gives an error record for that
line only. Memory stays constant: lines are read, scored and written in small chunks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import IO, Any

from aclarai.agents import EvalItem, Evaluator

CHUNK = 64


def _parse_line(number: int, line: str) -> tuple[Any, EvalItem | None, str | None]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, None, f"line {number}: invalid JSON: {exc.msg}"
    if not isinstance(record, dict):
        return None, None, f"line {number}: expected a JSON object"
    ident = record.get("id")
    for field in ("source", "claim"):
        if not isinstance(record.get(field), str) or not record[field].strip():
            return ident, None, f"line {number}: field {field!r} must be a non-empty string"
    return ident, EvalItem(claim=record["claim"], source=record["source"]), None


def evaluate_lines(lines: Iterable[str], evaluator: Evaluator) -> Iterator[dict[str, Any]]:
    """One output record per non-blank input line, in order."""
    numbered = ((n, line) for n, line in enumerate(lines, 1) if line.strip())
    while chunk := list(islice(numbered, CHUNK)):
        parsed = [_parse_line(n, line) for n, line in chunk]
        items = [item for _, item, _ in parsed if item is not None]
        scores = iter(evaluator.evaluate_batch(items) if items else [])
        for ident, item, error in parsed:
            if item is None:
                yield {
                    "id": ident,
                    "entailed_score": None,
                    "coverage_score": None,
                    "decontextualization_score": None,
                    "verdict": None,
                    "status": f"error: {error}",
                }
                continue
            score = next(scores)
            yield {
                "id": ident,
                "entailed_score": score.entailed_score,
                "coverage_score": score.coverage_score,
                "decontextualization_score": score.decontextualization_score,
                "verdict": score.verdict,
                "status": score.status,
            }


def run_batch(
    source: IO[str],
    out: IO[str],
    evaluator: Evaluator,
    *,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Stream ``source`` to ``out``; return the number of error records."""
    errors = 0
    for count, record in enumerate(evaluate_lines(source, evaluator), 1):
        errors += record["status"].startswith("error")
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        if progress is not None:
            progress(count)
    out.flush()
    return errors


def terminal_counter() -> Callable[[int], None] | None:
    if not sys.stderr.isatty():
        return None

    def show(n: int) -> None:
        if n % 50 == 0:
            sys.stderr.write(f"\revaluated {n} claims")
            sys.stderr.flush()

    return show
