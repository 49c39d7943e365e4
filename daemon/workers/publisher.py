"""The daemon's side of grading over Redis: publish jobs, wait for their results.

:class:`RemoteGrading` publishes each job to the work stream of its grader (one script call:
the job's key is set, then the job added, only if no job of that key is out already) and waits
for the result a worker adds to this vault's results stream. One thread reads that stream
through a consumer group of its own and hands each result to the caller waiting on its key.
:class:`RemoteExtractor` and :class:`RemoteEvaluator` put this behind the agents' interfaces, so
the consumer's stages (one store transaction per take, one writer, the ``ver`` rules) are the
same as when grading at home; a block's extraction is one job, a block's claims one more.

At least once, applied once:

- A result is acknowledged only once its take is through (:meth:`RemoteGrading.settle`): a
  daemon killed or stopped before leaves it pending, and the next start reads it back first and
  uses it for the same work (same key) instead of publishing that again.
- A result nobody waits for (a second delivery, work whose text changed meanwhile) is kept an
  hour in case the same work is asked again, then acknowledged and dropped.
- A job whose key vanished with no result (a Redis server that lost it) is published again.
- While Redis is unreachable every waiting caller gets :class:`BrokerUnavailable`: its note
  goes back to the queue and is retried, as in a model outage.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

import redis

from aclarai.agents import (
    Claim,
    ClaimExtractor,
    EvalItem,
    Evaluator,
    ExtractionInput,
    Score,
    Tool,
    Utterance,
    as_read,
)
from aclarai.daemon.config import GradingWorkersSettings
from aclarai.daemon.redis_link import Backoff, broker, ensure_group, entries_of, millis, redact
from aclarai.daemon.workers.roster import backlog, workers_seen
from aclarai.daemon.workers.wire import (
    Job,
    Outcome,
    decode_outcome,
    encode_job,
    job_key,
    results_stream,
    work_stream,
)
from aclarai.parsers import (
    BrokerUnavailable,
    EvaluationError,
    PayloadError,
    TransientError,
)

log = logging.getLogger(__name__)

GROUP = "daemon"
"""The results stream's consumer group; one daemon holds a vault, so one consumer reads it."""
JOB_KEY_TTL_S = 7 * 24 * 3600
ORPHAN_TTL_S = 3600.0
ORPHANS_MAX = 100_000
RECHECK_S = 5.0
"""How often a waiting job's key is looked for (a job lost with its key is published again)."""
FIRST_NOTICE_S = 5.0
NOTICE_EVERY_S = 30.0
CLOSE_WAIT_S = 0.2

_PUBLISH = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then
  return redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'payload', ARGV[4])
