"""DirtyBlockConsumer: from queued dirty blocks to scored edges and rewritten notes.

For each note with queued blocks it takes the note as synced (:meth:`NoteSync.current`: the
note the watch path or the walk just synced, or read and synced again when its file changed
since), re-extracts the claims of blocks whose text changed, evaluates the claims that need it,
writes the scores onto their edges, then rewrites the note's score comments with one conditional
atomic write per note and records the new file state and ``ver``s. If the note changed meanwhile
the result is dropped and the entries go back to the queue; they leave it only once the graph
and the note are both written (or the block is gone).

A drain works a take of queued notes in stages (:meth:`DirtyBlockConsumer._drain_take`): each
note graded (:mod:`aclarai.daemon.loop.grading`), every grade written to the store, each note
rewritten, the rewrites recorded, the entries completed; what a note carries from stage to
stage is in :mod:`aclarai.daemon.loop.take`.

Score comments describe the block's current text. A block whose text changed since its claims
were last scored is written once, ``ver`` +1, even when its scores read the same; if no new
score could be made for it, its old comments go (and come back once scoring succeeds). A block
whose text did not change is written only when its comments change, and a failed re-evaluation
keeps them. Each block's extraction succeeds or fails on its own: a failing block's entry is
charged, the rest of the note goes on.

While the model endpoint is unreachable nothing is written: the work goes back to the queue
without spending an attempt, retried after a delay that doubles up to
:data:`MODEL_RETRY_MAX_S`, and the outage is logged once when it starts and once when it ends.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from aclarai.agents import ClaimExtractor, Evaluator, VectorIndex
from aclarai.daemon.config import ProcessingSettings, WindowSize
from aclarai.daemon.loop.grading import NoteGrader
from aclarai.daemon.loop.liveness import Progress
from aclarai.daemon.loop.take import DrainStats, NoteWork
from aclarai.daemon.vault.control import MODEL_DOWN_META
from aclarai.daemon.vault.notes import NoteContent, NoteFile
from aclarai.daemon.vault.notesync import NoteSync, NoteWrite
from aclarai.daemon.vault.queue import DurableQueue, QueueEntry
from aclarai.daemon.vault.writer import sha256_bytes, write_if_unchanged
from aclarai.graph import GraphStore, block_key, block_scores
from aclarai.parsers import (
    AclaraiError,
    BrokerUnavailable,
    EvaluationError,
    StoreUnavailable,
    TransientError,
    WriteConflict,
    apply_scores,
    utc_now,
)

log = logging.getLogger(__name__)

CONFLICT_RETRY_S = 1.0
STORE_RETRY_S = 5.0
MODEL_RETRY_MAX_S = 300.0


def _format_scores(scores: dict[str, float | None]) -> str:
    return " ".join(
        f"{name}={'null' if value is None else f'{value:.2f}'}" for name, value in scores.items()
    )


def _raising(exc: BaseException) -> Callable[[NoteWork], None]:
    """A step's action that fails as a call made for many notes failed."""

    def action(note: NoteWork) -> None:
        raise exc

    return action


class _Outage(threading.Event):
    """Set once a drain meets an outage; ``store_down`` says the graph store's."""

    store_down = False


