"""The one note-sync path: from notes on disk to the store, with what changed enqueued first.

For each note: read it once (skipped when its size and mtime match what the store last saw),
parse it once (skipped when its bytes hash as before), find the blocks it took over from another
note (renamed, moved, cut and pasted), enqueue the blocks whose text is new, restored or
different, and sync the note to the store in one call. A block is its note plus its id, as in
Obsidian: the same ``^summary`` in two notes (made from one template) is two blocks. The queue
learns of a change *before* the store learns the new hash, so a crash between the two never loses
it. The result is a :class:`SyncedNote`, a value saying what the note holds and what changed.

A block that leaves its note stays live in the store until it settles (:mod:`.settling`): the
note it is pasted into may take it over, with its claims and scores.

``resync``, the daemon's watch path and reconcile, the consumer and the settling all go through
:class:`NoteSync`; nothing else calls the store's ``sync_files``. The last synced
notes are kept in memory, so the consumer that takes a note the watch path just synced starts
from the same bytes and parse without reading or parsing it again: the conditional write's
re-hash is what proves the note did not change meanwhile.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace

from aclarai.daemon.vault.moves import BlockMoves
from aclarai.daemon.vault.notes import NoteContent, NoteFile, Vault
from aclarai.daemon.vault.queue import Dirty, DurableQueue
from aclarai.daemon.vault.settling import PENDING, Pending, Settling
from aclarai.graph import (
    BlockRecord,
    FileState,
    FileSync,
    GraphStore,
    block_key,
)
from aclarai.parsers import (
    NoteLayout,
    ParsedNote,
    ParseError,
    ProblemKind,
    block_about,
    scan_note,
    unmarked_paragraphs,
    utc_now,
)

log = logging.getLogger(__name__)

BATCH_FILES = 200
"""Notes synced per store call in a walk of many notes."""
RECENT_NOTES = 256
"""Synced notes kept for the consumer (a bound on memory, not on correctness)."""
SETTLED_ONCE = "every_note_settled_at"
"""Queue metadata: when a whole pass first left every note to settle (see :meth:`sync_vault`)."""


@dataclass
class SyncReport:
    """What one sync of many notes saw and did."""

    files_seen: int = 0
    files_read: int = 0
    files_unreadable: int = 0
    files_parsed: int = 0
    files_with_markers: int = 0
    blocks_seen: int = 0
    dirty_blocks: int = 0
    rescore_blocks: int = 0
    deleted_blocks: int = 0
    duplicates: list[tuple[str, int]] = field(default_factory=list)
    """(note, line) of each block skipped because its note used its id earlier."""
    errors: list[str] = field(default_factory=list)
    dirty_files: dict[str, int] = field(default_factory=dict)
    """Dirty blocks per note."""
    vanished: dict[str, str] = field(default_factory=dict)
    """Blocks a whole-vault sync marked deleted (no note holds them any more), with the note
    that lost them."""
    emptied: list[str] = field(default_factory=list)
    """Adopted notes holding an emptied block (its paragraph deleted), whose lines are to go."""
    unmarked: dict[str, int] = field(default_factory=dict)
    """Adopted notes holding paragraphs or list items with no id yet, and how many."""


@dataclass(frozen=True, slots=True)
class SyncedNote:
    """A note as last synced: its bytes, its parse, and the blocks the store holds for it."""

    content: NoteContent
    layout: NoteLayout
    records: tuple[BlockRecord, ...]
    """The note's blocks, numbered in note order."""
    changed: tuple[str, ...] = ()
    """Blocks whose text this sync found new, restored or different (and enqueued)."""
    seen: tuple[int, int] = (0, 0)
    """The file's (mtime_ns, size) taken before it was read: while the file still shows them,
    it holds ``content`` (a racily clean read is checked by the conditional write instead)."""

    @property
    def rel(self) -> str:
        return self.content.note.rel

    @property
    def parsed(self) -> ParsedNote:
        return self.layout.note


def block_records(rel: str, layout: NoteLayout) -> list[BlockRecord]:
    about = block_about(rel, layout)
    return [
        BlockRecord(
            block_key(rel, b.id),
            rel,
            b.text,
            b.hash,
            b.version,
            i,
            about=about[b.id].about,
            nearby=about[b.id].nearby,
        )
        for i, b in enumerate(layout.note.blocks)
    ]


