"""``aclarai status``: is the daemon running, what is queued, what failed, what is stored."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aclarai.agents import UsageCounters
from aclarai.daemon.config import Config
from aclarai.daemon.factory import QUEUE_FILE, build_queue, build_store, build_vault
from aclarai.daemon.vault.control import (
    MODEL_DOWN_META,
    Heartbeat,
    read_heartbeat,
    read_paused,
    read_usage,
)
from aclarai.daemon.vault.lock import LOCK_NAME, is_held, read_holder
from aclarai.daemon.vault.notesync import NoteSync
from aclarai.daemon.vault.queue import QueueEntry
from aclarai.graph import DEFAULT_QUALITY_THRESHOLD, StoreCounts, StoredClaim

STALE_HEARTBEAT_S = 30.0
LOW_QUALITY_SHOWN = 10
CLAIM_TEXT_SHOWN = 80


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
    drift: int | None = None
    """With --verify: blocks whose stored hash differs from the vault's (0 when in step)."""
    heartbeat: Heartbeat | None = None
    """The daemon's last stamp (it stamps every few seconds while it runs)."""
    quality_threshold: float = DEFAULT_QUALITY_THRESHOLD
    low_quality: list[StoredClaim] = field(default_factory=list)
    """The lowest-quality claims below ``quality_threshold`` (at most ``LOW_QUALITY_SHOWN``)."""
    llm_usage: dict[str, int] = field(default_factory=dict)
    """What every resync and daemon run on this vault has spent on the LLM endpoint."""
    model_down_since: str | None = None
    """When the daemon found the model endpoint unreachable, while it still is."""


def collect_status(config: Config, vault_root: Path, *, verify: bool = False) -> Status:
    state_dir = config.state_dir_for(vault_root)
    threshold = config.threshold.claim_quality
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
    finally:
        queue.close()
    counts = error = None
    drift = None
    low_quality: list[StoredClaim] = []
    try:
        store = build_store(config, state_dir)
        try:
            counts = store.counts(quality_threshold=threshold)
            low_quality = store.low_quality_claims(threshold, LOW_QUALITY_SHOWN)
            if verify:
                notes = NoteSync(build_vault(config, vault_root), store, None)
                report = notes.sync_vault(dry_run=True, force_read=True)
                drift = report.dirty_blocks
        finally:
            store.close()
    except Exception as exc:
        error = str(exc)
    return Status(
        vault=vault_root,
        state_dir=state_dir,
        running=is_held(state_dir),
        holder=read_holder(state_dir / LOCK_NAME),
        queue_depth=depth,
        dead_letters=dead,
        last_resync=last,
        paused=paused,
        counts=counts,
        counts_error=error,
        drift=drift,
        heartbeat=heartbeat,
        quality_threshold=threshold,
        low_quality=low_quality,
        llm_usage=usage,
        model_down_since=model_down,
    )


def format_status(status: Status) -> str:
    lines = [
        f"vault        {status.vault}",
        f"state dir    {status.state_dir}",
        f"daemon       {'running (' + status.holder + ')' if status.running else 'not running'}",
        f"heartbeat    {_heartbeat_line(status)}",
        f"paused       {'yes' if status.paused else 'no'}",
        f"queue depth  {status.queue_depth}",
        f"dead letters {len(status.dead_letters)}",
        f"last resync  {status.last_resync or 'never'}",
    ]
    for entry in status.dead_letters:
        lines.append(f"  {entry.block_id} in {entry.file}: {entry.last_error}")
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
            lines.append(f"  {shown}  {claim.block_id}  {_shorten(claim.text)}")
    else:
        lines.append(f"graph        unavailable: {status.counts_error}")
    usage = _usage_line(status.llm_usage) if status.llm_usage else "none recorded"
    lines.append(f"llm usage    {usage}")
    if status.model_down_since is not None:
        lines.append(f"model        unreachable since {status.model_down_since}, work queued")
    if status.drift is not None:
        drift = "in step" if status.drift == 0 else f"{status.drift} block(s) differ from the vault"
        lines.append(f"verify       {drift}")
    return "\n".join(lines)


def _heartbeat_line(status: Status) -> str:
    beat = status.heartbeat
    if beat is None:
        return "never"
    line = f"{beat.age_s:.0f} s ago (pid {beat.pid}, {beat.state})"
    if status.running and beat.state != "stopped" and beat.age_s > STALE_HEARTBEAT_S:
        line += " - stale: the daemon may be hung"
    return line


def _usage_line(usage: Mapping[str, int]) -> str:
    counters = UsageCounters()
    known = counters.snapshot()
    counters.add(**{name: value for name, value in usage.items() if name in known})
    return counters.summary()


def _shorten(text: str) -> str:
    """One line of at most ``CLAIM_TEXT_SHOWN`` characters: the listing stays a table."""
    flat = " ".join(text.split())
    if len(flat) <= CLAIM_TEXT_SHOWN:
        return flat
    return flat[: CLAIM_TEXT_SHOWN - 1] + "…"