end
return false
"""


class GradingStopped(TransientError):
    """The daemon is stopping: the note goes back to the queue, its jobs stay published."""


@dataclass
class _Waiter:
    job: Job
    done: threading.Event = field(default_factory=threading.Event)
    outcome: Outcome | None = None
    published_at: float | None = None
    """When it was published; ``None`` while it waits for room in the work stream."""
    checked_at: float = 0.0
    entry_id: bytes | None = None
    """Its entry in the work stream, when this run added it."""
    missing: int = 0
    """Rechecks in a row that found the job lost: its key gone without its result, or its
    entry trimmed from the work stream unread."""


class RemoteGrading:
    """Publishes grading jobs and hands back their results; see the module docstring.

    Args:
        client: a Redis client (bytes in, bytes out).
        settings: the ``grading_workers`` section.
        grader: the identity of the grader every job asks for.
        vault_id: names this vault's results stream.
    """

    def __init__(
        self,
        client: redis.Redis,
        settings: GradingWorkersSettings,
        *,
        grader: str,
        vault_id: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        assert settings.redis_url is not None
        self._redis = client
        self._s = settings
        self._url = settings.redis_url
        self.grader = grader
        self.work_stream = work_stream(settings.prefix, grader)
        self.results_stream = results_stream(settings.prefix, vault_id)
        self._clock = clock
        self._publish_script = client.register_script(_PUBLISH)
        self._lock = threading.Lock()
        self._waiters: dict[str, _Waiter] = {}
        self._orphans: OrderedDict[str, tuple[bytes, float]] = OrderedDict()
        self._orphan_outcomes: dict[str, Outcome] = {}
        self._handed: list[bytes] = []
        """Results given to their callers, acknowledged once their take is through."""
        self._spare: list[bytes] = []
        """Results nobody will use (repeats, unreadable, expired), to acknowledge."""
        self._broker_error: BrokerUnavailable | None = None
        self._cancelled = threading.Event()
        self._closed = threading.Event()
        self._last_result = clock()
        self._next_notice = 0.0
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()
        self._publishing = threading.Lock()
        self._primed = threading.Event()
        """Set once the reader has read what waited in the results stream when it started: a
        result left there for this same work is then found instead of publishing it again."""

    # The caller's side.

    def run(self, jobs: Sequence[Job]) -> list[Outcome]:
        """Publish ``jobs`` (those not out already) and return their results, in order.

        Raises:
            BrokerUnavailable: Redis could not be reached (the work waits in the queue).
            GradingStopped: :meth:`cancel` was called while waiting.
        """
        self._start()
        while not self._primed.wait(0.1):
            self._raise_if_stopped()
        self._raise_if_stopped()
        waiters: list[_Waiter] = []
        fresh: list[_Waiter] = []
        with self._lock:
            for job in jobs:
                key = job.key
                waiter = self._waiters.get(key)
                if waiter is None:
                    waiter = _Waiter(job)
                    orphan = self._orphans.pop(key, None)
                    if orphan is not None:
                        # A result a killed run left unacknowledged, for this same work.
                        waiter.outcome = self._orphan_outcomes.pop(key)
                        self._handed.append(orphan[0])
                        waiter.done.set()
                    else:
                        self._waiters[key] = waiter
                        fresh.append(waiter)
                waiters.append(waiter)
        try:
            self._publish(fresh)
            for waiter in waiters:
                self._wait(waiter)
        finally:
            with self._lock:
                for waiter in fresh:
                    if self._waiters.get(waiter.job.key) is waiter and not waiter.done.is_set():
                        del self._waiters[waiter.job.key]
        return [cast(Outcome, w.outcome) for w in waiters]

    def settle(self) -> None:
        """Acknowledge the results handed out so far: their take is through (stored, written,
        or sent back to the queue)."""
        with self._lock:
            done, self._handed = self._handed, []
        if not done:
            return
        try:
            with broker(self._url):
                self._redis.xack(self.results_stream, GROUP, *done)
        except BrokerUnavailable:
            with self._lock:
                self._handed.extend(done)

    def cancel(self) -> None:
        """Stop waiting (shutting down): callers get :class:`GradingStopped` at once."""
        self._cancelled.set()

    def close(self) -> None:
        self._cancelled.set()
        self._closed.set()
        if self._thread is not None:
            # Not for its blocking read to end: closing the client (next) ends that at once.
            self._thread.join(timeout=CLOSE_WAIT_S)

    def _start(self) -> None:
        with self._thread_lock:
            if self._thread is None and not self._closed.is_set():
                self._thread = threading.Thread(
                    target=self._read_results, name="aclarai-results", daemon=True
                )
                self._thread.start()

    def _publish(self, waiters: Sequence[_Waiter]) -> None:
        """Publish in chunks of at most ``max_backlog`` jobs, each once the work stream has room
        for it; one caller at a time, so that callers together never overfill it."""
        size = self._s.max_backlog
        with self._publishing:
            for start in range(0, len(waiters), size):
                chunk = waiters[start : start + size]
                self._wait_for_room(len(chunk))
                with broker(self._url):
                    pipe = self._redis.pipeline(transaction=False)
                    for waiter in chunk:
                        self._add_job(waiter.job, pipe)
                    added = pipe.execute()
                now = self._clock()
                for waiter, entry_id in zip(chunk, added, strict=True):
                    # None: a job of this key was out already (an earlier run published it).
                    waiter.entry_id = entry_id
                    waiter.published_at = waiter.checked_at = now

    def _add_job(self, job: Job, client: redis.Redis | redis.client.Pipeline) -> None:
        self._publish_script(
            keys=[job_key(self._s.prefix, job.key), self.work_stream],
            args=[self.results_stream, JOB_KEY_TTL_S, 4 * self._s.max_backlog, encode_job(job)],
            client=client,
        )

    def _wait_for_room(self, count: int) -> None:
        """Wait while the work stream could not take ``count`` more jobs within ``max_backlog``."""
        noticed = False
        while True:
            with broker(self._url):
                waiting = backlog(self._redis, self.work_stream)
            if waiting + count <= self._s.max_backlog:
                if noticed:
                    log.info("grading backlog has room again (%d job(s))", waiting)
                return
            if not noticed:
                log.info("grading backlog full (%d job(s)); publishing waits", waiting)
                noticed = True
            if self._cancelled.wait(0.5):
                raise GradingStopped("stopping while the grading backlog was full")

    def _wait(self, waiter: _Waiter) -> None:
        while not waiter.done.wait(0.2):
            self._raise_if_stopped()
            with self._lock:
                dropped = self._waiters.get(waiter.job.key) is not waiter
            if dropped and not waiter.done.is_set():
                # Shared with a caller whose publishing failed: this note is tried again.
                raise GradingStopped("a grading job shared with another note was not published")

    def _raise_if_stopped(self) -> None:
        if self._cancelled.is_set():
            raise GradingStopped("stopping: grading jobs left to the workers")
        error = self._broker_error
        if error is not None:
            raise error

    # The results reader's side.

    def _read_results(self) -> None:
        ready = down = False
        backoff = Backoff()
        while not self._closed.is_set():
            try:
                if not ready:
                    ensure_group(self._redis, self._url, self.results_stream, GROUP)
                    # Results a killed run read but never settled come first, then those
                    # nobody read yet, before any caller publishes.
                    self._read("0", None)
                    while self._read(">", None):
                        pass
                    self._primed.set()
                    if down:
                        log.info("Redis at %s is reachable again; grading resumes", self._where)
                    ready, down = True, False
                    backoff.reset()
                    self._broker_error = None
                self._read(">", millis(self._s.block_s))
                self._housekeeping()
                continue
            except Exception as exc:
                if self._closed.is_set():
                    return  # closing the client ended the blocking read
                if isinstance(exc, BrokerUnavailable):
                    if not down:
                        log.warning(
                            "Redis unavailable (%s); notes being graded wait in the queue", exc
                        )
                    down = True
                    self._broker_error = exc
                elif not (isinstance(exc, redis.ResponseError) and "NOGROUP" in str(exc)):
                    log.exception("reading grading results failed; retrying")
            ready = False
            self._closed.wait(backoff.next_s())

    @property
    def _where(self) -> str:
        return redact(self._url)

    def _read(self, cursor: str, block_ms: int | None) -> int:
        """Hand out the results after ``cursor`` (all pending ones from ``"0"``); how many."""
        read = 0
        while not self._closed.is_set():
            with broker(self._url):
                reply = self._redis.xreadgroup(
                    GROUP, GROUP, {self.results_stream: cursor}, count=256, block=block_ms
                )
            entries = entries_of(reply)
            for entry_id, fields in entries:
                self._deliver(entry_id, fields)
            read += len(entries)
            if cursor == ">" or not entries:
                return read
            cursor = entries[-1][0]
        return read

    def _deliver(self, entry_id: bytes, fields: dict[bytes, bytes] | None) -> None:
        raw = (fields or {}).get(b"payload")
        try:
            if raw is None:
                raise PayloadError("payload: field missing from the entry")
            outcome = decode_outcome(raw)
        except Exception as exc:
            # An entry nobody can read must not stop the reader, which would meet it again.
            log.warning("grading result %s dropped: %s", entry_id.decode(), exc)
            with self._lock:
                self._spare.append(entry_id)
            return
        with self._lock:
            held = self._orphans.get(outcome.key)
            if entry_id in self._handed or (held is not None and held[0] == entry_id):
                return  # read again after an outage: held already
            self._last_result = self._clock()
            waiter = self._waiters.pop(outcome.key, None)
            if waiter is not None:
                waiter.outcome = outcome
                self._handed.append(entry_id)
                waiter.done.set()
            elif outcome.key in self._orphans:
                self._spare.append(entry_id)
            else:
                self._orphans[outcome.key] = (entry_id, self._clock())
                self._orphan_outcomes[outcome.key] = outcome

    def _housekeeping(self) -> None:
        now = self._clock()
        with self._lock:
            while self._orphans:
                key, (entry_id, at) = next(iter(self._orphans.items()))
                if now - at < ORPHAN_TTL_S and len(self._orphans) <= ORPHANS_MAX:
                    break
                del self._orphans[key]
                del self._orphan_outcomes[key]
                self._spare.append(entry_id)
            spare, self._spare = self._spare, []
            due = [
                w
                for w in self._waiters.values()
                if w.published_at is not None and now - w.checked_at >= RECHECK_S
            ]
            waiting = len(self._waiters)
            quiet = now - self._last_result
        if spare:
            with broker(self._url):
                self._redis.xack(self.results_stream, GROUP, *spare)
        if due:
            self._recheck(due, now)
        if waiting and quiet >= FIRST_NOTICE_S and now >= self._next_notice:
            self._notice()
            self._next_notice = now + NOTICE_EVERY_S
        elif not waiting:
            self._next_notice = 0.0

    def _recheck(self, due: list[_Waiter], now: float) -> None:
        """Publish again the jobs found lost twice in a row: their key gone with no result (a
        Redis server that lost them), or their entry trimmed from the work stream unread."""
        with broker(self._url):
            pipe = self._redis.pipeline(transaction=False)
            for waiter in due:
                pipe.exists(job_key(self._s.prefix, waiter.job.key))
                if waiter.entry_id is not None:
                    pipe.xrange(self.work_stream, waiter.entry_id, waiter.entry_id, count=1)
            found = iter(pipe.execute())
        lost = []
        for waiter in due:
            key_there = bool(next(found))
            entry_there = waiter.entry_id is None or bool(next(found))
            waiter.checked_at = now
            if waiter.done.is_set() or (key_there and entry_there):
                waiter.missing = 0
                continue
            waiter.missing += 1
            if waiter.missing >= 2:
                waiter.missing = 0
                lost.append(waiter)
        if lost:
            log.warning("%d grading job(s) lost by Redis; published again", len(lost))
            with broker(self._url):
                pipe = self._redis.pipeline(transaction=False)
                for waiter in lost:
                    pipe.delete(job_key(self._s.prefix, waiter.job.key))
                    self._add_job(waiter.job, pipe)
                added = pipe.execute()
            for waiter, entry_id in zip(lost, added[1::2], strict=True):
                waiter.entry_id = entry_id

    def _notice(self) -> None:
        with broker(self._url):
            jobs = backlog(self._redis, self.work_stream)
            seen = [w for w in workers_seen(self._redis, self._s.prefix) if w.live]
        mine = [w for w in seen if w.stream == self.work_stream]
        if not mine:
            log.warning(
                "waiting for grading workers: %d job(s) in the backlog, no live worker for "
                "%s (start `aclarai worker --redis %s` beside a model)",
                jobs,
                self.grader,
                self._where,
            )
        else:
            log.info(
                "waiting for grading workers: %d job(s) in the backlog, %d worker(s) live (%s)",
                jobs,
                len(mine),
                ", ".join(w.name for w in mine),
            )


class RemoteExtractor(ClaimExtractor):
    """Extracts through the workers: one job per block."""

    def __init__(self, grading: RemoteGrading, *, name: str, version: str, fresh: bool = False):
        self._grading = grading
        self.name = name
        self.version = version
        self._fresh = fresh

    def extract_batch(self, inputs: Sequence[ExtractionInput]) -> list[list[Claim]]:
        found = []
        for outcome in self.extract_each(inputs):
            if isinstance(outcome, EvaluationError):
                raise outcome
            found.append(outcome)
        return found

    def extract_each(
        self, inputs: Sequence[ExtractionInput]
    ) -> list[list[Claim] | EvaluationError]:
        jobs = [
            Job("extract", self._grading.grader, self._grading.results_stream, self._fresh, (i,))
            for i in inputs
        ]
        results: list[list[Claim] | EvaluationError] = []
        for outcome in self._grading.run(jobs):
            if outcome.error is not None:
                results.append(EvaluationError(outcome.error))
                continue
            (claims,) = outcome.claims
            results.append(EvaluationError(claims) if isinstance(claims, str) else list(claims))
        return results


class RemoteEvaluator(Evaluator):
    """Scores through the workers: one job per block's claims (items that share a source and
    window), so a worker grades them in one call as at home. With ``search`` (the per-agent
    mode's ``vector_search_utterances`` over the daemon's index) each job carries the utterances
    it finds for each claim."""

    def __init__(
        self,
        grading: RemoteGrading,
        *,
        model_id: str,
        fresh: bool = False,
        search: Tool | None = None,
    ):
        self._grading = grading
        self._model_id = model_id
        self._fresh = fresh
        self._search = search
        self.name = "workers"

    @property
    def model_id(self) -> str:
        return self._model_id

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        groups: list[list[EvalItem]] = []
        for item in items:
            if groups and (groups[-1][0].source, groups[-1][0].context) == (
                item.source,
                item.context,
            ):
                groups[-1].append(item)
            else:
                groups.append([item])
        grader, reply_to = self._grading.grader, self._grading.results_stream
        jobs = [
            Job("evaluate", grader, reply_to, self._fresh, items=tuple(g), nearby=self._nearby(g))
            for g in groups
        ]
        scores: list[Score] = []
        for group, outcome in zip(groups, self._grading.run(jobs), strict=True):
            if outcome.error is not None or len(outcome.scores) != len(group):
                status = f"failed: {outcome.error or 'a worker returned a short result'}"
                scores.extend(Score.failed(status) for _ in group)
            else:
                scores.extend(outcome.scores)
        return scores

    def _nearby(self, items: Sequence[EvalItem]) -> tuple[Utterance, ...]:
        if self._search is None:
            return ()
        found: dict[str, Utterance] = {}
        # The evaluator searches with the claim as read, so the daemon does too.
        for item in as_read(items):
            for hit in self._search(query=item.claim):
                found.setdefault(hit.block_id, Utterance(hit.block_id, hit.text))
        return tuple(found[key] for key in sorted(found))
