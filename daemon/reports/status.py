"""``aclarai status``: is the daemon running, what is it doing, are the grades current, what is
queued, what failed, what is stored.

The running daemon's (or resync's) record (:class:`~aclarai.daemon.vault.control.Heartbeat`) is
shown as current only while the process that wrote it holds the vault lock and still runs: a
killed daemon's last "grading 3 notes" is shown as what it was doing when it was last seen.
:func:`status_json` gives the same as one JSON object whose keys are listed in
:data:`JSON_KEYS`.

With ``grading_workers.redis_url`` it also shows the grading workers (:class:`WorkersStatus`),
read from Redis; without it Redis is never imported.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aclarai.agents import UsageCounters
from aclarai.daemon.config import Config
from aclarai.daemon.factory import QUEUE_FILE, build_queue, build_store, build_vault
from aclarai.daemon.reports.claims import shorten
from aclarai.daemon.reports.dashboard import graph_counts
from aclarai.daemon.reports.verify import Difference, differences
from aclarai.daemon.vault.control import (
    DAEMON_ROLE,
    MODEL_DOWN_META,
    Heartbeat,
    read_heartbeat,
    read_paused,
    read_usage,
)
from aclarai.daemon.vault.lock import live_holder
from aclarai.daemon.vault.queue import DEAD, QueueEntry
from aclarai.graph import DEFAULT_QUALITY_THRESHOLD, StoreCounts, StoredClaim, key_block_id
from aclarai.parsers import BrokerUnavailable, format_utc, shown_threshold

if TYPE_CHECKING:
    from aclarai.daemon.workers import WorkerSeen

STALE_HEARTBEAT_S = 30.0
LOW_QUALITY_SHOWN = 10
DIFFERENCES_SHOWN = 50


@dataclass
class WorkersStatus:
    """The grading workers' side of the vault (``grading_workers.redis_url``), as Redis holds it."""

    redis: str
    """The server, its password left out."""
    work_stream: str
    """The stream this vault's daemon publishes to: the one of its grader identity."""
    backlog: int | None = None
    """Jobs of that stream not graded yet (waiting, or read and not acknowledged)."""
    results_waiting: int | None = None
    """Results for this vault its daemon or resync has not acknowledged: not applied yet, or
    kept for the same work asked again."""
    dead_stream: str = ""
    """Where the workers put the jobs they give up on, every vault's (``<prefix>:dead``)."""
    dead_letters: int | None = None
    """Jobs in ``dead_stream``."""
    seen: list[WorkerSeen] = field(default_factory=list)
    """Every worker heard from in the last day, this grader's or not."""
    error: str | None = None
    """Why Redis could not be read (the figures above are then ``None``)."""


@dataclass
class Status:
    vault: Path
    state_dir: Path
    running: bool
    holder: str
    queue_depth: int
    dead_letters: list[QueueEntry]
    last_resync: str | None
    paused: bool
    counts: StoreCounts | None
    counts_error: str | None
    differences: list[Difference] | None = None
    """With --verify: how the graph differs from a fresh parse of the vault (empty when in
    step, see :mod:`.verify`)."""
    settling: int = 0
    """Notes that lost blocks the graph still holds: until they settle (``watch.delete_grace_s``
    under the daemon, in case they were moved), the graph is not in step."""
    unmarked: tuple[int, int] = (0, 0)
    """Paragraphs of adopted notes with no id yet, and the notes holding them."""
    heartbeat: Heartbeat | None = None
    """The daemon's last stamp (it stamps every few seconds while it runs)."""
    quality_threshold: float = DEFAULT_QUALITY_THRESHOLD
    low_quality: list[StoredClaim] = field(default_factory=list)
    """The lowest-quality claims below ``quality_threshold`` (at most ``LOW_QUALITY_SHOWN``)."""
    llm_usage: dict[str, int] = field(default_factory=dict)
    """What every resync and daemon run on this vault has spent on the LLM endpoint."""
    model_down_since: str | None = None
    """When the daemon found the model endpoint unreachable, while it still is."""
    holder_pid: int | None = None
    """The pid of the live process holding the vault (``None`` when none does)."""
    oldest_waiting: tuple[str, float] | None = None
    """The note and Unix time of the oldest change not yet graded (dead letters aside)."""
    workers: WorkersStatus | None = None
    """With ``grading_workers.redis_url``: the grading workers and their backlog."""

    @property
    def record_current(self) -> bool:
        """Whether the heartbeat record is the live lock holder's own: what it says is now."""
        beat = self.heartbeat
        return beat is not None and beat.pid == self.holder_pid and beat.writer_alive()

    @property
    def activity(self) -> str | None:
        """What the holder is doing now; ``None`` when no live process holds the vault."""
        if not self.record_current or self.heartbeat is None:
            return None
        return self.heartbeat.activity or self.heartbeat.state

    @property
    def graded(self) -> bool:
        """Whether every change seen so far is graded: nothing queued (dead letters aside), no
        note settling, and the holder, if any, idle (nothing settling, syncing or grading)."""
        return (
            self.queue_depth == 0
            and self.settling == 0
            and (self.holder_pid is None or self.activity == "idle")
        )


