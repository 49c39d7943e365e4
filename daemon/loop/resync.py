"""``aclarai resync``: one whole pass over a vault, the same code path as the daemon's
periodic reconcile.

Sync every note (:mod:`aclarai.daemon.vault.notesync`: enqueue what changed, sync the store), then
drain the durable queue (extract, evaluate, write scores to the graph and back to the notes). A
crash at any point leaves the queue on disk; the next run finishes the work.
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from aclarai.daemon.config import AdoptSettings, Config
from aclarai.daemon.factory import (
    build_agents,
    build_queue,
    build_search_embedder,
    build_store,
    build_vault,
    consumer_processing,
    search_embedder_name,
)
from aclarai.daemon.intake.adopt import adopt_files, readopt
from aclarai.daemon.intake.importer import ImportReport, import_rows
from aclarai.daemon.intake.inbox import drain_inbox, inbox_for
from aclarai.daemon.loop.consumer import DirtyBlockConsumer
from aclarai.daemon.loop.liveness import Liveness
from aclarai.daemon.loop.take import DrainStats
from aclarai.daemon.reports.dashboard import DashboardWrite, graph_counts, refresh_dashboard
from aclarai.daemon.reports.verify import parsed_search_docs
from aclarai.daemon.search.vectors import SearchRefresh, refresh_search
from aclarai.daemon.vault.bounds import bind_to_vault
from aclarai.daemon.vault.control import UsageRecorder
from aclarai.daemon.vault.lock import ONE_SHOT_ROLE, VaultLock
from aclarai.daemon.vault.notes import Vault
from aclarai.daemon.vault.notesync import NoteSync, SyncReport
from aclarai.daemon.vault.queue import Dirty, DurableQueue
from aclarai.daemon.vault.writer import remove_stale_temp_files, sha256_bytes
from aclarai.graph import DEFAULT_QUALITY_THRESHOLD, GraphStore, StoreCounts
from aclarai.parsers import (
    AclaraiError,
    EvaluationError,
    StoreError,
    StoreUnavailable,
    utc_now,
)

log = logging.getLogger(__name__)

DASHBOARD_DIGEST = "dashboard_sha256"
"""Queue metadata: the sha256 of the dashboard as the last resync left it."""


@dataclass
class ResyncSummary:
    vault: Path
    state_dir: Path
    synced: SyncReport
    drain: DrainStats
    counts: StoreCounts | None
    elapsed_s: float
    dry_run: bool = False
    usage: dict[str, int] = field(default_factory=dict)
    store_error: str | None = None
    """Why the graph store went away during the run; its work stays queued."""
    queued: int | None = None
    """Blocks still in the queue after the run (waiting for a retry or for the store)."""
    quality_threshold: float = DEFAULT_QUALITY_THRESHOLD
    """What ``counts.low_quality`` counts claims below (``threshold.claim_quality``)."""
    dashboard: DashboardWrite | None = None
    """The dashboard note at the end of the pass (``None``: turned off or not written)."""
    model_error: str | None = None
    """Why the model did nothing useful (unreachable, or every extraction or evaluation failed)."""
    imported: ImportReport | None = None
    """What the inbox drain before the pass imported, or would (``None``: no inbox)."""
    search: SearchRefresh | None = None
    """What the pass did to the search index (``None``: the store went away first)."""

    @property
    def ok(self) -> bool:
        """False when the graph store went away, or when every note failed to be read."""
        if self.store_error is not None:
            return False
        unreadable = self.synced.files_unreadable
        return unreadable == 0 or unreadable < self.synced.files_seen


def reconcile(
    notes: NoteSync,
    consumer: DirtyBlockConsumer,
    queue: DurableQueue,
    *,
    reevaluate: bool = False,
    progress: Callable[[int], None] | None = None,
    adopt: AdoptSettings | None = None,
    dashboard: str | None = None,
    settle_grace_s: float = 0.0,
) -> tuple[SyncReport, DrainStats]:
    """Sync the whole vault and drain the queue: resync and the daemon's reconcile.

    The queue is drained after each batch of notes is synced, while the consumer still holds
    those notes as synced (no second read or parse), and once more at the end. Adopted notes
    the sync found in need are adopted again (``adopt``, see
    :func:`~aclarai.daemon.intake.adopt.readopt`). Blocks that left their notes at least
    ``settle_grace_s`` ago are marked deleted, those a drain's syncs found gone included. Once
    the model endpoint is found unreachable the pass only syncs; once the store is, it stops.
    Either way the work stays queued.
    """
    stats = DrainStats()
    new_paragraphs = True if adopt is None else adopt.new_paragraphs

    def drain() -> bool:
        if not (stats.model_outages or stats.store_errors):
            stats.add(consumer.drain())
        return not stats.store_errors

    report = notes.sync_vault(progress=progress, on_batch=drain, settle_grace_s=settle_grace_s)
    if not stats.store_errors:
        readopt(notes, report, new_paragraphs=new_paragraphs, dashboard=dashboard)
    if reevaluate and not stats.store_errors:
        queue.enqueue(Dirty(b.id, b.file, b.hash, "rescore") for b in notes.store.live_blocks())
    drain()
    if not stats.store_errors:
        late = notes.settle(grace_s=settle_grace_s)
        report.vanished.update(late)
        report.deleted_blocks += len(late)
    return report, stats


def dry_run_summary(
    notes: NoteSync,
    state_dir: Path,
    started: float,
    *,
    quality_threshold: float,
    progress: Callable[[int], None] | None = None,
    imported: ImportReport | None = None,
) -> ResyncSummary:
    """What a pass would change, changing nothing (``resync --dry-run``, here or by the daemon).

    ``imported`` is what draining the inbox would import (a dry-run drain's report).
    """
    report = notes.sync_vault(dry_run=True, progress=progress)
    return ResyncSummary(
        notes.vault.root,
        state_dir,
        report,
        DrainStats(),
        graph_counts(notes.store, quality_threshold),
        time.monotonic() - started,
        dry_run=True,
        quality_threshold=quality_threshold,
        imported=imported,
    )


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
    config = bind_to_vault(config, vault_root)
    if not vault_root.is_dir():
        raise AclaraiError(f"vault {vault_root} does not exist or is not a folder")
    state_dir = config.state_dir_for(vault_root)
    threshold = config.threshold.claim_quality
    vault = build_vault(config, vault_root)
    # A dry run writes nothing to the vault, so it neither needs nor leaves the vault's lock.
    lock = VaultLock(state_dir, ONE_SHOT_ROLE, vault=None if dry_run else vault.root)
    lock.acquire(timeout_s=lock_timeout_s)
    with lock:
        queue = build_queue(config, state_dir)
        store = build_store(config, state_dir)
        try:
            notes = NoteSync(vault, store, None if dry_run else queue)
            if dry_run:
                inbox = inbox_for(config, vault.root)
                return dry_run_summary(
                    notes,
                    state_dir,
                    started,
                    quality_threshold=threshold,
                    progress=progress,
                    imported=drain_inbox(inbox, dry_run=True)[0] if inbox is not None else None,
                )
            record = Liveness(queue, started_at=time.time(), role=ONE_SHOT_ROLE)
            record.stamp("running", "syncing")
            queue.recover_inflight()
            queue.make_due()
            remove_stale_temp_files(vault.root)
            inbox = inbox_for(config, vault.root)
            imported = drain_inbox(inbox)[0] if inbox is not None else None
            adopt_files(
                (vault.root / folder for folder in config.adopt.folders),
                root=vault.root,
                dashboard=config.dashboard.path,
                store=store,
            )
            report, stats = SyncReport(), DrainStats()
            usage: dict[str, int] = {}
            store_error: str | None = None
            model = ""
            try:
                agents = build_agents(config, state_dir, store, reevaluate=reevaluate)
                model = agents.evaluator.model_id
                try:
                    consumer = DirtyBlockConsumer(
                        notes,
                        queue,
                        agents.extractor,
                        agents.evaluator,
                        consumer_processing(config),
                        config.window.claimify,
                        reevaluate=reevaluate,
                        index=agents.index,
                        progress=record.grading,
                        settled=agents.settle,
                        cancel=agents.cancel,
                    )
                    report, stats = reconcile(
                        notes,
                        consumer,
                        queue,
                        reevaluate=reevaluate,
                        progress=progress,
                        adopt=config.adopt,
                        dashboard=config.dashboard.path,
                    )
                finally:
                    usage = agents.usage.snapshot() if agents.usage is not None else {}
                    agents.close()
                    UsageRecorder(queue, agents.usage).flush()
                counts: StoreCounts | None = (
                    None if stats.store_errors else graph_counts(store, threshold)
                )
            except StoreUnavailable as exc:
                # The sync's own store calls failed (the consumer logs the drain's): one line.
                log.warning("graph store unavailable; queued work waits for the next run: %s", exc)
                store_error, counts = str(exc), None
            if store_error is None and stats.store_errors:
                store_error = stats.store_errors[0]
            model_error = stats.model_failure()
            if store_error or model_error:
                record.error(store_error or model_error or "")
            record.looked()
            record.stamp("stopped")
            dashboard = None
            search = None
            if store_error is None:
                search = _refresh_search(
                    config, state_dir, store, vault, counts.blocks if counts else None
                )
                if model_error is None:
                    # A pass the model sat out did not bring the vault up to date.
                    queue.set_meta("last_resync", utc_now())
                if not _nothing_to_grade(report, counts):
                    dashboard = _dashboard(config, vault.root, store, queue, model, report, stats)
            else:
                # Driver messages span lines; the summary gives one.
                store_error = " ".join(store_error.split())
            return ResyncSummary(
                vault.root,
                state_dir,
                report,
                stats,
                counts,
                time.monotonic() - started,
                usage=usage,
                store_error=store_error,
                queued=queue.depth(),
                quality_threshold=threshold,
                dashboard=dashboard,
                model_error=model_error,
                imported=imported,
                search=search,
            )
        finally:
            store.close()
            queue.close()


def _refresh_search(
    config: Config, state_dir: Path, store: GraphStore, vault: Vault, live_blocks: int | None
) -> SearchRefresh | None:
    """The index mended and embedded; a failure of either is one line, not the pass's. The
    embedder is loaded only when some block lacks its vector."""
    embedder, closers = None, []
    name = search_embedder_name(config)
    try:
        if name is not None and store.search.unembedded(name, 1):
            embedder, closers = build_search_embedder(config, state_dir)
    except AclaraiError as exc:
        log.warning("search vectors off for this pass: %s", exc)
    try:
        return refresh_search(
            store, embedder, lambda: parsed_search_docs(vault, store), live_blocks
        )
    except (StoreError, EvaluationError) as exc:
        log.warning("search index not refreshed: %s", exc)
        return None
    finally:
        for close in closers:
            close()


def _dashboard(
    config: Config,
    root: Path,
    store: GraphStore,
    queue: DurableQueue,
    model: str,
    report: SyncReport,
    stats: DrainStats,
) -> DashboardWrite | None:
    """The dashboard after a pass. A pass that changed nothing (no dirty or deleted block, no
    note processed) leaves the dashboard it last wrote as it is without asking the store: on a
    large vault its queries are most of an unchanged resync's time. One edited by hand is
    written again."""
    path = config.dashboard.path
    if path is None:
        return None
    target = root / path
    idle = not (report.dirty_blocks or report.rescore_blocks or report.deleted_blocks)
    digest = _digest(target) if idle and stats.files_processed == 0 else None
    if digest is not None and digest == queue.get_meta(DASHBOARD_DIGEST):
        return DashboardWrite(target, written=False)
    written = refresh_dashboard(config, root, store, queue, model=model)
    if written is not None:
        queue.set_meta(DASHBOARD_DIGEST, _digest(target) or "")
    return written


def _digest(path: Path) -> str | None:
    try:
        return sha256_bytes(path.read_bytes())
    except OSError:
        return None


def _token_rows(usage: dict[str, int], blocks: int) -> list[tuple[str, object]]:
    """What a block cost in prompt tokens, and the share the server's prompt cache served."""
    prompt = usage.get("prompt_tokens", 0)
    if not prompt:
        return []
    rows: list[tuple[str, object]] = []
    if blocks:
        rows.append(("llm prompt_tokens per block", round(prompt / blocks)))
    rows.append(("llm cached share", f"{100 * usage.get('cached_tokens', 0) / prompt:.0f}%"))
    return rows


def format_summary(summary: ResyncSummary) -> str:
    s, d, c = summary.synced, summary.drain, summary.counts
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
            (f"graph: claims below quality {summary.quality_threshold:.2f}", c.low_quality),
        ]
    for key, value in summary.usage.items():
        rows.append((f"llm {key}", value))
    rows += _token_rows(summary.usage, d.blocks_processed)
    if summary.queued is not None:
        rows.append(("blocks still queued", summary.queued))
    if summary.dashboard is not None:
        state = "written" if summary.dashboard.written else "unchanged"
        rows.append(("dashboard", f"{summary.dashboard.path} ({state})"))
    if summary.search is not None and summary.search.embedded:
        rows.append(
            (
                "search: blocks embedded",
                f"{summary.search.embedded} ({summary.search.seconds:.2f} s)",
            )
        )
    rows.append(("time", f"{summary.elapsed_s:.2f} s"))
    width = max(len(k) for k, _ in rows)
    if summary.imported is not None:
        width = max(width, *(len(k) + 2 for k, _ in import_rows(summary.imported)))
    title = "aclarai resync" + (" --dry-run" if summary.dry_run else "") + f": {summary.vault}"
    lines = [title, "-" * len(title)]
    if _nothing_adopted(summary):
        return "\n".join([*lines, *_adopt_hint(summary.vault, s.files_seen)])
    if summary.imported is not None:
        imported = import_rows(summary.imported)
        lines.append("step 1, import the inbox:")
        lines += [f"  {k.ljust(width - 2)}  {v}" for k, v in imported]
        lines += [f"  error: {error}" for error in summary.imported.errors]
        lines.append("step 2, sync and grade:")
    lines += [f"{k.ljust(width)}  {v}" for k, v in rows]
    if summary.dry_run:
        importing = summary.imported is not None and (
            summary.imported.created or summary.imported.extended
        )
        if s.dirty_files or not importing:
            lines.append("would sync and evaluate:" if s.dirty_files else "nothing would change")
        else:
            lines.append("would sync and evaluate the imported notes")
        lines += [f"  {rel}: {n} block(s)" for rel, n in sorted(s.dirty_files.items())]
    if summary.store_error is not None:
        lines += [
            f"graph store unavailable: {summary.store_error}",
            "the queued work is kept: run `aclarai resync` again once the store is back",
        ]
    if summary.model_error is not None:
        lines += [
            f"model unavailable: {summary.model_error}",
            "the queued work is kept: run `aclarai resync` again once the model answers",
        ]
    return "\n".join(lines)


