"""What an endpoint may spend (a rate limit) and what it has spent (usage counters)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields


@dataclass(slots=True)
class UsageCounters:
    """What an endpoint has cost so far; shared by the client and the agents using it."""

    calls: int = 0
    """HTTP requests sent, retries included."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    failures: int = 0
    """Calls that gave up: transient errors past ``max_attempts``, other errors, bad output."""
    retries: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: int) -> None:
        """Add to counters by name, atomically."""
        with self._lock:
            for name, value in deltas.items():
                setattr(self, name, getattr(self, name) + value)

    def snapshot(self) -> dict[str, int]:
        """The counters as a plain dict."""
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "_lock"}

    def summary(self) -> str:
        """One line for ``aclarai status`` and the resync summary."""
        s = self.snapshot()
        return (
            f"LLM calls {s['calls']} (retries {s['retries']}, failures {s['failures']}), "
            f"tokens {s['prompt_tokens']} in / {s['completion_tokens']} out, "
            f"cache hits {s['cache_hits']}"
        )


class RateLimiter:
    """At most ``max_calls`` starts in any ``period_s`` window (a sliding log of start times)."""

    def __init__(
        self,
        max_calls: int,
        period_s: float = 60.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_calls < 1 or period_s <= 0:
            raise ValueError("max_calls must be >= 1 and period_s > 0")
        self._max_calls = max_calls
        self._period_s = period_s
        self._clock = clock
        self._sleep = sleep
        self._starts: list[float] = []
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Block until a call may start; return the seconds waited."""
        waited = 0.0
        while True:
            with self._lock:
                now = self._clock()
                self._starts = [t for t in self._starts if now - t < self._period_s]
                if len(self._starts) < self._max_calls:
                    self._starts.append(now)
                    return waited
                delay = self._starts[0] + self._period_s - now
            self._sleep(delay)
            waited += delay