def collect_status(
    config: Config, vault_root: Path, *, verify: bool = False, graph: bool = True
) -> Status:
    """What ``aclarai status`` shows; ``graph=False`` leaves the graph store and Redis alone
    (the counts and ``workers`` stay ``None``), for callers that poll."""
    state_dir = config.state_dir_for(vault_root)
    threshold = config.threshold.claim_quality
    workers = read_workers(config, state_dir) if graph else None
    if not (state_dir / QUEUE_FILE).exists():
        # Never synced: say so without creating a state folder as a side effect.
        return Status(
            vault=vault_root,
            state_dir=state_dir,
            running=False,
            holder="nobody",
            queue_depth=0,
            dead_letters=[],
            last_resync=None,
            paused=False,
            counts=None,
            counts_error="no state yet: run `aclarai resync` first",
            quality_threshold=threshold,
            workers=workers,
        )
    queue = build_queue(config, state_dir)
    try:
        depth = queue.depth()
        dead = queue.dead_letters()
        last = queue.get_meta("last_resync")
        paused = read_paused(queue, state_dir)
        heartbeat = read_heartbeat(queue)
        usage = read_usage(queue)
        model_down = queue.get_meta(MODEL_DOWN_META)
        oldest = queue.oldest_waiting()
        settling = queue.unsettled()
        unmarked = queue.unmarked()
        queued = {e.block_id for e in queue.entries() if e.state != DEAD} if verify else set()
    finally:
        queue.close()
    holder = live_holder(state_dir)
    side = _GraphSide(error="not read")
    if graph:
        side = _read_graph(config, state_dir, vault_root, verify=verify, queued=queued)
    return Status(
        vault=vault_root,
        state_dir=state_dir,
        running=holder is not None,
        holder="nobody" if holder is None else f"{holder.pid} {holder.role}",
        queue_depth=depth,
        dead_letters=dead,
        last_resync=last,
        paused=paused,
        counts=side.counts,
        counts_error=side.error,
        differences=side.differences,
        settling=settling,
        unmarked=unmarked,
        heartbeat=heartbeat,
        quality_threshold=threshold,
        low_quality=side.low_quality,
        llm_usage=usage,
        model_down_since=model_down,
        holder_pid=None if holder is None else holder.pid,
        oldest_waiting=oldest,
        workers=workers,
    )


def read_workers(config: Config, state_dir: Path) -> WorkersStatus | None:
    """The grading workers seen and the work waiting for them; ``None`` without
    ``grading_workers.redis_url``. Redis unreachable is said in ``error``, never raised."""
    settings = config.grading_workers
    if settings.redis_url is None:
        return None
    # Imported here: without grading_workers.redis_url, status never imports redis.
    import redis

    from aclarai.daemon.factory import vault_id
    from aclarai.daemon.redis_link import broker, connect, redact
    from aclarai.daemon.workers import backlog, work_stream, workers_seen
    from aclarai.daemon.workers.publisher import GROUP
    from aclarai.daemon.workers.wire import dead_letter_stream, results_stream

    url, prefix = settings.redis_url, settings.prefix
    shown = WorkersStatus(
        redact(url), work_stream(prefix, _grader(config)), dead_stream=dead_letter_stream(prefix)
    )
    results = results_stream(prefix, vault_id(state_dir))
    client = connect(url, block_s=settings.block_s)
    try:
        with broker(url):
            return replace(
                shown,
                seen=workers_seen(client, prefix),
                backlog=backlog(client, shown.work_stream),
                results_waiting=backlog(client, results, GROUP),
                dead_letters=int(client.xlen(shown.dead_stream)),
            )
    except (BrokerUnavailable, redis.RedisError) as exc:
        # One line in the listing: a connection error's text may span several.
        return replace(shown, error=" ".join(str(exc).split()) or type(exc).__name__)
    finally:
        client.close()


