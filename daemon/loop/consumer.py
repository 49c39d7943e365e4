"""DirtyBlockConsumer: from queued dirty blocks to scored edges and rewritten notes.

For each note with queued blocks it takes the note as synced (:meth:`NoteSync.current`: the
note the watch path or the walk just synced, or read and synced again when its file changed
since), re-extracts the claims of blocks whose text changed, evaluates the claims that need it,
writes the scores onto their edges, then rewrites the note's score comments with one conditional
atomic write per note and records the new file state and ``ver``s. If the note changed meanwhile
the result is dropped and the entries go back to the queue; they leave it only once the graph
and the note are both written (or the block is gone).

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
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from operator import attrgetter

from aclarai.agents import (
    ClaimExtractor,
    EvalItem,
    Evaluator,
    ExtractionInput,
    Utterance,
    VectorIndex,
)
from aclarai.daemon.config import ProcessingSettings, WindowSize
from aclarai.daemon.vault.control import MODEL_DOWN_META
from aclarai.daemon.vault.notes import NoteContent, NoteFile
from aclarai.daemon.vault.notesync import NoteSync, NoteWrite, SyncedNote
from aclarai.daemon.vault.queue import Dirty, DurableQueue, QueueEntry
from aclarai.daemon.vault.writer import sha256_bytes, write_if_unchanged
from aclarai.graph import ClaimRecord, GradeWrite, GraphStore, ScoreRecord, StoredClaim
from aclarai.parsers import (
    SCORE_NAMES,
    AclaraiError,
    Block,
    EvaluationError,
    EvaluatorUnavailable,
    StoreUnavailable,
    TransientError,
    WriteConflict,
    apply_scores,
    utc_now,
)

log = logging.getLogger(__name__)

CONFLICT_RETRY_S = 1.0
STORE_RETRY_S = 5.0
MOVE_WAIT_S = 2.0
MODEL_RETRY_MAX_S = 300.0


@dataclass
class DrainStats:
    files_processed: int = 0
    files_written: int = 0
    blocks_processed: int = 0
    claims_extracted: int = 0
    claims_evaluated: int = 0
    scores_written: int = 0
    null_scores: int = 0
    conflicts: int = 0
    failures: int = 0
    """Files charged an attempt for an error of their own."""
    dead_letters: int = 0
    model_outages: int = 0
    """Files put back because the model endpoint could not be reached."""
    blocks_extracted: int = 0
    extraction_failures: int = 0
    """Blocks whose extraction failed (each charged an attempt)."""
    errors: list[str] = field(default_factory=list)
    store_errors: list[str] = field(default_factory=list)
    """Why the graph store could not be reached; the work stays queued (no attempt counted)."""

    def model_failure(self) -> str | None:
        """Why the model did nothing useful in this drain, if so: it could not be reached, or
        every extraction or every evaluation it was asked for failed."""
        if self.model_outages:
            return f"the model endpoint could not be reached ({self.model_outages} note(s) wait)"
        if self.extraction_failures and not self.blocks_extracted:
            return f"claim extraction failed for all {self.extraction_failures} block(s)"
        if self.claims_evaluated and self.null_scores == self.claims_evaluated:
            return f"evaluation failed for all {self.claims_evaluated} claim(s)"
        return None

    def add(self, other: DrainStats) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(other, name)
            if isinstance(value, list):
                getattr(self, name).extend(value)
            else:
                setattr(self, name, getattr(self, name) + value)


def needs_evaluation(claim: StoredClaim, block_hash: str) -> bool:
    score = claim.score
    if score is None or score.evaluated_hash != block_hash:
        return True
    return any(getattr(score, name) is None for name in SCORE_NAMES)


def _extracted_from_other_text(claims: Sequence[StoredClaim], block: Block) -> bool:
    """Whether the block's claims were scored against another text: extracted before an edit
    whose own processing did not finish, so they must be extracted again."""
    return any(c.score is not None and c.score.evaluated_hash != block.hash for c in claims)


def block_scores(
    claims: Sequence[StoredClaim], block_hash: str | None = None
) -> dict[str, float | None]:
    """A block's value for each score: the minimum over its claims with a non-null score
    (scored against ``block_hash``, the block's current text, when given)."""
    result: dict[str, float | None] = {}
    for name in SCORE_NAMES:
        values = [
            value
            for c in claims
            if c.score is not None
            and (block_hash is None or c.score.evaluated_hash == block_hash)
            and (value := getattr(c.score, name)) is not None
        ]
        result[name] = min(values) if values else None
    return result


def _format_scores(scores: dict[str, float | None]) -> str:
    return " ".join(
        f"{name}={'null' if value is None else f'{value:.2f}'}" for name, value in scores.items()
    )


def _replaced(old: Sequence[StoredClaim], claims: Sequence[ClaimRecord]) -> list[StoredClaim]:
    """A block's claims once ``replace_claims`` made ``claims`` its claims: in their order,
    without repeats, each keeping the score its edge had (see :meth:`GraphStore.replace_claims`)."""
    scores = {c.id: c.score for c in old}
    listed: dict[str, StoredClaim] = {}
    for c in claims:
        if c.id not in listed:
            listed[c.id] = StoredClaim(c.id, c.block_id, c.text, scores.get(c.id))
    return list(listed.values())


def _raising(exc: BaseException) -> Callable[[_NoteWork], None]:
    """A step's action that fails as a call made for many notes failed."""

    def action(note: _NoteWork) -> None:
        raise exc

    return action


@dataclass
class _Graded:
    """A note's grade, made in stage one and written in stages two and three."""

    synced: SyncedNote
    blocks: dict[str, Block]
    """The note's blocks by id, copies of other notes' blocks left out."""
    present: list[QueueEntry]
    """The take's entries whose blocks the note holds."""
    targets: list[str]
    """Blocks processed: the queued ones and the edits the take found."""
    scored: list[str]
    """The targets, then the neighbours whose window holds a changed block."""
    rescored: list[str]
    """Blocks with a claim evaluated in this take, in ``scored`` order."""
    edited: set[str]
    failed: dict[str, EvaluationError]
    """Blocks whose extraction failed."""
    claims_by_block: dict[str, list[StoredClaim]]
    """The claims of ``scored`` as the store holds them once ``grade`` is written."""
    grade: GradeWrite
    scores_taken: int = 0
    """How many of ``grade.scores`` the store took."""
    written_note: NoteWrite | None = None
    """The rewrite of the note, once written (``None``: its comments did not change)."""
    blocks_written: int = 0
    """Blocks whose comments the rewrite changed."""


class _Outage(threading.Event):
    """Set once a drain meets an outage; ``store_down`` says the graph store's."""

    store_down = False


@dataclass
class _NoteWork:
    """One note of a take, carried through the stages of a drain."""

    rel: str
    entries: list[QueueEntry]
    stats: DrainStats = field(default_factory=DrainStats)
    graded: _Graded | None = None
    done: list[QueueEntry] = field(default_factory=list)
    """Entries to complete once the take is through."""


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
    ) -> None:
        self.notes = notes
        self.store: GraphStore = notes.store
        self.queue = queue
        self.extractor = extractor
        self.evaluator = evaluator
        self.processing = processing or ProcessingSettings()
        self.window = window or WindowSize()
        """``window.claimify``: the blocks before (``p``) and after (``f``) a claim's block."""
        self.reevaluate = reevaluate
        """Re-score every claim taken, even one scored against the block's current text."""
        self.on_write = on_write
        self.paused = paused or (lambda: False)
        self.index = index
        self._draining = threading.Lock()
        """Held by a drain: takes are processed in stages across notes, one drain at a time."""
        self._unwritten: dict[str, str] = {}
        """Block id → hash of an edit whose write-back did not reach the note (a conflict)."""
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
        workers = self.processing.workers
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
                notes = [_NoteWork(rel, group) for rel, group in by_file.items()]
                self._drain_take(pool, notes, stop, outage)
                for note in notes:
                    total.add(note.stats)
        return total

    def _drain_take(
        self,
        pool: ThreadPoolExecutor,
        notes: list[_NoteWork],
        stop: threading.Event | None,
        outage: _Outage,
    ) -> None:
        """One take, in stages: grade each note (on the pool, so model calls overlap), write
        every grade to the store in one call, rewrite each graded note (on the pool), record
        the rewritten notes in the store in one call, then complete the entries that went
        through in one queue write. An entry leaves the queue only once its note's grade and
        rewrite are both written; a note that fails a stage leaves the take there, under the
        error policy of :meth:`_step`."""
        list(pool.map(lambda note: self._step(note, self._grade, stop, outage), notes))
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

    def _step(
        self,
        note: _NoteWork,
        action: Callable[[_NoteWork], None],
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
        if store_down:
            stats.store_errors.append(str(exc))
            self.queue.release(entries, delay_s=max(STORE_RETRY_S, exc.retry_after or 0.0))
            log.warning("graph store unavailable; %s stays queued: %s", rel, exc)
        else:
            stats.errors.append(f"{rel}: {exc}")
            stats.model_outages += 1
            delay = max(self._model_down(exc), exc.retry_after or 0.0)
            self.queue.release(entries, delay_s=delay)
            log.info("model endpoint unavailable; %s stays queued for %.0f s", rel, delay)

    def _model_down(self, exc: BaseException) -> float:
        """Note an outage; return how long to wait: doubling from STORE_RETRY_S to the cap."""
        with self._outage_lock:
            self._model_outages += 1
            streak = self._model_outages
        if streak == 1:
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

    def _grade(self, note: _NoteWork) -> None:
        """Stage one: take the note as synced, extract the claims of its changed blocks and
        evaluate the claims that need it. Nothing is written; ``note.graded`` holds the result,
        or ``note.done`` the entries to complete when there is nothing to grade."""
        rel, entries, stats = note.rel, note.entries, note.stats
        synced = self.notes.current(rel, {e.block_id for e in entries})
        if synced is None:
            self._requeue_moved(entries)
            return
        parsed = synced.parsed
        kept = {r.id for r in synced.records}
        blocks = {b.id: b for b in parsed.blocks if b.id in kept}
        present = [e for e in entries if e.block_id in blocks]
        missing = [e for e in entries if e.block_id not in blocks]
        if missing:
            self._requeue_moved(missing)
        queued = {e.block_id for e in present}
        if self.index is not None:
            self.index.upsert(Utterance(r.id, r.text) for r in synced.records)
        # Edits ``current`` found (the note changed since it was synced) are processed here too.
        targets = sorted(queued | set(synced.changed))
        stats.files_processed += 1
        stats.blocks_processed += len(targets)
        if not targets:
            note.done = present
            return

        changed = set(synced.changed) | {e.block_id for e in present if e.reason == "changed"}
        claims_by_block = self.store.claims_of_blocks(targets)
        changed |= {b for b in targets if _extracted_from_other_text(claims_by_block[b], blocks[b])}
        edited = {b for b in targets if self._text_changed(claims_by_block[b], blocks[b])}
        # Remembered until the note is written: re-extraction may replace every claim that
        # still carries the old text's hash, and an outage or a conflict may come first.
        for bid in edited:
            self._unwritten[bid] = blocks[bid].hash
        to_extract = [blocks[bid] for bid in targets if bid in changed]
        found, failed = self._extract(parsed.blocks, to_extract, stats)
        # A block's decontextualization reads the blocks around it: when one changes, the
        # scores of the blocks whose window holds it are re-made too, once per pass.
        neighbours = self._window_neighbours(parsed.blocks, changed, kept) - set(targets)
        scored = [*targets, *sorted(neighbours, key=lambda bid: blocks[bid].line)]
        if neighbours:
            log.info("%s: %d neighbouring block(s) re-scored", rel, len(neighbours))
            claims_by_block.update(self.store.claims_of_blocks(scored[len(targets) :]))
        for bid, claims in found.items():
            claims_by_block[bid] = _replaced(claims_by_block[bid], claims)

        pending = [
            (blocks[bid], claim)
            for bid in scored
            if bid not in failed
            for claim in claims_by_block[bid]
            if self.reevaluate or bid in neighbours or needs_evaluation(claim, blocks[bid].hash)
        ]
        records: list[ScoreRecord] = []
        if pending:
            # One window per block, not per claim.
            window = {
                bid: self._window_texts(parsed.blocks, blocks[bid])
                for bid in dict.fromkeys(b.id for b, _ in pending)
            }
            scores = self.evaluator.evaluate_batch(
                [EvalItem(c.text, b.text, window[b.id], c.id) for b, c in pending]
            )
            unavailable = [s for s in scores if s.unavailable]
            if len(unavailable) == len(scores):
                # The extraction went through: its claims are kept while the evaluator is away.
                self.store.replace_claims(found)
                raise EvaluatorUnavailable(unavailable[0].status)
            now = utc_now()
            # A neighbour's text did not change: a failed re-score keeps the scores it has.
            kept_scores = [
                (b, c, s)
                for (b, c), s in zip(pending, scores, strict=True)
                if b.id not in neighbours or s.status == "ok"
            ]
            records = [
                ScoreRecord(
                    claim_id=c.id,
                    block_id=b.id,
                    evaluated_hash=b.hash,
                    entailed_score=s.entailed_score,
                    coverage_score=s.coverage_score,
                    decontextualization_score=s.decontextualization_score,
                    status=s.status,
                    model=self.evaluator.model_id,
                    verdict=s.verdict,
                    justification=s.justification,
                    omitted=s.omitted,
                    evaluated_at=now,
                )
                for b, c, s in kept_scores
            ]
            stats.claims_evaluated += len(pending)
            stats.null_scores += sum(
                1 for _, _, s in kept_scores if any(getattr(s, n) is None for n in SCORE_NAMES)
            )
            for (b, c), s in zip(pending, scores, strict=True):
                log.debug("block %s claim %s scored: %s", b.id, c.id, s.status)
            fresh = {(r.claim_id, r.block_id): r for r in records}
            claims_by_block = {
                bid: [
                    StoredClaim(c.id, c.block_id, c.text, fresh.get((c.id, bid), c.score))
                    for c in claims
                ]
                for bid, claims in claims_by_block.items()
            }
        if to_extract or pending:
            self._model_answered()
        rescored = {b.id for b, _ in pending}
        note.graded = _Graded(
            synced=synced,
            blocks=blocks,
            present=present,
            targets=targets,
            scored=scored,
            rescored=[bid for bid in scored if bid in rescored],
            edited=edited,
            failed=failed,
            claims_by_block=claims_by_block,
            grade=GradeWrite(found, records),
        )

    def _write_grades(self, notes: list[_NoteWork], outage: _Outage) -> None:
        """Stage two: every grade of the take in one store call (one transaction on SQLite)."""

        def write(group: list[_NoteWork]) -> None:
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
        notes: list[_NoteWork],
        call: Callable[[list[_NoteWork]], None],
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

    def _rewrite(self, note: _NoteWork) -> None:
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
        updates = {bid: block_scores(claims_by_block[bid], blocks[bid].hash) for bid in g.scored}
        for bid in g.rescored:
            log.info("%s: block %s scored: %s", rel, bid, _format_scores(updates[bid]))
        for bid in sorted(g.edited & set(g.failed), key=g.targets.index):
            log.info(
                "%s: block %s: no score for its new text; old score comments removed", rel, bid
            )
        synced = g.synced
        content = synced.content
        rewrite = apply_scores(content.text, updates, edited=g.edited, layout=synced.layout)
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
                rewrite.versions,
            )
            g.blocks_written = len(rewrite.changed)
        # The write-back reached the note: a retry after a failure to record it (or to settle)
        # must not take these blocks' comments for an older text's and bump their ``ver`` again.
        for bid in g.edited:
            self._unwritten.pop(bid, None)

    def _record_writes(self, notes: list[_NoteWork], outage: _Outage) -> None:
        """Stage four: the store learns the state and ``ver``s of every note the take rewrote,
        in one call; then each note's entries settle."""

        def record(group: list[_NoteWork]) -> None:
            self.notes.written(
                [n.graded.written_note for n in group if n.graded and n.graded.written_note]
            )

        rewritten = [n for n in notes if n.graded is not None and n.graded.written_note]
        self._for_the_take(rewritten, record, "recording their rewrites", outage)
        for note in notes:
            if note.graded is not None:
                self._step(note, self._settle_note, None, outage, started=True)

    def _settle_note(self, note: _NoteWork) -> None:
        g = note.graded
        assert g is not None
        if g.written_note is not None:
            log.info("%s: scores written for %d block(s)", note.rel, g.blocks_written)
        else:
            log.info("%s: %d block(s) processed, note unchanged", note.rel, len(g.targets))
        note.done = self._settle(note.rel, g.present, g.failed, note.stats)

    def _text_changed(self, claims: Sequence[StoredClaim], block: Block) -> bool:
        """Whether the block's score comments were made for another text: its claims were
        scored against another hash, or an edit's write-back has not reached the note yet."""
        if self._unwritten.get(block.id) == block.hash:
            return True
        return _extracted_from_other_text(claims, block)

    def _extract(
        self, blocks: Sequence[Block], to_extract: list[Block], stats: DrainStats
    ) -> tuple[dict[str, list[ClaimRecord]], dict[str, EvaluationError]]:
        """Extract the claims of ``to_extract``: those of the blocks that went through, and
        the blocks that failed.

        Raises:
            TransientError: the model endpoint could not be reached (the file waits).
        """
        if not to_extract:
            return {}, {}
        outcomes = self.extractor.extract_each(
            [self._extraction_input(blocks, b) for b in to_extract]
        )
        for outcome in outcomes:
            if isinstance(outcome, TransientError):
                raise outcome
        found: dict[str, list[ClaimRecord]] = {}
        failed: dict[str, EvaluationError] = {}
        for block, outcome in zip(to_extract, outcomes, strict=True):
            if isinstance(outcome, EvaluationError):
                failed[block.id] = outcome
            else:
                found[block.id] = [ClaimRecord(c.id, block.id, c.text) for c in outcome]
        stats.claims_extracted += sum(len(claims) for claims in found.values())
        stats.blocks_extracted += len(found)
        stats.extraction_failures += len(failed)
        return found, failed

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

    def _requeue_moved(self, entries: list[QueueEntry]) -> None:
        """Entries whose block is not in their file any more follow the store (a move), or
        leave the queue when the block is deleted. A block the store still places in this file
        may be on its way to another note (a cut and paste, a delete then create): its entry
        waits until the store moves it or marks it deleted, so the edit it carries is not lost.
        """
        stored = self.store.get_blocks([e.block_id for e in entries])
        done = []
        waiting = []
        for entry in entries:
            block = stored.get(entry.block_id)
            if block is not None and block.deleted_at is None:
                if block.file == entry.file:
                    waiting.append(entry)
                    continue
                self.queue.enqueue([Dirty(entry.block_id, block.file, entry.hash, entry.reason)])
            done.append(entry)
        self.queue.complete(done)
        self.queue.release(waiting, delay_s=MOVE_WAIT_S)

    def _extraction_input(self, blocks: Sequence[Block], block: Block) -> ExtractionInput:
        # Blocks come in note order, so their id lines increase: a linear search here made a
        # note's extraction quadratic in its number of blocks.
        index = bisect_left(blocks, block.line, key=attrgetter("line"))
        p, f = self.window.p, self.window.f
        return ExtractionInput(
            block=Utterance(block.id, block.text),
            before=tuple(Utterance(b.id, b.text) for b in blocks[max(0, index - p) : index]),
            after=tuple(Utterance(b.id, b.text) for b in blocks[index + 1 : index + 1 + f]),
        )

    def _window_neighbours(
        self, blocks: Sequence[Block], changed: set[str], kept: set[str]
    ) -> set[str]:
        """The blocks (of ``kept``) whose window holds a block of ``changed``."""
        p, f = self.window.p, self.window.f
        ids = [b.id for b in blocks if b.id in kept]
        found: set[str] = set()
        for index, bid in enumerate(ids):
            if bid in changed:
                # Block j sees i when i is among its p blocks before or its f blocks after.
                found.update(ids[max(0, index - f) : index])
                found.update(ids[index + 1 : index + 1 + p])
        return found - changed

    def _window_texts(self, blocks: Sequence[Block], block: Block) -> tuple[str, ...]:
        item = self._extraction_input(blocks, block)
        return tuple(u.text for u in (*item.before, *item.after))
