"""``aclarai status``: is the daemon running, what is queued, what failed, what is stored."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aclarai.daemon.config import Config
from aclarai.daemon.control import Heartbeat, read_heartbeat
from aclarai.daemon.factory import build_queue, build_store, build_vault
from aclarai.daemon.lock import LOCK_NAME, is_held, read_holder
from aclarai.daemon.queue import QueueEntry
from aclarai.daemon.scan import Scanner
from aclarai.graph import StoreCounts

STALE_HEARTBEAT_S = 30.0


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


def collect_status(config: Config, vault_root: Path, *, verify: bool = False) -> Status:
    state_dir = config.state_dir_for(vault_root)
    queue = build_queue(config, state_dir)
    try:
        depth = queue.depth()
        dead = queue.dead_letters()
        last = queue.get_meta("last_resync")
        paused = queue.get_meta("paused") == "1" or (state_dir / "PAUSED").exists()
        heartbeat = read_heartbeat(queue)
    finally:
        queue.close()
    counts = error = None
    drift = None
    try:
        store = build_store(config, state_dir)
        try:
            counts = store.counts()
            if verify:
                report = Scanner(build_vault(config, vault_root), store, None).scan(
                    full=True, dry_run=True, force_read=True
                )
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
        ]
    else:
        lines.append(f"graph        unavailable: {status.counts_error}")
    if status.drift is not None:
        lines.append(
            f"verify       {'in step' if status.drift == 0 else f'{status.drift} blocks differ'}"
        )
    return "\n".join(lines)


def _heartbeat_line(status: Status) -> str:
    beat = status.heartbeat
    if beat is None:
        return "never"
    line = f"{beat.age_s:.0f} s ago (pid {beat.pid}, {beat.state})"
    if status.running and beat.state != "stopped" and beat.age_s > STALE_HEARTBEAT_S:
        line += " - stale: the daemon may be hung"
    return line
