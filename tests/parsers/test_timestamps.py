"""The one stamp format: ISO 8601 UTC to the second, with ``Z``."""

from __future__ import annotations

import re
import time

from aclarai.parsers import format_utc, utc_now


def test_format_utc_drops_the_fraction_like_gmtime() -> None:
    assert format_utc(0) == "1970-01-01T00:00:00Z"
    assert format_utc(1717405200.999999) == "2024-06-03T09:00:00Z"
    assert format_utc(-0.5) == "1969-12-31T23:59:59Z"
    assert format_utc(1717405200.5) == time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(1717405200.5)
    )


def test_utc_now_is_the_current_second() -> None:
    before = format_utc(time.time())
    stamp = utc_now()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp)
    assert before <= stamp <= format_utc(time.time())
