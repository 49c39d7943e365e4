"""``aclarai watch``: the long-running service that keeps a vault and its graph in step.

One process per vault (the vault locks, in the vault's ``.aclarai/`` and in the state dir). On
start it puts entries a crash left in flight back in the queue, removes stale temp files and
starts watching; then a full reconcile (the same code as ``aclarai resync``) picks up every edit
made while it was down. From then on:

- the main thread hands settled notes from the watcher to the watch path (:mod:`.watch_path`,
  through the note-sync path of :mod:`aclarai.daemon.vault.notesync`: one read, one parse, queue
  entries, one store sync) and wakes the consumer;
- one consumer thread drains the queue (:class:`DirtyBlockConsumer`, a bounded pool of
  ``processing.concurrent_notes``) whenever woken or a retry falls due, and refreshes the dashboard;
- apscheduler runs the reconcile on ``watch.reconcile_cron`` and on ``aclarai resync`` requests
  handed over by :mod:`aclarai.daemon.vault.control`, one at a time (``max_instances=1`` and a lock
  shared by both paths), while the consumer loop waits for it to finish draining;
- blocks that leave their note are marked deleted only after ``watch.delete_grace_s``, unless a
  note synced meanwhile holds them (a move: identity, claims and scores kept).

SIGTERM or SIGINT stops taking work and lets in-flight notes finish; what is left stays in the
durable queue. The process exits 0 within 10 s; a second signal exits at once.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger

from aclarai.agents import Embedder, Evaluator, UsageCounters
from aclarai.daemon.config import Config
from aclarai.daemon.factory import (
    build_agents,
    build_queue,
    build_search_embedder,
    build_store,
    build_vault,
    consumer_processing,
)
from aclarai.daemon.intake.importer import ImportReport
from aclarai.daemon.intake.inbox import InboxWatcher, drain_inbox, inbox_for
from aclarai.daemon.loop.consumer import DirtyBlockConsumer
from aclarai.daemon.loop.liveness import daemon_liveness
from aclarai.daemon.loop.resync import (
    ResyncSummary,
    dry_run_summary,
    format_summary,
    reconcile,
)
from aclarai.daemon.loop.systemd import Notifier
from aclarai.daemon.loop.take import DrainStats
from aclarai.daemon.loop.watch_path import WatchPath
from aclarai.daemon.loop.watcher import Changes, OwnWrites, watch_vault
from aclarai.daemon.reports.dashboard import DashboardRefresher, graph_counts
from aclarai.daemon.reports.verify import parsed_search_docs
from aclarai.daemon.search.vectors import SearchRefresh, embed_pending, refresh_search
from aclarai.daemon.vault.bounds import bind_to_vault
from aclarai.daemon.vault.control import (
    DAEMON_ROLE,
    PauseSwitch,
    ResyncAnswer,
    ResyncRequest,
    UsageRecorder,
    answer_request,
    pending_requests,
)
from aclarai.daemon.vault.lock import VaultLock
from aclarai.daemon.vault.notesync import NoteSync
from aclarai.daemon.vault.writer import remove_stale_temp_files
from aclarai.parsers import AclaraiError, EvaluationError, StoreError, utc_now

log = logging.getLogger(__name__)

SHUTDOWN_DEADLINE_S = 9.0
"""After the first signal the process is gone by then, finished or not (the queue keeps work)."""
REQUESTS_EVERY_S = 0.3
CONSUMER_IDLE_S = 1.0
EMBED_PER_STEP = 2048
"""Blocks embedded between two takes (WordLlama: well under a second)."""


def run_daemon(
    config: Config, vault_root: Path, *, stop_event: threading.Event | None = None
) -> int:
    """Watch ``vault_root`` until ``stop_event`` is set or a signal arrives; return 0.

    Raises:
        AclaraiError: the vault does not exist, or the config is unusable.
        VaultBusy: another aclarai process holds this vault.
    """
    config = bind_to_vault(config, vault_root)
    if not vault_root.is_dir():
        raise AclaraiError(f"vault {vault_root} does not exist or is not a folder")
    # Checked when the configuration was loaded.
    trigger = CronTrigger.from_crontab(config.watch.reconcile_cron)
    state_dir = config.state_dir_for(vault_root)
    lock = VaultLock(state_dir, DAEMON_ROLE, vault=vault_root)
    lock.acquire(timeout_s=0.0)
    daemon: _Daemon | None = None
    try:
        daemon = _Daemon(config, vault_root, state_dir, stop_event or threading.Event())
        return daemon.run(trigger)
    finally:
        # Work still running at exit keeps the lock (and its files open) until the process
        # ends, so no other aclarai writes beside it.
        if daemon is None or not daemon.busy:
            if daemon is not None:
                daemon.close()
            lock.release()


class _Daemon:
    """The parts of one running daemon and the threads that share them (see the module doc)."""

    def __init__(
        self, config: Config, vault_root: Path, state_dir: Path, stop: threading.Event
    ) -> None:
        self.config = config
        self.state_dir = state_dir
        self.stop = stop
        self.vault = build_vault(config, vault_root)
        self.queue = build_queue(config, state_dir)
        self.store = build_store(config, state_dir)
        self.agents = build_agents(config, state_dir, self.store)
        self.search_embedder = _search_embedder(config, state_dir)
        self.usage = UsageRecorder(self.queue, self.agents.usage)
        self.own_writes = OwnWrites()
        self.pause = PauseSwitch(self.queue, state_dir)
        self.drain_lock = threading.Lock()
        self.reconcile_lock = threading.Lock()
        self.wake = threading.Event()
        self.notes = NoteSync(self.vault, self.store, self.queue)
        self.notifier = Notifier(*config.systemd_notify())
        self.liveness = daemon_liveness(self.queue, self.notifier, self.agents, config)
        self.consumer = self._consumer(self.agents.evaluator, reevaluate=False)
        self.consumer_thread = threading.Thread(target=self._consume, name="aclarai-consumer")
        self.dashboard = DashboardRefresher(
            config, self.vault.root, self.store, self.queue, model=self.agents.evaluator.model_id
        )
        self.inbox = inbox_for(config, self.vault.root)
        self.inbox_lock = threading.Lock()
        self.inbox_watcher = (
            None
            if self.inbox is None
            else InboxWatcher(
                self.inbox.folder,
                quiet_s=config.watch.quiet_period_s,
                polling=config.watch.polling,
            )
        )
        self.watch_path = WatchPath(
            config,
            self.notes,
            self.own_writes,
            self.liveness,
            queued=self.wake.set,
            deleted=self.dashboard.mark,
        )
        self._next_requests = 0.0
        self._was_paused = False
        self._handled: set[str] = set()
        self._embed_due = True
        self.busy = False

    def _consumer(self, evaluator: Evaluator, *, reevaluate: bool) -> DirtyBlockConsumer:
        return DirtyBlockConsumer(
            self.notes,
            self.queue,
            self.agents.extractor,
            evaluator,
            consumer_processing(self.config),
            self.config.window.claimify,
            reevaluate=reevaluate,
            index=self.agents.index,
            settled=self.agents.settle,
            on_write=self.own_writes.remember,
            # Stopping counts as paused so a reconcile's drain also ends after its batch.
            paused=lambda: self.stop.is_set() or self.pause.is_paused(),
            progress=self.liveness.grading,
        )

    def run(self, trigger: CronTrigger) -> int:
        recovered = self.queue.recover_inflight()
        if recovered:
            log.info("%d queue entries a crash left in flight are pending again", recovered)
        remove_stale_temp_files(self.vault.root)
        self.liveness.stamp("starting")
        previous = _install_signal_handlers(self._on_signal)
        scheduler = BackgroundScheduler(
            job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": None}
        )
        consumer = self.consumer_thread
        consumer.daemon = True
        try:
            consumer.start()
            changes_iter = watch_vault(
                self.vault,
                self.config.watch,
                stop_event=self.stop,
                own_writes=self.own_writes,
                known_notes=self._known_notes,
            )
            for n, changes in enumerate(changes_iter):
                if n == 0:
                    # The observer is up: an edit made during the first reconcile is not lost.
                    scheduler.add_job(self._scheduled, args=("start-up",), id="start-up")
                    scheduler.add_job(self._scheduled, trigger, args=("periodic",), id="cron")
                    scheduler.start()
                    self.notifier.ready(f"watching {self.vault.root}")
                self._step(changes, scheduler)
        finally:
            self._shutdown(scheduler, consumer, previous)
        return 0

    def _step(self, changes: Changes, scheduler: BackgroundScheduler) -> None:
        # The watch loop is the service: log whatever went wrong and keep serving. Housekeeping
        # (heartbeat, requests) runs even when syncing the changes failed.
        for work in (
            lambda: self.watch_path.apply(changes),
            lambda: self._housekeeping(scheduler, changes),
        ):
            try:
                work()
            except Exception as exc:
                log.exception("unexpected error in the watch loop; going on")
                self.liveness.error(f"unexpected error in the watch loop: {exc!r}")

    def _known_notes(self, prefix: str) -> list[str]:
        return [path for path in self.store.file_states() if path.startswith(prefix)]

    def _housekeeping(self, scheduler: BackgroundScheduler, changes: Changes) -> None:
        if self.stop.is_set():
            # Stopping: the consumer and the watcher end on purpose, and are no one to report.
            return
        now = time.monotonic()
        paused = self.pause.is_paused()
        if paused != self._was_paused:
            self._was_paused = paused
            log.info(
                "%s",
                "paused: no evaluation or write-back until `aclarai resume`"
                if paused
                else "resumed",
            )
            self.notifier.status("paused" if paused else f"watching {self.vault.root}")
            self.dashboard.mark()
            self.wake.set()
        syncing = self.watch_path.pending or self.reconcile_lock.locked() or changes.settling
        if self.liveness.tick(
            paused=paused,
            model_down=self.consumer.model_down,
            syncing=bool(syncing),
            observing=changes.observing,
            consumer_alive=self.consumer_thread.is_alive(),
        ):
            self.usage.flush()
        if self.inbox_watcher is not None and self.inbox_watcher.due(now):
            scheduler.add_job(self._scheduled_inbox, id="inbox", replace_existing=True)
        if now >= self._next_requests:
            self._next_requests = now + REQUESTS_EVERY_S
            for request in pending_requests(self.queue):
                if request.id not in self._handled:
                    self._handled.add(request.id)
                    log.info("resync request %s received", request.id)
                    scheduler.add_job(self._handoff, args=(request,), id=f"resync-{request.id}")

    def _consume(self) -> None:
        while not self.stop.is_set():
            due: float | None
            try:
                # A reconcile holds the drain lock while it drains; wait for it in short steps
                # so a stop request is never stuck behind it.
                if not self.pause.is_paused() and self.drain_lock.acquire(timeout=0.5):
                    try:
                        if self.consumer.drain(stop=self.stop) != DrainStats():
                            self.dashboard.mark()
                            self._embed_due = True
                    finally:
                        self.drain_lock.release()
                self.dashboard.maybe_write()
                self._embed()
                due = self.queue.next_due_in_s()
            except Exception as exc:
                log.exception("consumer error; retrying in %.0f s", CONSUMER_IDLE_S)
                self.liveness.error(f"consumer error: {exc!r}")
                due = CONSUMER_IDLE_S
            timeout = CONSUMER_IDLE_S if due is None else min(max(due, 0.05), CONSUMER_IDLE_S)
            self.wake.wait(timeout)
            self.wake.clear()

    def _embed(self) -> None:
        """Vectors for the blocks the last takes indexed, a batch between takes: grading never
        waits on them, and a search meanwhile finds those blocks by their words."""
        embedder, _ = self.search_embedder
        if embedder is None or not self._embed_due or self.pause.is_paused():
            return
        try:
            done = embed_pending(self.store.search, embedder, limit=EMBED_PER_STEP)
        except (EvaluationError, StoreError) as exc:
            log.warning("search vectors wait: %s", exc)
            return
        self._embed_due = done >= EMBED_PER_STEP

    def _scheduled_inbox(self) -> None:
        try:
            self._drain_inbox()
        except Exception:
            log.exception("draining the inbox failed; the next event or reconcile retries")

    def _drain_inbox(self) -> ImportReport | None:
        """Import what is quiet in the inbox; its notes reach the graph like any new note."""
        if self.inbox is None:
            return None
        with self.inbox_lock:
            report, waiting = drain_inbox(self.inbox, quiet_s=self.config.watch.quiet_period_s)
        if waiting and self.inbox_watcher is not None:
            self.inbox_watcher.poke()
        return report

    def _scheduled(self, reason: str) -> None:
        try:
            self._reconcile(reason)
        except Exception as exc:
            log.exception("reconcile (%s) failed; the next one will retry", reason)
            self.liveness.error(f"reconcile ({reason}) failed: {exc!r}")

    def _reconcile(
        self,
        reason: str,
        consumer: DirtyBlockConsumer | None = None,
        *,
        reevaluate: bool = False,
        extra_usage: UsageCounters | None = None,
        asked: bool = False,
    ) -> ResyncSummary:
        """Sync the vault and drain under both locks; ``extra_usage`` counts what ``consumer``'s own
        evaluator spends, when it is not the daemon's. A pass the user ``asked`` for (``aclarai
        resync``) marks the blocks that left their notes deleted at once, as a resync does;
        the others leave them their grace."""
        with self.reconcile_lock, self.drain_lock:
            counters = [c for c in (self.agents.usage, extra_usage) if c is not None]
            before = [c.snapshot() for c in counters]
            started = time.monotonic()
            log.info("reconcile (%s) started", reason)
            imported = self._drain_inbox()
            report, stats = reconcile(
                self.notes,
                consumer or self.consumer,
                self.queue,
                reevaluate=reevaluate,
                adopt=self.config.adopt,
                dashboard=self.config.dashboard.path,
                settle_grace_s=0.0 if asked else self.config.watch.delete_grace_s,
            )
            elapsed = time.monotonic() - started
            self.liveness.looked()
            self.dashboard.mark()
            self.queue.set_meta("last_resync", utc_now())
            self.usage.flush()
            log.info(
                "reconcile (%s) done in %.2f s: %d notes seen, %d dirty blocks, %d claims "
                "evaluated, %d notes rewritten",
                reason,
                elapsed,
                report.files_seen,
                report.dirty_blocks,
                stats.claims_evaluated,
                stats.files_written,
            )
            threshold = self.config.threshold.claim_quality
            counts = graph_counts(self.store, threshold)
            return ResyncSummary(
                self.vault.root,
                self.state_dir,
                report,
                stats,
                counts,
                elapsed,
                usage=_grown(before, counters),
                quality_threshold=threshold,
                imported=imported,
                search=self._refresh_search(counts.blocks),
            )

    def _refresh_search(self, live_blocks: int) -> SearchRefresh | None:
        """What resync does to the index, after each of the daemon's passes: mend it where a
        sign says it may differ (``status --verify`` tells the user to resync, and a resync
        while the daemon runs is this pass); its vectors are left to :meth:`_embed`."""
        try:
            return refresh_search(
                self.store, None, lambda: parsed_search_docs(self.vault, self.store), live_blocks
            )
        except StoreError as exc:
            log.warning("search index not refreshed: %s", exc)
            return None
        finally:
            self._embed_due = True

    def _handoff(self, request: ResyncRequest) -> None:
        try:
            summary = self._serve(request)
        except Exception as exc:
            log.exception("resync request %s failed", request.id)
            answer = ResyncAnswer(request.id, False, f"the daemon could not resync: {exc}")
        else:
            if self.stop.is_set():
                # Cut short by shutdown: the client sees the daemon gone and resyncs itself.
                return
            text = format_summary(summary) + f"\n(run by the aclarai daemon, pid {os.getpid()})"
            answer = ResyncAnswer(request.id, summary.ok, text)
        answer_request(self.queue, answer)
        log.info("resync request %s answered", request.id)

    def _serve(self, request: ResyncRequest) -> ResyncSummary:
        if request.dry_run:
            return dry_run_summary(
                NoteSync(self.vault, self.store, None),
                self.state_dir,
                time.monotonic(),
                quality_threshold=self.config.threshold.claim_quality,
                imported=None if self.inbox is None else drain_inbox(self.inbox, dry_run=True)[0],
            )
        if not request.reevaluate:
            return self._reconcile("resync request", asked=True)
        fresh = build_agents(
            self.config, self.state_dir, reevaluate=True, remote=self.agents.remote
        )
        try:
            consumer = self._consumer(fresh.evaluator, reevaluate=True)
            return self._reconcile(
                "resync --reevaluate",
                consumer,
                reevaluate=True,
                extra_usage=fresh.usage,
                asked=True,
            )
        finally:
            UsageRecorder(self.queue, fresh.usage).flush()
            fresh.close()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.stop.is_set():
            log.warning("second %s: exiting now; the queue keeps the work", name)
            os._exit(128 + signum)
        # Set before logging: a second signal may interrupt this handler inside the log call.
        self.stop.set()
        self.wake.set()
        log.info("%s: stopping, finishing the work in flight", name)
        timer = threading.Timer(SHUTDOWN_DEADLINE_S, _force_exit)
        timer.daemon = True
        timer.start()

    def _shutdown(
        self, scheduler: BackgroundScheduler, consumer: threading.Thread, previous: dict[int, Any]
    ) -> None:
        self.stop.set()
        self.wake.set()
        self.notifier.stopping()
        if self.inbox_watcher is not None:
            self.inbox_watcher.stop()
        if scheduler.running:
            scheduler.shutdown(wait=False)
        # A model call can take a minute; its block goes back to the queue instead.
        self.agents.cancel()
        consumer.join(timeout=SHUTDOWN_DEADLINE_S - 1.0)
        self.busy = consumer.is_alive() or self.reconcile_lock.locked()
        self.usage.flush()
        self.liveness.stamp("stopped")
        if self.busy:
            # Our handlers stay: a second signal while this work winds down exits at once.
            log.warning("work still in flight at exit; the queue keeps it for the next start")
            return
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        log.info("stopped")

    def close(self) -> None:
        for close in self.search_embedder[1]:
            close()
        self.agents.close()
        self.store.close()
        self.queue.close()


def _search_embedder(
    config: Config, state_dir: Path
) -> tuple[Embedder | None, list[Callable[[], None]]]:
    try:
        return build_search_embedder(config, state_dir)
    except AclaraiError as exc:
        log.warning("search by words only: %s", exc)
        return None, []


def _grown(before: list[dict[str, int]], counters: list[UsageCounters]) -> dict[str, int]:
    """What ``counters`` (snapshotted as ``before``) have grown by, summed by counter name."""
    grown: dict[str, int] = {}
    for old, current in zip(before, counters, strict=True):
        for name, value in current.snapshot().items():
            grown[name] = grown.get(name, 0) + value - old.get(name, 0)
    return grown


def _install_signal_handlers(handler: Callable[[int, FrameType | None], None]) -> dict[int, Any]:
    """``handler`` for SIGTERM and SIGINT (in the main thread only); the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}


def _force_exit() -> None:
    log.warning(
        "shutdown took over %.0f s; exiting now, the queue keeps the work", SHUTDOWN_DEADLINE_S
    )
    logging.shutdown()
    os._exit(0)