def _grader(config: Config) -> str:
    """The grader identity the daemon publishes its jobs for, as the daemon computes it."""
    from aclarai.daemon.factory import build_local_agents, grader_of

    # A scratch state folder: the LLM agents open their caches in it, and status must neither
    # create the vault's state folder nor touch the caches of a daemon running on it.
    with tempfile.TemporaryDirectory(prefix="aclarai-status-") as scratch:
        agents = build_local_agents(config, Path(scratch), None, reevaluate=False)
        try:
            return grader_of(agents)
        finally:
            agents.close()


JSON_KEYS: dict[str, str] = {
    "vault": "the vault folder",
    "state_dir": "where its state lives",
    "running": "a live aclarai daemon or resync holds the vault",
    "pid": "that process's pid, else null",
    "role": '"daemon" or "resync", else null',
    "activity": '"syncing", "grading N notes", "waiting for the model", "paused", "idle" or '
    '"starting"; null when nothing runs',
    "graded": "every change seen so far is graded: nothing queued, and the holder idle",
    "queue_depth": "blocks waiting to be graded (dead letters aside)",
    "oldest_ungraded_note": "the note of the oldest change not yet graded, else null",
    "oldest_ungraded_at": "when that change was queued (UTC), else null",
    "oldest_ungraded_age_s": "its age in seconds, else null",
    "last_look_at": "when the daemon last looked at the vault (an edit handled, a scan)",
    "last_look_age_s": "its age in seconds, else null",
    "heartbeat_at": "when the record was last stamped, else null",
    "heartbeat_age_s": "its age in seconds, else null",
    "last_activity": "what the record says, even a dead process's, else null",
    "record_current": "the record is the live holder's own",
    "last_error": "the last error the daemon or resync met, else null",
    "last_error_at": "when (UTC), else null",
    "paused": "evaluation and write-back are paused",
    "dead_letters": "blocks given up on (see the text form)",
    "model_down_since": "since when the model endpoint has not answered, else null",
    "last_resync": "when the last full pass ended, else null",
    "counts": "files, blocks, claims … in the graph, else null",
    "settling": "notes that lost blocks the graph still holds, until they settle",
    "unmarked_paragraphs": "paragraphs of adopted notes with no id yet (not graded)",
    "unmarked_notes": "the adopted notes holding them",
    "verify": "with --verify: each difference between the graph and a fresh parse of the "
    "vault (file, block_id, difference; empty when in step), else null",
    "workers": "with grading_workers.redis_url: the grading workers seen, the backlog, the results "
    "waiting and the dead letters (see docs/shared-vault.md), else null",
}
"""The keys of :func:`status_json`, each with what it holds (times are UTC stamps)."""


def status_json(status: Status) -> dict[str, Any]:
    """``aclarai status --json``: one object with every key of :data:`JSON_KEYS`."""
    beat = status.heartbeat
    oldest_note, oldest_at = status.oldest_waiting or (None, None)
    error_at = beat.last_error_at if beat is not None else None
    role = status.holder.partition(" ")[2] if status.running else None
    data: dict[str, Any] = {
        "vault": str(status.vault),
        "state_dir": str(status.state_dir),
        "running": status.running,
        "pid": status.holder_pid,
        "role": role,
        "activity": status.activity,
        "graded": status.graded,
        "queue_depth": status.queue_depth,
        "oldest_ungraded_note": oldest_note,
        "oldest_ungraded_at": _stamp(oldest_at),
        "oldest_ungraded_age_s": _age(oldest_at),
        "last_look_at": _stamp(beat.looked_at if beat is not None else None),
        "last_look_age_s": _age(beat.looked_at if beat is not None else None),
        "heartbeat_at": _stamp(beat.at if beat is not None else None),
        "heartbeat_age_s": _age(beat.at if beat is not None else None),
        "last_activity": (beat.activity or beat.state) if beat is not None else None,
        "record_current": status.record_current,
        "last_error": beat.last_error if beat is not None else None,
        "last_error_at": _stamp(error_at),
        "paused": status.paused,
        "dead_letters": len(status.dead_letters),
        "model_down_since": status.model_down_since,
        "last_resync": status.last_resync,
        "counts": asdict(status.counts) if status.counts is not None else None,
        "settling": status.settling,
        "unmarked_paragraphs": status.unmarked[0],
        "unmarked_notes": status.unmarked[1],
        "verify": None
        if status.differences is None
        else [
            {"file": d.file, "block_id": d.block_id, "difference": d.what}
            for d in status.differences
        ],
        "workers": _workers_json(status.workers),
    }
    return data


