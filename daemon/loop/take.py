"""A take: the queue entries one drain of the DirtyBlockConsumer (:mod:`.consumer`) takes at
once, grouped by note, and what each note carries through the take's stages: its grade (stage
one, :mod:`.grading`), its rewrite, and its share of the drain's counts."""

from __future__ import annotations

from dataclasses import dataclass, field

from aclarai.daemon.vault.notesync import NoteWrite, SyncedNote
from aclarai.daemon.vault.queue import QueueEntry
from aclarai.graph import GradeWrite, StoredClaim
from aclarai.parsers import Block, EvaluationError


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
    broker_outages: int = 0
    """Of those, files put back because the grading workers' Redis could not be reached."""
    blocks_extracted: int = 0
    extraction_failures: int = 0
    """Blocks whose extraction failed (each charged an attempt)."""
    errors: list[str] = field(default_factory=list)
    store_errors: list[str] = field(default_factory=list)
    """Why the graph store could not be reached; the work stays queued (no attempt counted)."""

    def model_failure(self) -> str | None:
        """Why the model did nothing useful in this drain, if so: it could not be reached, or
        every extraction or every evaluation it was asked for failed."""
        if self.broker_outages:
            return (
                "the grading workers' Redis could not be reached "
                f"({self.model_outages} note(s) wait)"
            )
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


@dataclass
class GradedNote:
    """A note's grade, made in stage one and written in stages two and three."""

    synced: SyncedNote
    blocks: dict[str, Block]
    """The note's blocks by key (:func:`aclarai.graph.block_key`)."""
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


@dataclass
class NoteWork:
    """One note of a take, carried through the stages of a drain."""

    rel: str
    entries: list[QueueEntry]
    stats: DrainStats = field(default_factory=DrainStats)
    graded: GradedNote | None = None
    done: list[QueueEntry] = field(default_factory=list)
    """Entries to complete once the take is through."""
