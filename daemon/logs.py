"""Log set-up, done once by the CLI: human-readable on a terminal, JSON lines when asked."""

from __future__ import annotations

import json
import logging
import sys

from aclarai.parsers import format_utc


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": format_utc(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def setup_logging(level: str = "INFO", fmt: str = "auto") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S")
        )
    root = logging.getLogger("aclarai")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").handlers[:] = [handler]
    for noisy in ("httpx", "openai", "neo4j", "apscheduler", "watchdog"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # watchdog reports its own orderly shutdown ("queue_events() called when the thread is
    # inactive") as an error; it is not one.
    logging.getLogger("watchdog.observers.inotify").setLevel(logging.CRITICAL)