def _workers_json(workers: WorkersStatus | None) -> dict[str, Any] | None:
    if workers is None:
        return None
    return {
        "redis": workers.redis,
        "error": workers.error,
        "work_stream": workers.work_stream,
        "backlog": workers.backlog,
        "results_waiting": workers.results_waiting,
        "dead_stream": workers.dead_stream,
        "dead_letters": workers.dead_letters,
        "seen": [
            {
                "name": w.name,
                "host": w.host,
                "pid": w.pid,
                "state": w.state,
                "live": w.live,
                "this_grader": w.stream == workers.work_stream,
                "heartbeat_at": format_utc(w.beat_at),
                "heartbeat_age_s": round(w.age_s, 1),
                "started_at": format_utc(w.started_at),
                "done": w.done,
                "failures": w.failures,
                "dead_letters": w.dead_letters,
            }
            for w in workers.seen
        ],
    }


def _stamp(unix_s: float | None) -> str | None:
    return None if unix_s is None else format_utc(unix_s)


def _age(unix_s: float | None) -> float | None:
    return None if unix_s is None else round(max(0.0, time.time() - unix_s), 1)


@dataclass
class _GraphSide:
    counts: StoreCounts | None = None
    error: str | None = None
    differences: list[Difference] | None = None
    low_quality: list[StoredClaim] = field(default_factory=list)


def _read_graph(
    config: Config, state_dir: Path, vault_root: Path, *, verify: bool, queued: Collection[str]
) -> _GraphSide:
    threshold = config.threshold.claim_quality
    side = _GraphSide()
    try:
        store = build_store(config, state_dir)
        try:
            side.counts = graph_counts(store, threshold)
            side.low_quality = store.low_quality_claims(
                shown_threshold(threshold), LOW_QUALITY_SHOWN
            )
            if verify:
                side.differences = differences(build_vault(config, vault_root), store, queued)
        finally:
            store.close()
    except Exception as exc:
        side.error = str(exc)
    return side


def format_status(status: Status) -> str:
    lines = [
        f"vault        {status.vault}",
        f"state dir    {status.state_dir}",
        f"daemon       {'running (' + status.holder + ')' if status.running else 'not running'}",
        f"heartbeat    {_heartbeat_line(status)}",
        f"activity     {_activity_line(status)}",
        f"last look    {_looked_line(status)}",
        f"ungraded     {_ungraded_line(status)}",
        f"last error   {_error_line(status)}",
        f"paused       {'yes' if status.paused else 'no'}",
        f"queue depth  {status.queue_depth}",
        f"dead letters {len(status.dead_letters)}",
        f"last resync  {status.last_resync or 'never'}",
    ]
    for entry in status.dead_letters:
        lines.append(f"  {key_block_id(entry.block_id)} in {entry.file}: {entry.last_error}")
    if status.counts is not None:
        c = status.counts
        lines += [
            f"files        {c.files}",
            f"blocks       {c.blocks} (+{c.deleted_blocks} deleted)",
            f"claims       {c.claims}",
            f"scored       {c.scored_claims}",
            f"null scores  {c.null_scores}",
            f"low quality  {c.low_quality} below {status.quality_threshold:.2f}",
        ]
        for claim in status.low_quality:
            quality = claim.score.quality if claim.score is not None else None
            shown = "null" if quality is None else f"{quality:.2f}"
            lines.append(f"  {shown}  {key_block_id(claim.block_id)}  {shorten(claim.text)}")
    else:
        lines.append(f"graph        unavailable: {status.counts_error}")
    usage = _usage_line(status.llm_usage) if status.llm_usage else "none recorded"
    lines.append(f"llm usage    {usage}")
    if status.model_down_since is not None:
        lines.append(f"model        unreachable since {status.model_down_since}, work queued")
    if status.workers is not None:
        lines += _workers_lines(status.workers)
    if status.differences is not None:
        lines += _verify_lines(status.differences)
    return "\n".join(lines)


