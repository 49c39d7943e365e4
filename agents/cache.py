"""A SQLite cache of model results, so that unchanged work costs no call.

Keys are :func:`cache_key` hashes of everything that determines a result: the model, the prompt
versions, the inputs. A value is the JSON of a successful result; failures are never stored, so a
claim whose evaluation failed is retried on the next run. ``bypass`` (``aclarai resync
--reevaluate``) ignores stored values but still records the fresh ones. The file is the caller's
choice (the daemon keeps it in the state directory); losing it only costs calls.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


def cache_key(*parts: Any) -> str:
    """A stable hash of JSON-serialisable ``parts`` (order matters)."""
    payload = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


class ResultCache:
    """Results by key in one SQLite file, safe to share between threads.

    Args:
        path: the database file (created with its folder if missing).
        bypass: never return stored values; still store new ones.
    """

    def __init__(self, path: Path, *, bypass: bool = False) -> None:
        self.path = path
        self.bypass = bypass
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute(_SCHEMA)

    def get(self, key: str) -> Any | None:
        """The stored value, or ``None`` when absent, unreadable or bypassed."""
        if self.bypass:
            return None
        with self._lock:
            row = self._db.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except json.JSONDecodeError:
            logger.warning("cache entry %s in %s is corrupt; recomputing", key[:12], self.path)
            return None

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serialisable) under ``key``, replacing any older one."""
        payload = json.dumps(value, ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO results (key, value, created_at) VALUES (?, ?, ?)",
                (key, payload, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ResultCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
