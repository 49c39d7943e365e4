"""Grading on many machines: the daemon publishes its grading jobs to a Redis Stream
(:mod:`.publisher`), workers (``aclarai worker``, :mod:`.worker`) grade them beside their model
servers, and the daemon applies the results through the same stages as when grading at home.
Jobs and results on the wire in :mod:`.wire`, the workers' heartbeats in :mod:`.roster`.
Imported only when ``grading_workers.redis_url`` is set."""

from aclarai.daemon.workers.publisher import RemoteEvaluator, RemoteExtractor, RemoteGrading
from aclarai.daemon.workers.roster import Heartbeat, WorkerSeen, backlog, workers_seen
from aclarai.daemon.workers.wire import Job, Outcome, work_stream

__all__ = [
    "Heartbeat",
    "Job",
    "Outcome",
    "RemoteEvaluator",
    "RemoteExtractor",
    "RemoteGrading",
    "WorkerSeen",
    "backlog",
    "work_stream",
    "workers_seen",
]
