"""An endpoint's limits (rate, adaptive concurrency), its usage counters, whether it answers, and
the running of an agent's calls side by side within them."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from aclarai.parsers import EvaluationError

R = TypeVar("R")


@dataclass(slots=True)
class UsageCounters:
    """What an endpoint has cost so far; shared by the client and the agents using it."""

    calls: int = 0
    """HTTP requests sent, retries included."""
    prompt_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens the server answered from its prompt cache, where it says so."""
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
        share = 100 * s["cached_tokens"] / s["prompt_tokens"] if s["prompt_tokens"] else 0.0
        return (
            f"LLM calls {s['calls']} (retries {s['retries']}, failures {s['failures']}), "
            f"tokens {s['prompt_tokens']} in ({s['cached_tokens']} cached, {share:.0f}%) / "
            f"{s['completion_tokens']} out, "
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


class AdaptiveLimit:
    """A concurrency limit that follows what the server can take, between 1 and ``maximum``.

    A server with fewer slots than we send queues the extra requests, so they time out or come
    back as 429: each such overload halves the limit. Calls that come back in well under their
    timeout add up, and after ``limit`` of them in a row the limit grows by one (slow start's
    additive half), so one quick burst does not undo a cut.
    """

    def __init__(self, maximum: int, *, quick_fraction: float = 0.25) -> None:
        if maximum < 1:
            raise ValueError("maximum must be >= 1")
        self.maximum = maximum
        self._limit = maximum
        self._active = 0
        self._quick_streak = 0
        self._quick_fraction = quick_fraction
        self._changed = threading.Condition()

    @property
    def limit(self) -> int:
        """Calls allowed in flight now."""
        with self._changed:
            return self._limit

    def acquire(self) -> None:
        """Block until a call may start."""
        with self._changed:
            while self._active >= self._limit:
                self._changed.wait()
            self._active += 1

    def release(self) -> None:
        """A call ended (however it ended)."""
        with self._changed:
            self._active -= 1
            self._changed.notify_all()

    def cap(self, maximum: int) -> None:
        """Never allow more than ``maximum`` (what the server says it can serve) from now on."""
        with self._changed:
            self.maximum = max(1, min(self.maximum, maximum))
            self._limit = min(self._limit, self.maximum)

    def overloaded(self) -> None:
        """A call timed out or was answered 429: halve the limit."""
        with self._changed:
            self._quick_streak = 0
            self._limit = max(1, self._limit // 2)

    def finished(self, elapsed_s: float, timeout_s: float) -> None:
        """A call succeeded after ``elapsed_s`` of its ``timeout_s``."""
        with self._changed:
            if elapsed_s > timeout_s * self._quick_fraction:
                self._quick_streak = 0
                return
            self._quick_streak += 1
            if self._quick_streak >= self._limit and self._limit < self.maximum:
                self._limit += 1
                self._quick_streak = 0
                self._changed.notify_all()


class EndpointHealth:
    """Whether an endpoint answers: one log line when it goes away and one when it comes back.

    Args:
        endpoint: the base URL, for the log lines.
        log: where the two lines go.
        clock: wall-clock seconds (``down_since`` is shown by ``aclarai status``).
    """

    def __init__(
        self,
        endpoint: str,
        log: logging.Logger,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._endpoint = endpoint
        self._log = log
        self._clock = clock
        self._lock = threading.Lock()
        self.down_since: float | None = None
        """When the endpoint stopped answering; ``None`` while it answers."""
        self.last_error: str | None = None

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def failed(self, error: BaseException) -> None:
        """A call gave up because the endpoint could not be reached."""
        with self._lock:
            self.last_error = str(error)
            if self.down_since is not None:
                return
            self.down_since = self._clock()
        self._log.warning(
            "model endpoint %s is unreachable (%s); work stays queued and is retried with backoff",
            self._endpoint,
            error,
        )

    def answered(self) -> None:
        """The endpoint answered a call."""
        with self._lock:
            since = self.down_since
            if since is None:
                return
            self.down_since = None
            self.last_error = None
        self._log.warning(
            "model endpoint %s is back after %.0f s", self._endpoint, self._clock() - since
        )


def run_all(
    function: Callable[[Any], R], jobs: Sequence[Any], workers: int
) -> list[R | EvaluationError]:
    """``function`` over ``jobs`` on up to ``workers`` threads; errors returned, not raised."""

    def guarded(job: Any) -> R | EvaluationError:
        try:
            return function(job)
        except EvaluationError as exc:
            return exc

    if len(jobs) <= 1:
        return [guarded(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(jobs)))) as pool:
        return list(pool.map(guarded, jobs))
