"""Stage one of a take (:mod:`.consumer`): grade a note, writing nothing.

The note is taken as synced (:meth:`NoteSync.current`: the note the watch path or the walk just
synced, or read and synced again when its file changed since). The claims of its blocks whose
text changed are extracted again, and the claims that need it are evaluated, with those of the
neighbouring blocks whose window holds a changed block. The result, a
:class:`~aclarai.daemon.loop.take.GradedNote`, is what the later stages write to the store and
into the note. Entries whose block left the note follow it to its new note (a move) or leave
the queue (a delete).
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter

from aclarai.agents import (
    ClaimExtractor,
    EvalItem,
    Evaluator,
    ExtractionInput,
    Utterance,
    VectorIndex,
)
from aclarai.daemon.config import WindowSize
from aclarai.daemon.loop.take import DrainStats, GradedNote, NoteWork
from aclarai.daemon.vault.notesync import NoteSync
from aclarai.daemon.vault.queue import DurableQueue, QueueEntry
from aclarai.graph import (
    ClaimRecord,
    GradeWrite,
    GraphStore,
    ScoreRecord,
    StoredClaim,
    block_key,
)
from aclarai.parsers import (
    SCORE_NAMES,
    Block,
    EvaluationError,
    EvaluatorUnavailable,
    TransientError,
    named_scores,
    utc_now,
)

log = logging.getLogger(__name__)

MOVE_WAIT_S = 2.0


def needs_evaluation(claim: StoredClaim, block_hash: str) -> bool:
    score = claim.score
    if score is None or score.evaluated_hash != block_hash:
        return True
    return any(getattr(score, name) is None for name in SCORE_NAMES)


def _extracted_from_other_text(claims: Sequence[StoredClaim], block: Block) -> bool:
    """Whether the block's claims were scored against another text: extracted before an edit
    whose own processing did not finish, so they must be extracted again."""
    return any(c.score is not None and c.score.evaluated_hash != block.hash for c in claims)


def _replaced(old: Sequence[StoredClaim], claims: Sequence[ClaimRecord]) -> list[StoredClaim]:
    """A block's claims once ``replace_claims`` made ``claims`` its claims: in their order,
    without repeats, each keeping the score its edge had (see :meth:`GraphStore.replace_claims`)."""
    scores = {c.id: c.score for c in old}
    listed: dict[str, StoredClaim] = {}
    for c in claims:
        if c.id not in listed:
            listed[c.id] = StoredClaim(c.id, c.block_id, c.text, scores.get(c.id))
    return list(listed.values())


class NoteGrader:
    """Grades the notes of a take for :class:`~aclarai.daemon.loop.consumer.DirtyBlockConsumer`
    (see the module docstring); ``answered`` is called whenever the model answered a call."""

    def __init__(
        self,
        notes: NoteSync,
        queue: DurableQueue,
        extractor: ClaimExtractor,
        evaluator: Evaluator,
        window: WindowSize,
        *,
        reevaluate: bool,
        index: VectorIndex | None,
        answered: Callable[[], None],
    ) -> None:
        self.notes = notes
        self.store: GraphStore = notes.store
        self.queue = queue
        self.extractor = extractor
        self.evaluator = evaluator
        self.window = window
        """``window.claimify``: the blocks before (``p``) and after (``f``) a claim's block."""
        self.reevaluate = reevaluate
        """Re-score every claim taken, even one scored against the block's current text."""
        self.index = index
        self._answered = answered
        self._unwritten: dict[str, str] = {}
        """Block key → hash of an edit whose write-back did not reach the note (a conflict)."""

    def grade(self, note: NoteWork) -> None:
        """Take the note as synced, extract the claims of its changed blocks and evaluate the
        claims that need it. Nothing is written; ``note.graded`` holds the result, or
        ``note.done`` the entries to complete when there is nothing to grade."""
        rel, entries, stats = note.rel, note.entries, note.stats
        synced = self.notes.current(rel, {e.block_id for e in entries})
        if synced is None:
            self._requeue_moved(entries)
            return
        parsed = synced.parsed
        kept = {r.id for r in synced.records}
        blocks = {k: b for b in parsed.blocks if (k := block_key(rel, b.id)) in kept}
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
        edited = {b for b in targets if self._text_changed(b, claims_by_block[b], blocks[b])}
        # Remembered until the note is written: re-extraction may replace every claim that
        # still carries the old text's hash, and an outage or a conflict may come first.
        for bid in edited:
            self._unwritten[bid] = blocks[bid].hash
        to_extract = [blocks[bid] for bid in targets if bid in changed]
        conversation = "participants" in parsed.metadata
        found, failed = self._extract(rel, parsed.blocks, to_extract, stats, conversation)
        # A block's decontextualization reads the blocks around it: when one changes, the
        # scores of the blocks whose window holds it are re-made too, once per pass.
        neighbours = self._window_neighbours(rel, parsed.blocks, changed, kept) - set(targets)
        scored = [*targets, *sorted(neighbours, key=lambda bid: blocks[bid].line)]
        if neighbours:
            log.info("%s: %d neighbouring block(s) re-scored", rel, len(neighbours))
            claims_by_block.update(self.store.claims_of_blocks(scored[len(targets) :]))
        for bid, claims in found.items():
            claims_by_block[bid] = _replaced(claims_by_block[bid], claims)

        pending = [
            (bid, blocks[bid], claim)
            for bid in scored
            if bid not in failed
            for claim in claims_by_block[bid]
            if self.reevaluate or bid in neighbours or needs_evaluation(claim, blocks[bid].hash)
        ]
        records: list[ScoreRecord] = []
        if pending:
            # One window per block, not per claim.
            window = {
                bid: self._window_texts(rel, parsed.blocks, blocks[bid])
                for bid in dict.fromkeys(bid for bid, _, _ in pending)
            }
            scores = self.evaluator.evaluate_batch(
                [EvalItem(c.text, b.text, window[bid], c.id) for bid, b, c in pending]
            )
            unavailable = [s for s in scores if s.unavailable]
            if len(unavailable) == len(scores):
                # The extraction went through: its claims are kept while the evaluator is away.
                self.store.replace_claims(found)
                raise EvaluatorUnavailable(unavailable[0].status)
            now = utc_now()
            # A neighbour's text did not change: a failed re-score keeps the scores it has.
            kept_scores = [
                (bid, b, c, s)
                for (bid, b, c), s in zip(pending, scores, strict=True)
                if bid not in neighbours or s.status == "ok"
            ]
            records = [
                ScoreRecord(
                    claim_id=c.id,
                    block_id=bid,
                    evaluated_hash=b.hash,
                    **named_scores(s),
                    status=s.status,
                    model=self.evaluator.model_id,
                    verdict=s.verdict,
                    justification=s.justification,
                    omitted=s.omitted,
                    evaluated_at=now,
                )
                for bid, b, c, s in kept_scores
            ]
            stats.claims_evaluated += len(pending)
            stats.null_scores += sum(
                1 for *_, s in kept_scores if any(getattr(s, n) is None for n in SCORE_NAMES)
            )
            for (bid, _, c), s in zip(pending, scores, strict=True):
                log.debug("block %s claim %s scored: %s", bid, c.id, s.status)
            fresh = {(r.claim_id, r.block_id): r for r in records}
            claims_by_block = {
                bid: [
                    StoredClaim(c.id, c.block_id, c.text, fresh.get((c.id, bid), c.score))
                    for c in claims
                ]
                for bid, claims in claims_by_block.items()
            }
        if to_extract or pending:
            self._answered()
        rescored = {bid for bid, _, _ in pending}
        note.graded = GradedNote(
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

    def written_back(self, blocks: Iterable[str]) -> None:
        """The write-back of these edited blocks reached the note: a retry after a failure to
        record it (or to settle) must not take their comments for an older text's and bump
        their ``ver`` again."""
        for bid in blocks:
            self._unwritten.pop(bid, None)

    def _text_changed(self, key: str, claims: Sequence[StoredClaim], block: Block) -> bool:
        """Whether the block's score comments were made for another text: its claims were
        scored against another hash, or an edit's write-back has not reached the note yet."""
        if self._unwritten.get(key) == block.hash:
            return True
        return _extracted_from_other_text(claims, block)

    def _extract(
        self,
        rel: str,
        blocks: Sequence[Block],
        to_extract: list[Block],
        stats: DrainStats,
        conversation: bool,
    ) -> tuple[dict[str, list[ClaimRecord]], dict[str, EvaluationError]]:
        """Extract the claims of ``to_extract`` (blocks of the note ``rel``, a conversation
        note or not): those of the blocks that went through, and the blocks that failed, by key.

        Raises:
            TransientError: the model endpoint could not be reached (the file waits).
        """
        if not to_extract:
            return {}, {}
        outcomes = self.extractor.extract_each(
            [self._extraction_input(rel, blocks, b, conversation) for b in to_extract]
        )
        for outcome in outcomes:
            if isinstance(outcome, TransientError):
                raise outcome
        found: dict[str, list[ClaimRecord]] = {}
        failed: dict[str, EvaluationError] = {}
        for block, outcome in zip(to_extract, outcomes, strict=True):
            key = block_key(rel, block.id)
            if isinstance(outcome, EvaluationError):
                failed[key] = outcome
            else:
                found[key] = [ClaimRecord(c.id, key, c.text) for c in outcome]
        stats.claims_extracted += sum(len(claims) for claims in found.values())
        stats.blocks_extracted += len(found)
        stats.extraction_failures += len(failed)
        return found, failed

    def _requeue_moved(self, entries: list[QueueEntry]) -> None:
        """Entries whose block is not in their file any more leave the queue: the block moved
        (its note renamed or moved: the queue moved its entry along, see
        :meth:`DurableQueue.follow`) or was deleted. A block the store still holds may be on
        its way to another note (a cut and paste, a delete then create): its entry waits until
        the store moves it or marks it deleted, so the edit it carries is not lost.
        """
        stored = self.store.get_blocks([e.block_id for e in entries])
        done = []
        waiting = []
        for entry in entries:
            block = stored.get(entry.block_id)
            if block is not None and block.deleted_at is None:
                waiting.append(entry)
                continue
            done.append(entry)
        self.queue.complete(done)
        self.queue.release(waiting, delay_s=MOVE_WAIT_S)

    def _extraction_input(
        self, rel: str, blocks: Sequence[Block], block: Block, conversation: bool = True
    ) -> ExtractionInput:
        # Blocks come in note order, so their id lines increase: a linear search here made a
        # note's extraction quadratic in its number of blocks.
        index = bisect_left(blocks, block.line, key=attrgetter("line"))
        p, f = self.window.p, self.window.f

        def utterance(b: Block) -> Utterance:
            return Utterance(block_key(rel, b.id), b.text)

        return ExtractionInput(
            block=utterance(block),
            before=tuple(utterance(b) for b in blocks[max(0, index - p) : index]),
            after=tuple(utterance(b) for b in blocks[index + 1 : index + 1 + f]),
            conversation=conversation,
        )

    def _window_neighbours(
        self, rel: str, blocks: Sequence[Block], changed: set[str], kept: set[str]
    ) -> set[str]:
        """The blocks (of ``kept``, by key) whose window holds a block of ``changed``."""
        p, f = self.window.p, self.window.f
        ids = [k for b in blocks if (k := block_key(rel, b.id)) in kept]
        found: set[str] = set()
        for index, bid in enumerate(ids):
            if bid in changed:
                # Block j sees i when i is among its p blocks before or its f blocks after.
                found.update(ids[max(0, index - f) : index])
                found.update(ids[index + 1 : index + 1 + p])
        return found - changed

    def _window_texts(self, rel: str, blocks: Sequence[Block], block: Block) -> tuple[str, ...]:
        return self._extraction_input(rel, blocks, block).around()
