"""``aclarai resync``: one whole pass over a vault, the same code path as the daemon's
periodic reconcile.

Scan (enqueue what changed, sync the store), then drain the durable queue (extract, evaluate,
write scores to the graph and back to the notes). A crash at any point leaves the queue on disk;
the next run finishes the work.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from aclarai.daemon.config import Config
from aclarai.daemon.consumer import ConsumerSettings, DirtyBlockConsumer, DrainStats
from aclarai.daemon.factory import (
    build_evaluator,
    build_extractor,
    build_queue,
    build_store,
    build_vault,
)
from aclarai.daemon.lock import VaultLock
from aclarai.daemon.queue import Dirty, DurableQueue
from aclarai.daemon.scan import Scanner, ScanReport
from aclarai.daemon.writer import remove_stale_temp_files
from aclarai.graph import GraphStore, StoreCounts
from aclarai.parsers import AclaraiError

log = logging.getLogger(__name__)


@dataclass
class ResyncSummary:
    vault: Path
    state_dir: Path
    scan: ScanReport
    drain: DrainStats
    counts: StoreCounts | None
    elapsed_s: float
    dry_run: bool = False
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """False only when nothing at all could be done: every note failed to be read."""
        return self.scan.files_unreadable == 0 or self.scan.files_unreadable < self.scan.files_seen


def consumer_settings(config: Config, *, reevaluate: bool = False) -> ConsumerSettings:
    return ConsumerSettings(
        workers=config.processing.workers,
        batch_size=config.processing.batch_size,
        window_before=config.window.claimify.p,
        window_after=config.window.claimify.f,
        reevaluate=reevaluate,
    )


def reconcile(
    scanner: Scanner,
    consumer: DirtyBlockConsumer,
    queue: DurableQueue,
    store: GraphStore,
    *,
    reevaluate: bool = False,
    progress: Callable[[int], None] | None = None,
) -> tuple[ScanReport, DrainStats]:
    """Scan the whole vault, then drain the queue: resync and the daemon's reconcile."""
    report = scanner.scan(full=True, progress=progress)
    if reevaluate:
        everything = [
            Dirty(block.id, block.file, block.hash, "rescore")
            for path in sorted(store.file_states())
            for block in store.blocks_of_file(path)
        ]
        queue.enqueue(everything)
    return report, consumer.drain()


def resync(
    config: Config,
    vault_root: Path,
    *,
    dry_run: bool = False,
    reevaluate: bool = False,
    lock_timeout_s: float | None = None,
    progress: Callable[[int], None] | None = None,
) -> ResyncSummary:
    """Bring the store and the notes of ``vault_root`` up to date; see the module docstring.

    Raises:
        AclaraiError: the vault does not exist, or the store cannot be opened.
    """
    started = time.monotonic()
    if not vault_root.is_dir():
        raise AclaraiError(f"vault {vault_root} does not exist or is not a folder")
    state_dir = config.state_dir_for(vault_root)
    vault = build_vault(config, vault_root)
    lock = VaultLock(state_dir, "resync")
    lock.acquire(timeout_s=lock_timeout_s)
    with lock:
        queue = build_queue(config, state_dir)
        store = build_store(config, state_dir)
        try:
            scanner = Scanner(vault, store, None if dry_run else queue)
            if dry_run:
                report = scanner.scan(full=True, dry_run=True, progress=progress)
                return ResyncSummary(vault.root, state_dir, report, DrainStats(), store.counts(),
                                     time.monotonic() - started, dry_run=True)
            queue.recover_inflight()
            remove_stale_temp_files(vault.root)
            extractor = build_extractor(config, state_dir)
            evaluator = build_evaluator(config, state_dir, reevaluate=reevaluate)
            try:
                consumer = DirtyBlockConsumer(
                    vault, store, queue, extractor, evaluator,
                    consumer_settings(config, reevaluate=reevaluate),
                )
                report, stats = reconcile(
                    scanner, consumer, queue, store, reevaluate=reevaluate, progress=progress
                )
                usage = _usage(evaluator)
            finally:
                evaluator.close()
                extractor.close()
            queue.set_meta("last_resync", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            return ResyncSummary(vault.root, state_dir, report, stats, store.counts(),
                                 time.monotonic() - started, usage=usage)
        finally:
            store.close()
            queue.close()


def _usage(evaluator: object) -> dict[str, int]:
    stats = getattr(evaluator, "usage", None)
    if stats is None:
        return {}
    return {k: int(v) for k, v in vars(stats).items() if isinstance(v, int | float)}


def format_summary(summary: ResyncSummary) -> str:
    s, d, c = summary.scan, summary.drain, summary.counts
    rows = [
        ("notes seen", s.files_seen),
        ("notes with aclarai blocks", s.files_with_markers),
        ("notes read / parsed", f"{s.files_read} / {s.files_parsed}"),
        ("blocks parsed", s.blocks_seen),
        ("dirty blocks" + (" (would sync)" if summary.dry_run else ""), s.dirty_blocks),
        ("claims extracted", d.claims_extracted),
        ("claims evaluated", d.claims_evaluated),
        ("scores written to the graph", d.scores_written),
        ("null scores (evaluation failed)", d.null_scores),
        ("notes rewritten", d.files_written),
        ("blocks marked deleted", s.deleted_blocks),
        ("duplicate ids skipped", len(s.duplicates)),
        ("problems", len(s.errors) + len(d.errors)),
    ]
    if c is not None:
        rows += [
            ("graph: blocks / claims", f"{c.blocks} / {c.claims}"),
            ("graph: scored claims / with null", f"{c.scored_claims} / {c.null_scores}"),
        ]
    for key, value in summary.usage.items():
        rows.append((f"llm {key}", value))
    rows.append(("time", f"{summary.elapsed_s:.2f} s"))
    width = max(len(k) for k, _ in rows)
    title = "aclarai resync" + (" --dry-run" if summary.dry_run else "") + f": {summary.vault}"
    lines = [title, "-" * len(title)]
    lines += [f"{k.ljust(width)}  {v}" for k, v in rows]
    return "\n".join(lines)


def terminal_progress(label: str) -> Callable[[int], None] | None:
    """A one-line progress counter on a terminal; nothing when stderr is not one."""
    if not sys.stderr.isatty():
        return None

    def show(n: int) -> None:
        if n % 100 == 0:
            sys.stderr.write(f"\r{label}: {n} notes")
            sys.stderr.flush()

    return show