def _nothing_to_grade(synced: SyncReport, counts: StoreCounts | None) -> bool:
    """A readable vault of ordinary notes: no block in it nor in the graph, none just removed
    from it (an unadopt), no note that failed to be read. Such a pass writes nothing into the
    vault, not even the dashboard: its summary says how to adopt notes."""
    return (
        synced.blocks_seen == 0
        and synced.deleted_blocks == 0
        and counts is not None
        and counts.blocks == 0
        and not synced.errors
    )


def _nothing_adopted(summary: ResyncSummary) -> bool:
    """Whether the summary is the hint to adopt: nothing to grade, and nothing failed."""
    return (
        _nothing_to_grade(summary.synced, summary.counts)
        and summary.ok
        and summary.model_error is None
    )


def _adopt_hint(vault: Path, notes: int) -> list[str]:
    """What to do with a vault whose notes have no aclarai blocks yet."""
    quoted = shlex.quote(str(vault))
    return [
        f"{notes} note(s), none with aclarai blocks yet: nothing to grade.",
        "To grade your own notes, give each paragraph a block id first, then resync:",
        f"  aclarai adopt {quoted}",
        f"  aclarai resync {quoted}",
        "`aclarai adopt FOLDER` adopts one folder only, `aclarai unadopt` takes the ids out",
        "again, and adopt.folders in the config has resync and the daemon adopt new notes.",
    ]