def file_state(content: NoteContent) -> FileState:
    return FileState(
        path=content.note.rel,
        mtime_ns=content.note.mtime_ns,
        size=content.note.size,
        sha256=content.sha256,
    )


@dataclass(frozen=True, slots=True)
class NoteWrite:
    """Our rewrite of a synced note's score comments, for :meth:`NoteSync.written`."""

    before: SyncedNote
    content: NoteContent
    """The bytes written, with the file's stat right after the write."""
    layout: NoteLayout
    versions: dict[str, int]
    """The new ``ver`` of each block whose comments changed."""


def _after(write: NoteWrite) -> SyncedNote:
    """The note as the store holds it once ``write`` is recorded."""
    versions = write.versions
    records = tuple(
        replace(r, version=versions[r.id]) if r.id in versions else r for r in write.before.records
    )
    return SyncedNote(write.content, write.layout, records, seen=_stat(write.content.note))


class _Look(enum.Enum):
    """Which notes a sync reads and parses."""

    CHANGED = "changed"
    """Read a note whose size or mtime differ from the store's; parse it if its bytes do."""
    CHANGED_BYTES = "changed bytes"
    """Read every note given (the watcher saw it change); parse it if its bytes differ."""
    EVERY_NOTE = "every note"
    """Read and parse every note (``status --verify`` re-hashes the vault)."""


@dataclass(frozen=True, slots=True)
class _Read:
    note: NoteFile
    content: NoteContent
    layout: NoteLayout


