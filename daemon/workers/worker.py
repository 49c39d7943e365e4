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

That loop is :mod:`aclarai.daemon.stream_loop`'s, run with ``jobs`` slots; this module says what
a job means, and keeps the worker's heartbeat.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import redis
from redis.client import Pipeline

from aclarai.agents import ClaimExtractor, Evaluator, LLMClient, VectorIndex
from aclarai.daemon.config import Config, GradingWorkersSettings
from aclarai.daemon.redis_link import StopEvent, broker, connect, redact, stop_signals
from aclarai.daemon.stream_loop import Delivery, StreamLoop, StreamSpec, StreamStats, Words
from aclarai.daemon.workers.roster import WORKERS_GROUP, Heartbeat, beat
from aclarai.daemon.workers.wire import (
    RESULTS_MAXLEN,
    Job,
    Outcome,
    dead_letter_stream,
    decode_job,
    encode_outcome,
    grader_identity,
    job_key,
    key_of,
    reply_to_of,
    work_stream,
)
from aclarai.parsers import (
    BrokerUnavailable,
    ConfigError,
    EvaluatorUnavailable,
    PayloadError,
    TransientError,
)

log = logging.getLogger(__name__)

DEAD_MAXLEN = 10_000
WORDS = Words(
    entry="job",
    entries="job(s)",
    waiting="jobs",
    settled="graded",
    member="worker",
    failure="grading failed",
)


class WorkerAgents(Protocol):
    """What a worker grades with (the factory's agents, built on this machine)."""

    extractor: ClaimExtractor
    evaluator: Evaluator
    index: VectorIndex | None
    client: LLMClient | None

    def close(self) -> None: ...


def run_worker(
    config: Config,
    build_agents: Callable[[bool], WorkerAgents],
    *,
    reclaim_after_s: float,
    name: str | None = None,
    stop_event: StopEvent | None = None,
    burst: bool = False,
) -> StreamStats:
    """Grade jobs until stopped (or, with ``burst``, until none is left to take).

    Args:
        config: ``grading_workers`` names the Redis server.
        build_agents: this machine's agents from its ``model`` settings; given ``True``, the
            agents that bypass the result cache (``resync --reevaluate``).
        reclaim_after_s: how long a job waits on a silent worker before this one takes it over.
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
    agents = build_agents(False)
    fresh: list[WorkerAgents] = []

    def fresh_agents() -> WorkerAgents:
        # Only the model path caches results; building its bypassing twin is put off until a
        # `resync --reevaluate` asks for it.
        if config.model.backend != "llm":
            return agents
        if not fresh:
            fresh.append(build_agents(True))
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
                reclaim_after_s=reclaim_after_s,
            )
            return worker.run(stop, burst=burst)
    finally:
        client.close()
        for bundle in (*fresh, agents):
            bundle.close()


class GradingWorker:
    """One worker of its grader's group: what a grading job means to the
    :class:`~aclarai.daemon.stream_loop.StreamLoop` behind :func:`run_worker`, and the
    heartbeat that shows it in ``aclarai status``."""

    def __init__(
        self,
        client: redis.Redis,
        settings: GradingWorkersSettings,
        agents: WorkerAgents,
        fresh_agents: Callable[[], WorkerAgents],
        *,
        name: str,
        jobs: int,
        reclaim_after_s: float,
    ) -> None:
        assert settings.redis_url is not None
        self._redis = client
        self._s = settings
        self._url = settings.redis_url
        self._agents = agents
        self._fresh_agents = fresh_agents
        self.name = name
        self.grader = grader_identity(agents.extractor, agents.evaluator)
        self.stream = work_stream(settings.prefix, self.grader)
        self._dead = dead_letter_stream(settings.prefix)
        self._jobs = max(1, jobs)
        spec = StreamSpec(
            url=self._url,
            stream=self.stream,
            group=WORKERS_GROUP,
            max_deliveries=settings.max_deliveries,
            reclaim_after_s=reclaim_after_s,
            block_s=settings.block_s,
            jobs=self._jobs,
        )
        self._loop = StreamLoop(client, spec, self, name=name, words=WORDS, log=log)
        self._stopped = False
        self._started = time.time()
        self._index_lock = threading.Lock()
        self._indexed: dict[int, list[str]] = {}
        """The block ids each index (by ``id``) holds from the last job that shipped some."""

    def run(self, stop: StopEvent, *, burst: bool = False) -> StreamStats:
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
            return self._loop.run(stop, burst=burst)
        finally:
            beating.set()
            heart.join()
            self._stopped = True
            self._send_heartbeat()

    def parse(self, payload: bytes | None) -> Job:
        try:
            if payload is None:
                raise PayloadError("payload: field missing from the entry")
            job = decode_job(payload)
        except Exception as exc:
            # Whatever is wrong with an entry, it must not stop every worker that reads it.
            raise PayloadError(f"unreadable job: {exc}") from exc
        if job.grader != self.grader:
            raise PayloadError(
                f"asks for grader {job.grader}, this worker grades with {self.grader}"
            )
        return job

    def work(self, job: Job) -> Outcome:
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

    def write_result(self, pipe: Pipeline, delivery: Delivery, job: Job, outcome: Outcome) -> None:
        pipe.xadd(
            job.reply_to,
            {"payload": encode_outcome(outcome)},
            maxlen=RESULTS_MAXLEN,
            approximate=True,
        )
        pipe.delete(job_key(self._s.prefix, job.key))

    def write_dead_letter(
        self, pipe: Pipeline, delivery: Delivery, job: Job | None, error: str
    ) -> None:
        raw = delivery.payload
        pipe.xadd(
            self._dead,
            {
                "source_id": delivery.entry_id,
                "stream": self.stream,
                "error": error,
                "payload": raw if raw is not None else b"",
                "deliveries": delivery.count,
                "worker": self.name,
            },
            maxlen=DEAD_MAXLEN,
            approximate=True,
        )
        # Its daemon is told, so that the block fails (and is retried) instead of waiting for a
        # result that will not come; a job it cannot read still names where to reply.
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

    def _beat_until(self, stopped: threading.Event) -> None:
        while not stopped.is_set():
            self._send_heartbeat()
            with contextlib.suppress(BrokerUnavailable):  # the loop logs the outage
                self._loop.keep_claimed()
            stopped.wait(self._s.heartbeat_s)

    def _send_heartbeat(self) -> None:
        stats = self._loop.stats
        heartbeat = Heartbeat(
            name=self.name,
            host=socket.gethostname(),
            pid=os.getpid(),
            grader=self.grader,
            stream=self.stream,
            started_at=self._started,
            beat_at=time.time(),
            beat_every_s=self._s.heartbeat_s,
            done=stats.processed,
            failures=stats.failed,
            dead_letters=stats.dead_lettered,
            state="stopped" if self._stopped else self._loop.state,
        )
        try:
            with broker(self._url):
                beat(self._redis, self._s.prefix, heartbeat)
        except BrokerUnavailable:
            pass  # the loop logs the outage
