"""The dashboard note: ask the store and the queue, render (pure), write through the one writer.

The note lives in the vault at ``dashboard.path`` (``None`` turns it off) and is excluded from
the vault's notes (see :func:`aclarai.daemon.factory.build_vault`), so it is never synced,
graded or watched. It is written only when something other than its time line changed.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from aclarai.daemon.config import Config
from aclarai.daemon.vault.control import read_paused
from aclarai.daemon.vault.queue import DurableQueue
from aclarai.daemon.vault.writer import create_if_absent, sha256_bytes, write_if_unchanged
from aclarai.graph import GraphStore, StoreCounts, StoredBlock, StoredClaim, key_block_id
from aclarai.parsers import (
    SCORE_NAMES,
    AclaraiError,
    ClaimRef,
    DashboardData,
    DeadLetter,
    NoteStats,
    format_utc,
    named_scores,
    render_dashboard,
    same_dashboard,
    shown_threshold,
    utc_now,
)

log = logging.getLogger(__name__)

CLAIMS_SHOWN = 100
"""Claims listed per section; ``aclarai claims`` lists them all."""


@dataclass(frozen=True, slots=True)
class DashboardWrite:
    path: Path
    written: bool
    """False when only the time would have changed."""


def claim_ref(claim: StoredClaim, block: StoredBlock | None) -> ClaimRef:
    """A stored claim with where its block lives, as the dashboard and ``aclarai claims``
    show it."""
    score = claim.score
    return ClaimRef(
        claim_id=claim.id,
        text=claim.text,
        file=block.file if block is not None else "",
        block_id=key_block_id(claim.block_id),
        block_text=block.text if block is not None else "",
        **(named_scores(score) if score else dict.fromkeys(SCORE_NAMES)),
        quality=score.quality if score else None,
        verdict=score.verdict if score else None,
        justification=score.justification if score else None,
        status=score.status if score else "not evaluated",
    )


def graph_counts(store: GraphStore, threshold: float) -> StoreCounts:
    """The store's counts, with the claims below ``threshold`` counted as every report lists
    them (``claims``, the dashboard, ``status``, resync's summary): by their quality as shown,
    to two decimals, one per block they originate from."""
    return store.counts(quality_threshold=shown_threshold(threshold))


def collect_dashboard(
    config: Config, state_dir: Path, store: GraphStore, queue: DurableQueue, *, model: str
) -> DashboardData:
    """What the dashboard shows, from the store and the queue."""
    threshold = config.threshold.claim_quality
    # Listed below the threshold: the claims whose quality, as shown, is below it.
    below = shown_threshold(threshold)
    low = store.low_quality_claims(below, CLAIMS_SHOWN)
    failed = store.failed_claims()
    notes = store.note_stats(below)
    weakest_ids = {n.weakest.block_id for n in notes if n.weakest is not None}
    blocks = store.get_blocks({c.block_id for c in (*low, *failed[:CLAIMS_SHOWN])} | weakest_ids)
    notes = [
        _with_block_text(n, blocks[n.weakest.block_id])
        if n.weakest is not None and n.weakest.block_id in blocks
        else n
        for n in notes
    ]
    return DashboardData(
        threshold=threshold,
        model=model,
        low_quality=[claim_ref(c, blocks.get(c.block_id)) for c in low],
        low_quality_total=sum(n.below for n in notes),
        failed=[claim_ref(c, blocks.get(c.block_id)) for c in failed[:CLAIMS_SHOWN]],
        failed_total=len(failed),
        notes=notes,
        score_counts=store.score_counts(),
        daily=store.daily_quality(),
        dead_letters=[
            DeadLetter(key_block_id(e.block_id), e.file, e.last_error or "")
            for e in queue.dead_letters()
        ],
        queue_depth=queue.depth(),
        paused=read_paused(queue, state_dir),
        blocks=sum(n.blocks for n in notes),
        claims=sum(n.claims for n in notes),
        scored=sum(n.scored for n in notes),
    )


def _with_block_text(note: NoteStats, block: StoredBlock) -> NoteStats:
    if note.weakest is None:
        return note
    return replace(
        note, weakest=replace(note.weakest, block_id=block.block_id, block_text=block.text)
    )


def write_dashboard(
    config: Config,
    vault_root: Path,
    store: GraphStore,
    queue: DurableQueue,
    *,
    model: str,
    now: float | None = None,
) -> DashboardWrite | None:
    """Render the dashboard and write it if more than its time changed.

    Returns:
        Where it is and whether it was written; ``None`` when ``dashboard.path`` is null.

    Raises:
        WriteConflict: someone changed or created the note while it was being written.
        OSError: the folder cannot be made or written.
        StoreError: the store could not answer.
    """
    if config.dashboard.path is None:
        return None
    target = vault_root / config.dashboard.path
    data = collect_dashboard(config, config.state_dir_for(vault_root), store, queue, model=model)
    written_at = utc_now() if now is None else format_utc(now)
    text = render_dashboard(data, written_at)
    try:
        old: bytes | None = target.read_bytes()
    except FileNotFoundError:
        old = None
    if old is not None and same_dashboard(old.decode("utf-8", "replace"), text):
        return DashboardWrite(target, written=False)
    new = text.encode("utf-8")
    if old is None:
        target.parent.mkdir(parents=True, exist_ok=True)
        create_if_absent(target, new)
    else:
        write_if_unchanged(target, new, expected_sha256=sha256_bytes(old))
    log.info("dashboard written: %s", target)
    return DashboardWrite(target, written=True)


def refresh_dashboard(
    config: Config, vault_root: Path, store: GraphStore, queue: DurableQueue, *, model: str
) -> DashboardWrite | None:
    """:func:`write_dashboard` for callers that go on whatever happens: a failure is one log
    line (the next drain or resync writes it)."""
    try:
        return write_dashboard(config, vault_root, store, queue, model=model)
    except (AclaraiError, OSError) as exc:
        log.warning("dashboard not written: %s", exc)
        return None


class DashboardRefresher:
    """The daemon's dashboard: rewritten after work was done, at most once per
    ``dashboard.min_interval_s``; work done meanwhile is shown by the next write (the caller
    asks again on its next wake-up)."""

    def __init__(
        self,
        config: Config,
        vault_root: Path,
        store: GraphStore,
        queue: DurableQueue,
        *,
        model: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.vault_root = vault_root
        self.store = store
        self.queue = queue
        self.model = model
        self.clock = clock
        self._due = True
        self._last = -math.inf

    def mark(self) -> None:
        """Something the dashboard shows may have changed."""
        self._due = True

    def maybe_write(self) -> DashboardWrite | None:
        """Write if marked and the interval has passed; a failure is logged and retried."""
        if self.config.dashboard.path is None or not self._due:
            return None
        now = self.clock()
        if now - self._last < self.config.dashboard.min_interval_s:
            return None
        self._last = now
        self._due = False
        result = refresh_dashboard(
            self.config, self.vault_root, self.store, self.queue, model=self.model
        )
        if result is None:
            self._due = True
        return result