class NoteSync:
    """Syncs notes to the store and remembers the last synced ones (thread-safe).

    ``queue`` is ``None`` for a look that enqueues nothing (``status --verify``, dry runs).
    """

    def __init__(self, vault: Vault, store: GraphStore, queue: DurableQueue | None) -> None:
        self.vault = vault
        self.store = store
        self.queue = queue
        self.lock = threading.RLock()
        """Held by every sync, so a note is never synced by two threads at once."""
        self._recent: OrderedDict[str, SyncedNote] = OrderedDict()
        self.moves = BlockMoves(store, vault, self.held_ids)
        self.settling = Settling(
            store,
            queue,
            self.lock,
            holding=self._holding,
            deleted=self.moves.left.difference_update,
        )

    def sync_vault(
        self,
        *,
        dry_run: bool = False,
        force_read: bool = False,
        progress: Callable[[int], None] | None = None,
        on_batch: Callable[[], bool] | None = None,
        settle_grace_s: float = 0.0,
    ) -> SyncReport:
        """Sync every note of the vault; forget the notes it no longer holds; settle (see
        :meth:`settle`) what was left at least ``settle_grace_s`` ago, every note at once by
        default; queue again the blocks whose claims have null scores.

        With ``dry_run`` nothing is enqueued or stored: the report says what would change.
        ``force_read`` ignores the recorded file states (``status --verify``). ``on_batch``
        runs after each batch of notes is synced, outside the lock: ``resync`` drains the queue
        there, so the consumer finds every note it takes among the notes just synced. When it
        returns False the walk stops there (the store went away): nothing is forgotten or
        marked deleted, and the report covers the notes synced so far.

        The lock is held per batch, not for the whole walk: the watch path may sync a note in
        between, and the walk then finds it changed since the store's states were loaded and
        syncs it again, to the same result.
        """
        report = SyncReport()
        states = self.store.file_states()
        seen: set[str] = set()

        def walk() -> Iterator[NoteFile]:
            for note in self.vault.iter_notes():
                seen.add(note.rel)
                yield note

        look = _Look.EVERY_NOTE if force_read else _Look.CHANGED
        if not dry_run and self.queue is not None and self.queue.get_meta(SETTLED_ONCE) is None:
            # A graph from before notes were settled from disk may place blocks in notes that
            # lost them (a daemon stopped within the grace period): every note is settled once.
            with self.lock:
                self.settling.later(states)
                self.queue.set_meta(SETTLED_ONCE, utc_now())
        if not self._sync(walk(), states, report, dry_run, look, progress, on_batch):
            return report
        with self.lock:
            gone = sorted(set(states) - seen)
            if dry_run:
                report.deleted_blocks += sum(len(self.store.blocks_of_file(p)) for p in gone)
                return report
            self.forget(gone)
            report.vanished = self.settle(grace_s=settle_grace_s)
            report.deleted_blocks += len(report.vanished)
            if self.queue is not None:
                report.rescore_blocks = self._enqueue_null_scores()
            return report

    def sync_notes(self, notes: Sequence[NoteFile]) -> SyncReport:
        """Sync these notes, which the watcher saw change, so each is read whatever its size
        and mtime say (the watch path). The blocks they lost are left to :meth:`settle`."""
        with self.lock:
            report = SyncReport()
            states = self.store.file_states([n.rel for n in notes])
            self._sync(iter(notes), states, report, False, _Look.CHANGED_BYTES, None, None)
            return report

    @property
    def unsettled(self) -> bool:
        """Whether some note may have blocks left to settle."""
        return self.settling.unsettled

    def settle(self, *, grace_s: float = 0.0, now: float | None = None) -> dict[str, str]:
        """Mark deleted the blocks that left their notes ``grace_s`` ago and turned up in no
        other note (see :meth:`.settling.Settling.settle`); return them (key -> note)."""
        return self.settling.settle(grace_s=grace_s, now=now)

    def _holding(self, rel: str) -> set[str] | Pending | None:
        """The keys of the blocks the note at ``rel`` holds as the store last synced it;
        ``None`` when it cannot be read; :data:`~.settling.PENDING` when the note changed (or
        went) since the store last synced (or forgot) it: a sync is to come."""
        note = self.vault.note(rel)
        state = self.store.file_states([rel]).get(rel)
        if note is None:
            return set() if state is None else PENDING
        if state is None:
            return PENDING
        recent = self._recent.get(rel)
        if recent is not None and recent.seen == (note.mtime_ns, note.size):
            content = recent.content
        else:
            try:
                content = self.vault.read(note)
            except FileNotFoundError:
                return PENDING
            except (ParseError, OSError) as exc:
                log.warning("%s: cannot tell which blocks it holds: %s", rel, exc)
                return None
        if content.sha256 != state.sha256:
            return PENDING
        return {block_key(rel, b.id) for b in scan_note(content.text).note.blocks}

    def current(self, rel: str, in_flight: Collection[str] = ()) -> SyncedNote | None:
        """The note at ``rel`` as the store holds it now: the last synced note when its file
        still looks the same, else read (and synced when its bytes changed); ``None`` when no
        note is there. Blocks of ``in_flight`` (the caller is processing them) are not queued
        again when they changed.

        Raises:
            ParseError: the note cannot be read (too large, not UTF-8, unreadable).
        """
        note = self.vault.note(rel)
        if note is None:
            return None
        with self.lock:
            recent = self._recent.get(rel)
            if recent is not None and recent.seen == (note.mtime_ns, note.size):
                self._recent.move_to_end(rel)
                return recent
            state = self.store.file_states([rel]).get(rel)
            try:
                content = self.vault.read(note)
            except FileNotFoundError:
                return None
            layout = scan_note(content.text)
            if state is None or state.sha256 != content.sha256:
                [synced] = self._flush(
                    [_Read(note, content, layout)], SyncReport(), False, in_flight
                )
                return synced
            # The store already holds these bytes: nothing to sync.
            records = tuple(block_records(rel, layout))
            return self._remember(SyncedNote(content, layout, records, seen=_stat(note)))

    def written(self, writes: Sequence[NoteWrite]) -> list[SyncedNote]:
        """Record our rewrites of notes' score comments (same blocks, new ``ver``s), in order:
        the store learns each note's new file state and versions, all in one call; no block is
        synced again.

        A note whose store was synced to other bytes meanwhile (an edit the user then undid, so
        the conditional write went through) is synced in full instead.
        """
        if not writes:
            return []
        with self.lock:
            states = self.store.file_states([w.before.rel for w in writes])
            recorded = []
            result: list[SyncedNote | None] = []
            for w in writes:
                state = states.get(w.before.rel)
                if state is None or state.sha256 != w.before.content.sha256:
                    read = _Read(w.content.note, w.content, w.layout)
                    [synced] = self._flush([read], SyncReport(), False)
                    result.append(synced)
                else:
                    recorded.append(w)
                    result.append(None)
            self.store.record_writes([(file_state(w.content), w.versions) for w in recorded])
            done = iter(recorded)
            return [
                self._remember(_after(next(done))) if synced is None else synced
                for synced in result
            ]

    def forget_note(self, rel: str) -> None:
        """Drop what is remembered of ``rel`` (its write-back met a changed note)."""
        with self.lock:
            self._recent.pop(rel, None)

    def held_ids(self, rel: str) -> set[str] | None:
        """The keys of the blocks the note at ``rel`` holds now (empty when it is gone);
        ``None`` when it cannot be read, so nothing is decided on the strength of an unreadable
        note."""
        note = self.vault.note(rel)
        if note is None:
            return set()
        with self.lock:
            recent = self._recent.get(rel)
            if recent is not None and recent.seen == (note.mtime_ns, note.size):
                return {r.id for r in recent.records}
        try:
            content = self.vault.read(note)
        except FileNotFoundError:
            return set()
        except (ParseError, OSError) as exc:
            log.warning("%s: cannot tell which blocks it holds: %s", rel, exc)
            return None
        return {block_key(rel, b.id) for b in scan_note(content.text).note.blocks}

    def forget(self, paths: Sequence[str]) -> dict[str, str]:
        """Drop notes that are gone from the store, leaving their blocks to :meth:`settle`;
        return their live blocks (key -> note)."""
        if not paths:
            return {}
        with self.lock:
            for rel in paths:
                self._recent.pop(rel, None)
                self.moves.seen.pop(rel, None)
            self.settling.later(paths)
            ids = self.store.forget_files(paths)
            lost = {bid: block.file for bid, block in self.store.get_blocks(ids).items()}
            self.settling.forgot(paths, lost)
            if self.queue is not None:
                self.queue.count_unmarked(dict.fromkeys(paths, 0))
            return lost

    def _sync(
        self,
        notes: Iterator[NoteFile],
        states: dict[str, FileState],
        report: SyncReport,
        dry_run: bool,
        look: _Look,
        progress: Callable[[int], None] | None,
        on_batch: Callable[[], bool] | None,
    ) -> bool:
        """Sync ``notes`` in batches; False when ``on_batch`` stopped the walk."""
        batch: list[_Read] = []
        # The notes passed so far: each was in step with the store when the walk met it.
        walked: set[str] = set()

        def flush() -> bool:
            with self.lock:
                self._flush(batch, report, dry_run, walked=walked)
            go_on = not batch or on_batch is None or on_batch()
            batch.clear()
            return go_on

        for note in notes:
            report.files_seen += 1
            if progress is not None:
                progress(report.files_seen)
            read = self._read_if_changed(note, states.get(note.rel), report, dry_run, look)
            walked.add(note.rel)
            if read is None:
                continue
            batch.append(read)
            if len(batch) >= BATCH_FILES and not flush():
                return False
        return flush()

    def _read_if_changed(
        self,
        note: NoteFile,
        known: FileState | None,
        report: SyncReport,
        dry_run: bool,
        look: _Look,
    ) -> _Read | None:
        if (
            look is _Look.CHANGED
            and known is not None
            and known.mtime_ns != 0
            and _same_state(known, note)
        ):
            return None
        try:
            content = self.vault.read(note)
        except FileNotFoundError:
            return None
        except ParseError as exc:
            log.warning("%s", exc)
            report.errors.append(str(exc))
            report.files_unreadable += 1
            return None
        report.files_read += 1
        if look is not _Look.EVERY_NOTE and known is not None and known.sha256 == content.sha256:
            with self.lock:
                # ``known`` may be older than a sync the watch path made since it was loaded.
                fresh = self.store.file_states([note.rel]).get(note.rel)
                if fresh is not None and fresh.sha256 == content.sha256:
                    # The store holds these bytes: it only learns a new mtime, so the next walk
                    # skips the note without reading it (a racily clean mtime is never recorded).
                    if not dry_run and content.note.mtime_ns not in (0, fresh.mtime_ns):
                        self.store.record_write(file_state(content), {})
                    return None
        layout = scan_note(content.text)
        report.files_parsed += 1
        for problem in layout.note.problems:
            message = f"{note.rel}:{problem.line}: {problem.message}"
            log.warning("%s", message)
            report.errors.append(message)
            if problem.kind is ProblemKind.DUPLICATE_ID:
                report.duplicates.append((note.rel, problem.line))
        if layout.note.has_markers:
            report.files_with_markers += 1
        if any(marker.emptied for marker in layout.markers):
            report.emptied.append(note.rel)
        report.blocks_seen += len(layout.note.blocks)
        return _Read(note, content, layout)

    def _flush(
        self,
        batch: list[_Read],
        report: SyncReport,
        dry_run: bool,
        in_flight: Collection[str] = (),
        walked: Collection[str] = (),
    ) -> list[SyncedNote]:
        """Enqueue what changed in ``batch`` (but ``in_flight``) and sync it in one store call;
        ``walked``: notes a walk found in step with the store."""
        if not batch:
            return []
        every = {r.note.rel: block_records(r.note.rel, r.layout) for r in batch}
        stored = self.store.get_blocks([b.id for records in every.values() for b in records])
        sources = self.moves.taken_over(every, stored, walked)
        stored.update((old.id, old) for old in sources.values())
        dirty: list[Dirty] = []
        syncs: list[FileSync] = []
        kept_by_note: list[tuple[_Read, set[str]]] = []
        for read in batch:
            rel = read.note.rel
            records = [
                replace(b, moved_from=sources[b.id].id) if b.id in sources else b
                for b in every[rel]
            ]
            new = set()
            for b in records:
                old = stored.get(b.moved_from or b.id)
                if old is None or old.hash != b.hash or old.deleted_at:
                    new.add(b.id)
            queue_now = new.difference(in_flight)
            dirty.extend(Dirty(b.id, rel, b.hash) for b in records if b.id in queue_now)
            if new:
                report.dirty_files[rel] = report.dirty_files.get(rel, 0) + len(new)
            syncs.append(FileSync(file_state(read.content), records))
            kept_by_note.append((read, new))
        report.dirty_blocks += len(dirty)
        unmarked = {r.note.rel: unmarked_paragraphs(r.layout) for r in batch}
        report.unmarked.update((rel, n) for rel, n in unmarked.items() if n)
        if dry_run:
            return []
        if self.queue is not None:
            self.queue.follow(
                (old.id, b.id, b.file)
                for s in syncs
                for b in s.blocks
                if (old := sources.get(b.id))
            )
            self.queue.enqueue(dirty)
        # Before the store learns the notes: a crash after it forgets no block they left.
        self.settling.later([r.note.rel for r in batch])
        if self.queue is not None:
            self.queue.count_unmarked(unmarked)
        results = self.store.sync_files(syncs)
        self.settling.synced(results, (b.id for sync in syncs for b in sync.blocks))
        self.moves.left.difference_update(old.id for old in sources.values())
        synced = []
        for (read, new), result in zip(kept_by_note, results, strict=True):
            rel = read.note.rel
            self.moves.left.update(result.removed)
            note = SyncedNote(read.content, read.layout, tuple(every[rel]), seen=_stat(read.note))
            # What changed is this sync's news: the note remembered for later takes has none.
            self._remember(note)
            synced.append(replace(note, changed=tuple(sorted(new))))
        return synced

    def _remember(self, synced: SyncedNote) -> SyncedNote:
        self._recent[synced.rel] = synced
        self._recent.move_to_end(synced.rel)
        self.moves.seen[synced.rel] = synced.seen
        while len(self._recent) > RECENT_NOTES:
            self._recent.popitem(last=False)
        return synced

    def _enqueue_null_scores(self) -> int:
        assert self.queue is not None
        claims = self.store.claims_needing_evaluation()
        block_ids = sorted({c.block_id for c in claims})
        blocks = self.store.get_blocks(block_ids)
        self.queue.enqueue(
            Dirty(bid, blocks[bid].file, None, "rescore") for bid in block_ids if bid in blocks
        )
        return len(block_ids)


def _same_state(known: FileState, note: NoteFile) -> bool:
    return (known.mtime_ns, known.size) == (note.mtime_ns, note.size)


def _stat(note: NoteFile) -> tuple[int, int]:
    return note.mtime_ns, note.size