class DirtyBlockConsumer:
    """Drains the durable queue (:meth:`drain`): ``resync`` once, the daemon whenever woken."""

    def __init__(
        self,
        notes: NoteSync,
        queue: DurableQueue,
        extractor: ClaimExtractor,
        evaluator: Evaluator,
        processing: ProcessingSettings | None = None,
        window: WindowSize | None = None,
        *,
        reevaluate: bool = False,
        on_write: Callable[[str, os.stat_result], None] | None = None,
        paused: Callable[[], bool] | None = None,
        index: VectorIndex | None = None,
        progress: Progress | None = None,
        settled: Callable[[], None] | None = None,
        cancel: Callable[[], None] | None = None,
    ) -> None:
        self.notes = notes
        self.store: GraphStore = notes.store
        self.queue = queue
        self.processing = processing or ProcessingSettings()
        self.grader = NoteGrader(
            notes,
            queue,
            extractor,
            evaluator,
            window or WindowSize(),
            reevaluate=reevaluate,
            index=index,
            answered=self._model_answered,
        )
        """Stage one of every take (:mod:`aclarai.daemon.loop.grading`)."""
        self.on_write = on_write
        self.paused = paused or (lambda: False)
        self.progress = progress or Progress()
        """Beaten on each note's stage, so a watchdog can tell a hung drain from a long one."""
        self.settled = settled or (lambda: None)
        """Called once a take is through (grading workers' results may be acknowledged)."""
        self.cancel = cancel or (lambda: None)
        """Frees the pool's threads from model calls or waits for workers when the drain is
        interrupted (Ctrl-C), so that the pool can shut down."""
        self._draining = threading.Lock()
        """Held by a drain: takes are processed in stages across notes, one drain at a time."""
        self._model_outages = 0
        self._outage_mark_read = False
        self._outage_lock = threading.Lock()

    def drain(self, *, stop: threading.Event | None = None) -> DrainStats:
        """Process every ready entry until none is left (or ``stop`` is set); return counts.

        When the graph store is unreachable the drain ends early: what is left goes back to the
        queue, since every other file would only wait for the same store to time out.
        """
        total = DrainStats()
        outage = _Outage()
        workers = self.processing.concurrent_notes
        with (
            self._draining,
            ThreadPoolExecutor(workers, thread_name_prefix="aclarai-worker") as pool,
        ):
            while (
                not (stop is not None and stop.is_set())
                and not outage.is_set()
                and not self.paused()
            ):
                entries = self.queue.take(self.processing.batch_size * workers)
                if not entries:
                    break
                by_file: dict[str, list[QueueEntry]] = defaultdict(list)
                for entry in entries:
                    by_file[entry.file].append(entry)
                notes = [NoteWork(rel, group) for rel, group in by_file.items()]
                self.progress.begin(len(notes))
                try:
                    self._drain_take(pool, notes, stop, outage)
                except BaseException:
                    self.cancel()
                    raise
                finally:
                    self.progress.end()
                for note in notes:
                    total.add(note.stats)
        return total

    @property
    def model_down(self) -> bool:
        """Whether the last model call this consumer made found the endpoint unreachable."""
        with self._outage_lock:
            return self._model_outages > 0

    def _drain_take(
        self,
        pool: ThreadPoolExecutor,
        notes: list[NoteWork],
        stop: threading.Event | None,
        outage: _Outage,
    ) -> None:
        """One take, in stages: grade each note (on the pool, so model calls overlap), write
        every grade to the store in one call, rewrite each graded note (on the pool), record
        the rewritten notes in the store in one call, then complete the entries that went
        through in one queue write. An entry leaves the queue only once its note's grade and
        rewrite are both written; a note that fails a stage leaves the take there, under the
        error policy of :meth:`_step`."""
        list(pool.map(lambda note: self._step(note, self.grader.grade, stop, outage), notes))
        graded = [note for note in notes if note.graded is not None]
        self._write_grades(graded, outage)
        # A grade in the store is finished even when stopping: the rewrite is local and quick.
        ready = [note for note in graded if note.graded is not None]
        list(
            pool.map(
                lambda note: self._step(note, self._rewrite, None, outage, started=True), ready
            )
        )
        self._record_writes([note for note in ready if note.graded is not None], outage)
        self.queue.complete(entry for note in notes for entry in note.done)
        self.settled()

    def _step(
        self,
        note: NoteWork,
        action: Callable[[NoteWork], None],
        stop: threading.Event | None,
        outage: _Outage,
        *,
        started: bool = False,
    ) -> None:
        """Run one stage of a note under the error policy; on failure the note leaves the take.

        An outage found by another note puts this one back untried; once its grade is
        ``started`` (in the store already), only a graph store outage does.
        """
        rel, entries, stats = note.rel, note.entries, note.stats
        if stop is not None and stop.is_set():
            note.graded = None
            self.queue.release(entries)
            return
        if outage.is_set() and (not started or outage.store_down):
            note.graded = None
            self.queue.release(entries, delay_s=STORE_RETRY_S)
            return
        try:
            action(note)
            self.progress.beat()
            return
        except WriteConflict as exc:
            stats.conflicts += 1
            log.info("write skipped: %s", exc)
            self.queue.release(entries, delay_s=CONFLICT_RETRY_S)
        except TransientError as exc:
            if stop is not None and stop.is_set():
                # Shutting down cancels model calls in flight: the work waits for the next start.
                self.queue.release(entries)
            else:
                self._outage(rel, entries, stats, exc, outage)
        except Exception as exc:
            stats.failures += 1
            message = f"{rel}: {exc}"
            stats.errors.append(message)
            self.progress.failed(message)
            dead = self.queue.fail(entries, message)
            stats.dead_letters += len(dead)
            if isinstance(exc, AclaraiError | OSError):
                log.warning("retry scheduled for %d block(s) of %s: %s", len(entries), rel, exc)
            else:
                log.exception("unexpected error processing %s", rel)
            for entry in dead:
                log.error("dead letter: block %s of %s: %s", entry.block_id, rel, exc)
        note.graded = None
        note.done = []

    def _outage(
        self,
        rel: str,
        entries: list[QueueEntry],
        stats: DrainStats,
        exc: TransientError,
        outage: _Outage,
    ) -> None:
        """An outage (graph store or model endpoint) is not this note's fault: no attempt is
        spent, so a long one never turns queued work into dead letters."""
        store_down = isinstance(exc, StoreUnavailable)
        outage.store_down |= store_down
        outage.set()
        self.progress.failed(f"{rel}: {exc}")
        if store_down:
            stats.store_errors.append(str(exc))
            self.queue.release(entries, delay_s=max(STORE_RETRY_S, exc.retry_after or 0.0))
            log.warning("graph store unavailable; %s stays queued: %s", rel, exc)
        else:
            stats.errors.append(f"{rel}: {exc}")
            stats.model_outages += 1
            # Grading through workers, their Redis server is this pass's model endpoint.
            stats.broker_outages += isinstance(exc, BrokerUnavailable)
            what = (
                "grading workers' Redis" if isinstance(exc, BrokerUnavailable) else "model endpoint"
            )
            delay = max(self._model_down(exc), exc.retry_after or 0.0)
            self.queue.release(entries, delay_s=delay)
            log.info("%s unavailable; %s stays queued for %.0f s", what, rel, delay)

    def _model_down(self, exc: BaseException) -> float:
        """Note an outage; return how long to wait: doubling from STORE_RETRY_S to the cap."""
        with self._outage_lock:
            self._model_outages += 1
            streak = self._model_outages
        if streak == 1 and isinstance(exc, BrokerUnavailable):
            # Not the model: status shows the workers' Redis outage with the workers.
            log.info("grading workers' Redis unavailable, work stays queued: %s", exc)
        elif streak == 1:
            # The client logs the outage itself, once, at WARNING.
            log.info("model endpoint unavailable, work stays queued: %s", exc)
            if self.queue.get_meta(MODEL_DOWN_META) is None:
                self.queue.set_meta(MODEL_DOWN_META, utc_now())
        return min(MODEL_RETRY_MAX_S, STORE_RETRY_S * 2 ** min(streak - 1, 16))

    def _model_answered(self) -> None:
        with self._outage_lock:
            streak, self._model_outages = self._model_outages, 0
            # Another run may have left the mark (a daemon stopped during an outage): read once.
            look, self._outage_mark_read = not self._outage_mark_read, True
        if streak or (look and self.queue.get_meta(MODEL_DOWN_META) is not None):
            self.queue.delete_meta(MODEL_DOWN_META)
            log.info("model endpoint answers again; queued work resumes")

    def _write_grades(self, notes: list[NoteWork], outage: _Outage) -> None:
        """Stage two: every grade of the take in one store call (one transaction on SQLite)."""

        def write(group: list[NoteWork]) -> None:
            grades = [n.graded for n in group if n.graded is not None]
            counts = self.store.write_grades([g.grade for g in grades])
            for note, g, count in zip(group, grades, counts, strict=True):
                g.scores_taken = count
                note.stats.scores_written += count

        self._for_the_take(
            [n for n in notes if n.graded is not None], write, "writing their grades", outage
        )

    def _for_the_take(
        self,
        notes: list[NoteWork],
        call: Callable[[list[NoteWork]], None],
        what: str,
        outage: _Outage,
    ) -> None:
        """``call`` once for all ``notes`` of a take, graded already: only a graph store outage
        holds them back, and then every note waits for the store. When the call fails otherwise
        it is made for each note alone, so one bad note fails alone."""
        if not notes:
            return
        try:
            call(notes)
        except StoreUnavailable as exc:
            for note in notes:
                self._step(note, _raising(exc), None, outage, started=True)
        except Exception as exc:
            log.info("%s for %d notes at once failed (%s); one at a time", what, len(notes), exc)
            for note in notes:
                self._step(note, lambda n: call([n]), None, outage, started=True)

    def _rewrite(self, note: NoteWork) -> None:
        """Stage three: rewrite the note's score comments with one conditional atomic write
        (``note.graded.written_note`` says what was written, for the store to record)."""
        g = note.graded
        assert g is not None
        rel, stats, blocks = note.rel, note.stats, g.blocks
        claims_by_block = g.claims_by_block
        if g.scores_taken != len(g.grade.scores):
            # A block's text moved on since it was graded (its stale scores were not written):
            # the comments follow what the store holds.
            claims_by_block = self.store.claims_of_blocks(g.scored)
        # The store keys blocks by note and id; inside the note, its ids name them.
        updates = {
            blocks[bid].id: block_scores(claims_by_block[bid], blocks[bid].hash) for bid in g.scored
        }
        for bid in g.rescored:
            shown = blocks[bid].id
            log.info("%s: block %s scored: %s", rel, shown, _format_scores(updates[shown]))
        for bid in sorted(g.edited & set(g.failed), key=g.targets.index):
            log.info(
                "%s: block %s: no score for its new text; old score comments removed",
                rel,
                blocks[bid].id,
            )
        synced = g.synced
        content = synced.content
        edited = {blocks[bid].id for bid in g.edited}
        rewrite = apply_scores(content.text, updates, edited=edited, layout=synced.layout)
        for bid in rewrite.skipped:
            log.warning(
                "%s: block %s: score comments would change how the note parses; scores kept in "
                "the graph only",
                rel,
                bid,
            )
        if rewrite.layout is not None:
            data = rewrite.text.encode("utf-8")
            path = content.note.path
            try:
                st = write_if_unchanged(path, data, expected_sha256=content.sha256)
            except WriteConflict:
                self.notes.forget_note(rel)
                raise
            if self.on_write is not None:
                self.on_write(rel, st)
            stats.files_written += 1
            # Record what we wrote, not what is on disk now: a user edit that landed after the
            # rename must still look like a change to the next sync.
            written = NoteFile(rel, path, st.st_mtime_ns, len(data))
            g.written_note = NoteWrite(
                synced,
                NoteContent(written, data, rewrite.text, sha256_bytes(data)),
                rewrite.layout,
                {block_key(rel, bid): ver for bid, ver in rewrite.versions.items()},
            )
            g.blocks_written = len(rewrite.changed)
        self.grader.written_back(g.edited)

    def _record_writes(self, notes: list[NoteWork], outage: _Outage) -> None:
        """Stage four: the store learns the state and ``ver``s of every note the take rewrote,
        in one call; then each note's entries settle."""

        def record(group: list[NoteWork]) -> None:
            self.notes.written(
                [n.graded.written_note for n in group if n.graded and n.graded.written_note]
            )

        rewritten = [n for n in notes if n.graded is not None and n.graded.written_note]
        self._for_the_take(rewritten, record, "recording their rewrites", outage)
        for note in notes:
            if note.graded is not None:
                self._step(note, self._settle_note, None, outage, started=True)

    def _settle_note(self, note: NoteWork) -> None:
        g = note.graded
        assert g is not None
        if g.written_note is not None:
            log.info("%s: scores written for %d block(s)", note.rel, g.blocks_written)
        else:
            log.info("%s: %d block(s) processed, note unchanged", note.rel, len(g.targets))
        note.done = self._settle(note.rel, g.present, g.failed, note.stats)

    def _settle(
        self,
        rel: str,
        present: list[QueueEntry],
        failed: dict[str, EvaluationError],
        stats: DrainStats,
    ) -> list[QueueEntry]:
        """Charge the entries whose blocks failed; return those that went through (to
        complete with the rest of the take)."""
        for entry in (e for e in present if e.block_id in failed):
            message = f"{rel}: block {entry.block_id}: {failed[entry.block_id]}"
            stats.errors.append(message)
            log.warning("extraction failed, retry scheduled: %s", message)
            for dead in self.queue.fail([entry], message):
                stats.dead_letters += 1
                log.error("dead letter: block %s of %s: %s", dead.block_id, rel, message)
        return [e for e in present if e.block_id not in failed]
