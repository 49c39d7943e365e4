"""Who grades and how much waits: the workers' heartbeats and a work stream's backlog.

Each worker writes its heartbeat (a JSON object) into one hash under its name every
``grading_workers.heartbeat_s``; a worker not heard from in three beats is shown as gone, and one
not heard from in a day is forgotten. ``status`` and a daemon waiting for results read them here.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

import redis

from aclarai.daemon.workers.wire import roster_key

WORKERS_GROUP = "workers"
"""The work streams' consumer group."""
LIVE_BEATS = 3
FORGET_AFTER_S = 24 * 3600.0


@dataclass(frozen=True)
class Heartbeat:
    name: str
    host: str
    pid: int
    grader: str
    stream: str
    started_at: float
    beat_at: float
    beat_every_s: float
    done: int = 0
    failures: int = 0
    dead_letters: int = 0
    state: str = "working"
    """``working``, ``waiting for Redis``, ``waiting for the model`` or ``stopped``."""


@dataclass(frozen=True)
class WorkerSeen(Heartbeat):
    age_s: float = 0.0
    """Seconds since its last heartbeat."""

    @property
    def live(self) -> bool:
        return self.state != "stopped" and self.age_s <= LIVE_BEATS * self.beat_every_s


def beat(client: redis.Redis, prefix: str, heartbeat: Heartbeat) -> None:
    client.hset(roster_key(prefix), heartbeat.name, json.dumps(asdict(heartbeat)))


def workers_seen(client: redis.Redis, prefix: str, now: float | None = None) -> list[WorkerSeen]:
    """The workers that wrote a heartbeat in the last day, by name; older ones are removed."""
    now = time.time() if now is None else now
    key = roster_key(prefix)
    seen: list[WorkerSeen] = []
    stale: list[bytes | str] = []
    for name, raw in sorted(client.hgetall(key).items()):
        try:
            body: dict[str, Any] = json.loads(raw)
            worker = WorkerSeen(**body, age_s=max(0.0, now - float(body["beat_at"])))
        except (ValueError, TypeError, KeyError):
            stale.append(name)
            continue
        if worker.age_s > FORGET_AFTER_S:
            stale.append(name)
        else:
            seen.append(worker)
    if stale:
        client.hdel(key, *stale)
    return seen


def backlog(client: redis.Redis, stream: str, group: str = WORKERS_GROUP) -> int:
    """Entries of ``stream`` that ``group`` has not acknowledged: not yet read, or read and not
    yet acknowledged (all of them while the group does not exist); 0 without the stream. For a
    work stream and the workers' group: the jobs not yet graded."""
    try:
        groups = client.xinfo_groups(stream)
    except redis.ResponseError:
        return 0  # no such stream yet
    for info in groups:
        if info["name"] in (group, group.encode()):
            lag = info.get("lag")
            if lag is None:
                # Redis cannot tell after some trims: count what the group has not read.
                unread = client.xrange(stream, _after(info["last-delivered-id"]), "+")
                lag = len(unread or [])
            return int(lag) + int(info["pending"])
    return int(client.xlen(stream))


def _after(entry_id: bytes | str) -> str:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return f"({text}"
