"""``aclarai worker``: grade jobs from Redis with this machine's own ``model`` settings.

A worker joins the consumer group of the work stream of its grader (its extractor's and
evaluator's identity), so it only ever reads work it grades as the daemon would at home. For
each job it extracts or scores, then adds the result to the stream the job names, acknowledges
the job and deletes its key, all in one MULTI/EXEC: a result is never written without its job
being acknowledged, nor the other way round. It never reads the vault: the job carries the
block's text and window.

- A job pending on a worker that died is taken over with XAUTOCLAIM once it has been idle
  ``grading_workers.reclaim_after_s``, at start and then periodically; a live worker keeps the
  idle time of its jobs in work fresh, however slow its model.
- A job that cannot be read, or has been delivered ``max_deliveries`` times, goes to the
  dead-letter stream with its error; its daemon gets the error as the job's result.
- While the model endpoint is unreachable a job stays pending with its delivery put back, and
  the worker backs off: an outage never dead-letters work. Redis outages likewise. Each outage
  is logged once when it starts and once when it ends.
- SIGTERM or SIGINT lets the jobs in hand finish.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import redis

from aclarai.daemon.config import Config, GradingWorkersSettings
from aclarai.daemon.factory import Agents, build_local_agents, claim_idle_s, grader_of
from aclarai.daemon.redis_link import (
    Backoff,
    Entry,
    StopEvent,
    broker,
    connect,
    deliveries,
    ensure_group,
    entries_of,
    millis,
    put_back_delivery,
    redact,
    sleep,
    stop_signals,
)
from aclarai.daemon.workers.roster import WORKERS_GROUP, Heartbeat, beat
from aclarai.daemon.workers.wire import (
    RESULTS_MAXLEN,
    Job,
    Outcome,
    dead_letter_stream,
    decode_job,
    encode_outcome,
    job_key,
    key_of,
    reply_to_of,
    work_stream,
)
from aclarai.parsers import (
    AclaraiError,
    BrokerUnavailable,
    ConfigError,
    EvaluatorUnavailable,
    PayloadError,
    TransientError,
)

log = logging.getLogger(__name__)

DEAD_MAXLEN = 10_000


@dataclass
class GradingWorkerStats:
    done: int = 0
    """Jobs graded, their results written and the jobs acknowledged."""
    failures: int = 0
    """Jobs whose grading raised, left pending for another delivery."""
    dead_letters: int = 0
    reclaimed: int = 0
    broker_outages: int = 0
    model_outages: int = 0


def run_grading_worker(
    config: Config,
    state_dir: Path,
    *,
    name: str | None = None,
    stop_event: StopEvent | None = None,
    burst: bool = False,
) -> GradingWorkerStats:
    """Grade jobs until stopped (or, with ``burst``, until none is left to take).

    Args:
        config: ``grading_workers`` names the Redis server; ``model`` how this worker grades.
        state_dir: where this worker keeps its model caches and what it learned of endpoints.
        name: this worker's name in the group; ``<host>-<pid>`` by default.
        stop_event: stop when set; ``None``: SIGTERM and SIGINT stop it.

    Raises:
        ConfigError: ``grading_workers.redis_url`` is not set.
    """
    settings = config.grading_workers
    if settings.redis_url is None:
        raise ConfigError(
            "aclarai worker needs a Redis server: --redis URL or grading_workers.redis_url"
        )
    agents = build_local_agents(config, state_dir, None, reevaluate=False)
    fresh: list[Agents] = []

    def fresh_agents() -> Agents:
        # Only the model path caches results; building its bypassing twin is put off until a
        # `resync --reevaluate` asks for it.
        if config.model.backend != "llm":
            return agents
        if not fresh:
            fresh.append(build_local_agents(config, state_dir, None, reevaluate=True))
        return fresh[0]

    jobs = settings.jobs_per_worker or (agents.client.requests_at_once() if agents.client else 1)
    client = connect(settings.redis_url, block_s=settings.block_s)
    worker_name = name or f"{socket.gethostname()}-{os.getpid()}"
    try:
        with stop_signals(stop_event) as stop:
            worker = GradingWorker(
                client,
                settings,
                agents,
                fresh_agents,
                name=worker_name,
                jobs=jobs,
                claim_idle_s=claim_idle_s(config),
            )
            return worker.run(stop, burst=burst)
    finally:
        client.close()
        for bundle in (*fresh, agents):
            bundle.close()


class GradingWorker:
    """The loop behind :func:`run_grading_worker`."""

    def __init__(
        self,
        client: redis.Redis,
        settings: GradingWorkersSettings,
        agents: Agents,
        fresh_agents: Callable[[], Agents],
        *,
        name: str,
        jobs: int,
        claim_idle_s: float,
    ) -> None:
        assert settings.redis_url is not None
        self._redis = client
        self._s = settings
        self._url = settings.redis_url
        self._agents = agents
        self._fresh_agents = fresh_agents
        self.name = name
        self.grader = grader_of(agents)
        self.stream = work_stream(settings.prefix, self.grader)
        self._dead = dead_letter_stream(settings.prefix)
        self._jobs = max(1, jobs)
        self._claim_idle_ms = max(1, int(claim_idle_s * 1000))
        self.stats = GradingWorkerStats()
        self._stats_lock = threading.Lock()
        self._state = "working"
        self._started = time.time()
        self._inflight: set[Future[None]] = set()
        self._inflight_ids: set[bytes] = set()
        self._index_lock = threading.Lock()
        self._indexed: dict[int, list[str]] = {}
        """The block ids each index (by ``id``) holds from the last job that shipped some."""

    def run(self, stop: StopEvent, *, burst: bool = False) -> GradingWorkerStats:
        log.info(
            "grading worker %s: %s on %s, %d job(s) at once",
            self.name,
            self.grader,
            redact(self._url),
            self._jobs,
        )
        beating = threading.Event()
        heart = threading.Thread(
            target=self._beat_until, args=(beating,), name="aclarai-heartbeat", daemon=True
        )
        heart.start()
        try:
            with ThreadPoolExecutor(self._jobs, thread_name_prefix="aclarai-grade") as pool:
                self._loop(stop, pool, burst)
        finally:
            beating.set()
            heart.join()
            self._state = "stopped"
            self._send_heartbeat()
        return self.stats

    def _loop(self, stop: StopEvent, pool: ThreadPoolExecutor, burst: bool) -> None:
        ready = down = model_down = False
        backoff = Backoff()
        next_claim = 0.0
        claim_every_s = max(0.05, self._claim_idle_ms / 2000)
        while not stop.is_set():
            try:
                self._harvest()
                if not ready:
                    self._ensure_group()
                    own = self._read("0", None, max(1, self._free_slots()))
                    if down:
                        self._outage_deliveries_back(own)
                    self._handle(own, pool, redelivered=True)
                    if down:
                        log.info("Redis at %s is reachable again", redact(self._url))
                    if model_down:
                        log.info("the model answers again; pending jobs graded")
                    ready, down, model_down = True, False, False
                    backoff.reset()
                    self._state = "working"
                free = self._free_slots()
                if not free:
                    continue
                worked = 0
                if time.monotonic() >= next_claim:
                    worked += self._reclaim(pool, stop, free)
                    next_claim = time.monotonic() + claim_every_s
                free = self._free_slots()
                if free:
                    block_ms = None if burst else millis(self._s.block_s)
                    entries = self._read(">", block_ms, free)
                    worked += self._handle(entries, pool, redelivered=False)
                if burst and worked == 0:
                    self._harvest(wait_all=True)
                    if not self._pending():
                        return
                    sleep(stop, min(claim_every_s, 0.2))
            except BrokerUnavailable as exc:
                if not down:
                    log.warning("Redis unavailable (%s); retrying with backoff", exc)
                    with self._stats_lock:
                        self.stats.broker_outages += 1
                ready, down = False, True
                self._state = "waiting for Redis"
                sleep(stop, backoff.next_s())
            except TransientError as exc:
                if not model_down:
                    log.warning("model unavailable (%s); jobs stay pending, retrying", exc)
                    with self._stats_lock:
                        self.stats.model_outages += 1
                if burst:
                    return
                ready, model_down = False, True
                self._state = "waiting for the model"
                sleep(stop, backoff.next_s())
            except redis.ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    raise
                log.warning("consumer group vanished (%s); recreating it", exc)
                ready = False

    def _ensure_group(self) -> None:
        ensure_group(self._redis, self._url, self.stream, WORKERS_GROUP)

    def _read(self, cursor: str, block_ms: int | None, count: int) -> list[Entry]:
        with broker(self._url):
            reply = self._redis.xreadgroup(
                WORKERS_GROUP, self.name, {self.stream: cursor}, count=count, block=block_ms
            )
        return entries_of(reply)

    def _free_slots(self) -> int:
        """Jobs this worker can start now; waits (a little) for one to finish when none."""
        if len(self._inflight) >= self._jobs:
            wait(self._inflight, timeout=self._s.block_s, return_when=FIRST_COMPLETED)
        self._harvest()
        return max(0, self._jobs - len(self._inflight))

    def _harvest(self, *, wait_all: bool = False) -> None:
        """Forget the finished jobs; raise the outage one of them met (Redis's first)."""
        if wait_all:
            wait(self._inflight)
        done = {f for f in self._inflight if f.done()}
        self._inflight -= done
        errors = [e for f in done if (e := f.exception()) is not None]
        for error in sorted(errors, key=lambda e: not isinstance(e, BrokerUnavailable)):
            raise error

    def _reclaim(self, pool: ThreadPoolExecutor, stop: StopEvent, count: int) -> int:
        """Take over at most ``count`` jobs idle past ``claim_idle_s`` (their worker died)."""
        start: bytes | str = "0-0"
        handled = 0
        while not stop.is_set() and handled < count:
            with broker(self._url):
                reply = self._redis.xautoclaim(
                    self.stream,
                    WORKERS_GROUP,
                    self.name,
                    min_idle_time=self._claim_idle_ms,
                    start_id=start,
                    count=count - handled,
                )
            start, entries = reply[0], cast(list[Entry], reply[1])  # type: ignore[index]
            if entries:
                log.info("took over %d job(s) of a worker that stopped answering", len(entries))
                with self._stats_lock:
                    self.stats.reclaimed += len(entries)
                handled += self._handle(entries, pool, redelivered=True)
            if start in (b"0-0", "0-0"):
                break
        return handled

    def _outage_deliveries_back(self, entries: list[Entry]) -> None:
        """Reading its own pending jobs again after a Redis outage counted a delivery the
        outage, not the jobs, caused: take it back."""
        for entry_id, _ in entries:
            count = deliveries(self._redis, self._url, self.stream, WORKERS_GROUP, entry_id)
            self._put_back_delivery(entry_id, count)

    def _put_back_delivery(self, entry_id: bytes, delivered: int) -> None:
        put_back_delivery(
            self._redis, self._url, self.stream, WORKERS_GROUP, self.name, entry_id, delivered
        )

    def _keep_claimed(self) -> None:
        """Reset the idle time of the jobs in work here, so that a slow model call is not taken
        for a dead worker's (JUSTID counts no delivery)."""
        held = tuple(self._inflight_ids)
        if held:
            with broker(self._url):
                self._redis.xclaim(
                    self.stream, WORKERS_GROUP, self.name, 0, list(held), justid=True
                )  # type: ignore[arg-type]

    def _pending(self) -> int:
        with broker(self._url):
            return int(self._redis.xpending(self.stream, WORKERS_GROUP)["pending"])

    def _handle(self, entries: list[Entry], pool: ThreadPoolExecutor, *, redelivered: bool) -> int:
        """Start grading ``entries`` on the pool (those not in work here already), even when
        stopping: they are jobs in hand. Each slot takes the next job as soon as it is free,
        so one slow call holds up no other."""
        started = 0
        for entry_id, fields in entries:
            if entry_id in self._inflight_ids:
                continue  # read again from this consumer's pending entries, still in work
            self._inflight_ids.add(entry_id)
            future = pool.submit(self._handle_one, entry_id, fields, redelivered)
            future.add_done_callback(self._forget(entry_id))
            self._inflight.add(future)
            started += 1
        return started

    def _forget(self, entry_id: bytes) -> Callable[[Future[None]], None]:
        def forget(_: Future[None]) -> None:
            self._inflight_ids.discard(entry_id)

        return forget

    def _handle_one(
        self, entry_id: bytes, fields: dict[bytes, bytes] | None, redelivered: bool
    ) -> None:
        if fields is None:
            # Trimmed from the stream while pending: nothing left to grade (its daemon finds
            # the entry gone and publishes the job again).
            with broker(self._url):
                self._redis.xack(self.stream, WORKERS_GROUP, entry_id)
            return
        raw = fields.get(b"payload")
        delivered = (
            deliveries(self._redis, self._url, self.stream, WORKERS_GROUP, entry_id)
            if redelivered
            else 1
        )
        try:
            if raw is None:
                raise PayloadError("payload: field missing from the entry")
            job = decode_job(raw)
        except Exception as exc:
            # Whatever is wrong with an entry, it must not stop every worker that reads it.
            self._dead_letter(entry_id, raw, None, f"unreadable job: {exc}", delivered)
            return
        if delivered > self._s.max_deliveries:
            error = f"delivered {delivered} times without being acknowledged"
            self._dead_letter(entry_id, raw, job, error, delivered)
            return
        if job.grader != self.grader:
            error = f"asks for grader {job.grader}, this worker grades with {self.grader}"
            self._dead_letter(entry_id, raw, job, error, delivered)
            return
        try:
            outcome = self._grade(job)
        except TransientError:
            # The model endpoint is away, which is not this job's fault: its delivery is put
            # back and the worker backs off (see _loop).
            self._put_back_delivery(entry_id, delivered)
            raise
        except Exception as exc:
            error = f"grading failed: {type(exc).__name__}: {exc}"
            if delivered >= self._s.max_deliveries:
                self._dead_letter(entry_id, raw, job, error, delivered)
                return
            with self._stats_lock:
                self.stats.failures += 1
            log.warning(
                "job %s (delivery %d of %d): %s; left pending for another try",
                entry_id.decode(),
                delivered,
                self._s.max_deliveries,
                error,
            )
            if not isinstance(exc, AclaraiError | OSError):
                log.debug("grading job %s failed", entry_id.decode(), exc_info=True)
            return
        self._reply(entry_id, job, outcome)
        with self._stats_lock:
            self.stats.done += 1

    def _grade(self, job: Job) -> Outcome:
        agents = self._fresh_agents() if job.fresh else self._agents
        model = agents.evaluator.model_id
        if job.kind == "extract":
            found = agents.extractor.extract_each(job.inputs)
            claims: list[Any] = []
            for result in found:
                if isinstance(result, TransientError):
                    raise result
                claims.append(str(result) if isinstance(result, Exception) else tuple(result))
            return Outcome(job.key, self.name, claims=tuple(claims), model=model)
        if agents.index is not None:
            # Per-agent mode: the index holds this job's utterances alone (none when the
            # daemon's search found none), so the agent's search finds what the daemon's index
            # found. One such job at a time: the index is the agents'.
            with self._index_lock:
                index = agents.index
                index.remove(self._indexed.get(id(index), ()))
                index.upsert(job.nearby)
                self._indexed[id(index)] = [u.block_id for u in job.nearby]
                scores = agents.evaluator.evaluate_batch(job.items)
        else:
            scores = agents.evaluator.evaluate_batch(job.items)
        if scores and all(s.unavailable for s in scores):
            raise EvaluatorUnavailable(scores[0].status)
        return Outcome(job.key, self.name, scores=tuple(scores), model=model)

    def _reply(self, entry_id: bytes, job: Job, outcome: Outcome) -> None:
        with broker(self._url):
            pipe = self._redis.pipeline(transaction=True)
            pipe.xadd(
                job.reply_to,
                {"payload": encode_outcome(outcome)},
                maxlen=RESULTS_MAXLEN,
                approximate=True,
            )
            pipe.xack(self.stream, WORKERS_GROUP, entry_id)
            pipe.delete(job_key(self._s.prefix, job.key))
            pipe.execute()

    def _dead_letter(
        self, entry_id: bytes, raw: bytes | None, job: Job | None, error: str, deliveries: int
    ) -> None:
        log.warning("job %s dead-lettered: %s", entry_id.decode(), error)
        with broker(self._url):
            pipe = self._redis.pipeline(transaction=True)
            pipe.xadd(
                self._dead,
                {
                    "source_id": entry_id,
                    "stream": self.stream,
                    "error": error,
                    "payload": raw if raw is not None else b"",
                    "deliveries": deliveries,
                    "worker": self.name,
                },
                maxlen=DEAD_MAXLEN,
                approximate=True,
            )
            # Its daemon is told, so that the block fails (and is retried) instead of waiting
            # for a result that will not come; a job it cannot read still names where to reply.
            reply_to = job.reply_to if job is not None else reply_to_of(raw or b"")
            if reply_to is not None and raw is not None:
                key = key_of(raw)
                outcome = Outcome(key, self.name, error=f"dead-lettered: {error}")
                pipe.xadd(
                    reply_to,
                    {"payload": encode_outcome(outcome)},
                    maxlen=RESULTS_MAXLEN,
                    approximate=True,
                )
                pipe.delete(job_key(self._s.prefix, key))
            pipe.xack(self.stream, WORKERS_GROUP, entry_id)
            pipe.execute()
        with self._stats_lock:
            self.stats.dead_letters += 1

    def _beat_until(self, stopped: threading.Event) -> None:
        while not stopped.is_set():
            self._send_heartbeat()
            with contextlib.suppress(BrokerUnavailable):  # the loop logs the outage
                self._keep_claimed()
            stopped.wait(self._s.heartbeat_s)

    def _send_heartbeat(self) -> None:
        with self._stats_lock:
            stats = replace(self.stats)
        heartbeat = Heartbeat(
            name=self.name,
            host=socket.gethostname(),
            pid=os.getpid(),
            grader=self.grader,
            stream=self.stream,
            started_at=self._started,
            beat_at=time.time(),
            beat_every_s=self._s.heartbeat_s,
            done=stats.done,
            failures=stats.failures,
            dead_letters=stats.dead_letters,
            state=self._state,
        )
        try:
            with broker(self._url):
                beat(self._redis, self._s.prefix, heartbeat)
        except BrokerUnavailable:
            pass  # the loop logs the outage