def _verify_lines(found: list[Difference]) -> list[str]:
    if not found:
        return ["verify       in step: the graph says what the vault says"]
    lines = [f"verify       {len(found)} difference(s) between the graph and the vault:"]
    lines += [f"  {difference}" for difference in found[:DIFFERENCES_SHOWN]]
    if len(found) > DIFFERENCES_SHOWN:
        lines.append(f"  and {len(found) - DIFFERENCES_SHOWN} more (--json lists them all)")
    return lines


def _workers_lines(workers: WorkersStatus) -> list[str]:
    """The grading workers' part: who grades, then what waits for them and for the vault."""
    if workers.error is not None:
        return [f"workers      unavailable: {workers.error}"]
    live = sum(w.live for w in workers.seen)
    lines = [f"workers      {live} live, {len(workers.seen) - live} gone, at {workers.redis}"]
    lines += [_worker_line(w, workers.work_stream) for w in workers.seen]
    lines += [
        f"backlog      {workers.backlog} job(s) not graded yet in {workers.work_stream}",
        f"results      {workers.results_waiting} not yet acknowledged by this vault",
        f"dead jobs    {workers.dead_letters} in {workers.dead_stream}",
    ]
    return lines


def _worker_line(worker: WorkerSeen, work_stream: str) -> str:
    other = "" if worker.stream == work_stream else " (another grader: not this vault's work)"
    return (
        f"  {worker.name} on {worker.host}: {'live' if worker.live else 'gone'}, {worker.state}, "
        f"heartbeat {_ago(worker.beat_at)}; done {worker.done}, failures {worker.failures}, "
        f"dead letters {worker.dead_letters}{other}"
    )


def _heartbeat_line(status: Status) -> str:
    beat = status.heartbeat
    if beat is None:
        return "never"
    line = f"{beat.age_s:.0f} s ago (pid {beat.pid}, {beat.state})"
    if beat.state == "stopped":
        return line
    if not status.record_current:
        return line + f" - stale: pid {beat.pid} is gone"
    # A resync stamps only when it starts and ends; the daemon stamps every few seconds.
    if beat.role == DAEMON_ROLE and beat.age_s > STALE_HEARTBEAT_S:
        line += " - stale: the daemon may be hung"
    return line


def _activity_line(status: Status) -> str:
    activity = status.activity
    if activity is not None:
        return activity
    beat = status.heartbeat
    was = "" if beat is None or not beat.activity else f" (last seen {beat.activity})"
    if status.running:
        return f"unknown: pid {status.holder_pid} has written no record yet{was}"
    return "none: no aclarai daemon or resync runs" + (
        "" if beat is None or beat.state == "stopped" else was
    )


def _looked_line(status: Status) -> str:
    at = status.heartbeat.looked_at if status.heartbeat is not None else None
    return "never" if at is None else f"{_ago(at)} ({format_utc(at)})"


def _ungraded_line(status: Status) -> str:
    if status.oldest_waiting is not None:
        note, since = status.oldest_waiting
        line = f"oldest change {_ago(since)}, in {note} ({status.queue_depth} block(s) wait)"
    elif status.settling:
        line = f"none queued; {status.settling} note(s) settling (blocks that left them)"
    else:
        line = "none: every change seen is graded" if status.graded else "none queued"
    paragraphs, notes = status.unmarked
    if paragraphs:
        line += (
            f"; {paragraphs} paragraph(s) of {notes} adopted note(s) have no id yet, and are "
            "not graded (`aclarai adopt` gives them one)"
        )
    return line


def _error_line(status: Status) -> str:
    beat = status.heartbeat
    if beat is None or beat.last_error is None:
        return "none"
    at = "" if beat.last_error_at is None else f"{_ago(beat.last_error_at)}: "
    return at + beat.last_error


def _ago(unix_s: float) -> str:
    seconds = max(0.0, time.time() - unix_s)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def _usage_line(usage: Mapping[str, int]) -> str:
    counters = UsageCounters()
    known = counters.snapshot()
    counters.add(**{name: value for name, value in usage.items() if name in known})
    return counters.summary()
