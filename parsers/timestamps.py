"""The one timestamp format of aclarai: ISO 8601 UTC to the second, ``2024-06-03T09:00:00Z``.

Every stored or shown stamp uses it, so stamps compare correctly as text and the UTC day is the
first ten characters.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta

UTC_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def format_utc(epoch_s: float) -> str:
    """The stamp of a Unix time, its fraction of a second dropped (as ``time.gmtime`` does)."""
    # Date arithmetic rather than gmtime: the whole datetime range works on every platform.
    return (_EPOCH + timedelta(seconds=math.floor(epoch_s))).strftime(UTC_FORMAT)


def utc_now() -> str:
    """The stamp of the current time."""
    return format_utc(time.time())
