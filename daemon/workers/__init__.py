"""Grading on many machines: the daemon publishes its grading jobs to a Redis Stream, workers
(``aclarai worker``) grade them beside their model servers, and the daemon applies the results
through the same stages as when grading at home. Imported only when ``workers.redis_url`` is
set."""

from aclarai.daemon.workers.remote import RemoteEvaluator, RemoteExtractor, RemoteGrading
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
