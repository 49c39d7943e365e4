"""``aclarai evaluate --events FILE.jsonl``: batch evaluation of agent answers.

Each line is a request in the evaluation service's shape (the body of ``POST /api/v1/evaluate``);
each output line is the service's response for it, in input order, so a batch and the HTTP API
give the same answer for the same event. A bad line gives an error record naming the line and the
field, and the run goes on. ``workers`` threads evaluate at once; at most a few times that many
events are in memory, however long the file.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any

from pydantic import ValidationError

from aclarai.daemon.service.core import (
    EvaluateRequest,
    EvaluateResponse,
    ServiceCore,
    describe_validation_error,
)
from aclarai.daemon.service.jsonl import JsonLine, read_json_lines
from aclarai.parsers import AclaraiError, EvaluatorUnavailable

log = logging.getLogger(__name__)

IN_FLIGHT_PER_WORKER = 4


@dataclass
class EventBatchSummary:
    """What came of a batch: verdict counts, the mean confidence, errors, time."""

    verdicts: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    """Lines that could not be read or evaluated (an error record each)."""
    unavailable: int = 0
    """Events left without a verdict because the model endpoint could not be reached."""
    confidences: list[float] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def evaluated(self) -> int:
        return sum(self.verdicts.values())

    @property
    def mean_confidence(self) -> float | None:
        return sum(self.confidences) / len(self.confidences) if self.confidences else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "events": self.evaluated + self.errors,
            "evaluated": self.evaluated,
            "errors": self.errors,
            "model_unreachable": self.unavailable,
            "verdicts": {v: self.verdicts.get(v, 0) for v in ("pass", "review", "fail")},
            "mean_confidence": self.mean_confidence,
            "elapsed_s": round(self.elapsed_s, 3),
        }


def _request(line: JsonLine) -> EvaluateRequest:
    if line.record is None:
        raise AclaraiError(line.error or f"line {line.number}: unreadable")
    try:
        return EvaluateRequest.model_validate(line.record)
    except ValidationError as exc:
        raise AclaraiError(f"line {line.number}: {describe_validation_error(exc)}") from exc


def _evaluate(core: ServiceCore, line: JsonLine) -> EvaluateResponse:
    request = _request(line)
    try:
        return core.evaluate(request)
    except AclaraiError as exc:
        raise AclaraiError(f"line {line.number}: {exc}") from exc


def evaluate_events(
    lines: Iterable[JsonLine], core: ServiceCore, *, workers: int = 1
) -> Iterator[tuple[JsonLine, EvaluateResponse | AclaraiError]]:
    """Each line with its response, or the error that took its place, in input order.

    No more events run at once than the model endpoint serves: a judge's timeout counts from
    when it was asked, so an event queued behind others at a one-slot server would time out.
    """
    if core.requests_at_once is not None:
        serves = core.requests_at_once()
        if serves < workers:
            log.info(
                "the model endpoint serves %d request(s) at once: %d event(s) at a time",
                serves,
                serves,
            )
            workers = serves
    window: deque[tuple[JsonLine, Future[EvaluateResponse]]] = deque()
    with ThreadPoolExecutor(
        max_workers=max(1, workers), thread_name_prefix="aclarai-batch"
    ) as pool:
        for line in lines:
            window.append((line, pool.submit(_evaluate, core, line)))
            if len(window) >= max(1, workers) * IN_FLIGHT_PER_WORKER:
                yield _settle(*window.popleft())
        while window:
            yield _settle(*window.popleft())


def _settle(
    line: JsonLine, future: Future[EvaluateResponse]
) -> tuple[JsonLine, EvaluateResponse | AclaraiError]:
    try:
        return line, future.result()
    except AclaraiError as exc:
        return line, exc
    except Exception as exc:
        # One event must not end the batch, even through a bug: its record says what happened.
        log.exception("line %d: evaluation crashed", line.number)
        return line, AclaraiError(f"line {line.number}: {type(exc).__name__}: {exc}")


def run_event_batch(
    source: IO[bytes], out: IO[str], core: ServiceCore, *, workers: int = 1
) -> EventBatchSummary:
    """Stream responses for ``source``'s events to ``out`` as JSON lines; return the summary."""
    summary = EventBatchSummary()
    started = time.monotonic()
    for line, result in evaluate_events(read_json_lines(source), core, workers=workers):
        if isinstance(result, EvaluateResponse):
            summary.verdicts[result.verdict] += 1
            if result.confidence is not None:
                summary.confidences.append(result.confidence)
            out.write(result.model_dump_json() + "\n")
            continue
        summary.errors += 1
        summary.unavailable += isinstance(result.__cause__, EvaluatorUnavailable)
        ident = (line.record or {}).get("event_id")
        record = {"id": ident if isinstance(ident, str) else None, "error": str(result)}
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
    out.flush()
    summary.elapsed_s = time.monotonic() - started
    return summary


def format_event_summary(summary: EventBatchSummary) -> str:
    """A few lines for a person: counts per verdict, the mean confidence, errors, time."""
    mean = summary.mean_confidence
    lines = [
        f"events evaluated   {summary.evaluated}",
        *(f"  {v:<16} {summary.verdicts.get(v, 0)}" for v in ("pass", "review", "fail")),
        f"mean confidence    {'-' if mean is None else f'{mean:.3f}'}",
        f"errors             {summary.errors}",
        f"time               {summary.elapsed_s:.2f} s",
    ]
    return "\n".join(lines)
