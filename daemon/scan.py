"""Comparing the vault with the store: what changed, enqueued before it is synced.

A scan reads only notes whose size or mtime differ from what the store last saw; among those it
parses only notes whose bytes differ. Every block that is new, restored or whose hash differs is
enqueued in the durable queue *before* the store learns its new hash, so a crash between the two
never loses the change. Block ids seen twice in the vault are reported once with both paths; the
second occurrence is skipped, never merged into the first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from aclarai.daemon.queue import Dirty, DurableQueue
from aclarai.daemon.vault import NoteContent, NoteFile, Vault
from aclarai.graph import BlockRecord, FileState, FileSync, GraphStore, StoredBlock
from aclarai.parsers import ParsedNote, ParseError, parse_note

log = logging.getLogger(__name__)

BATCH_FILES = 200


@dataclass
class ScanReport:
    files_seen: int = 0
    files_read: int = 0
    files_unreadable: int = 0
    files_parsed: int = 0
    files_with_markers: int = 0
    blocks_seen: int = 0
    dirty_blocks: int = 0
    rescore_blocks: int = 0
    deleted_blocks: int = 0
    duplicates: list[tuple[str, str, str]] = field(default_factory=list)
    """(block id, path kept, path skipped)."""
    errors: list[str] = field(default_factory=list)
    dirty_files: dict[str, int] = field(default_factory=dict)
    """Dirty blocks per note."""
    vanished: dict[str, str] = field(default_factory=dict)
    """Blocks no note holds any more, with the note that lost them (a full scan marks them
    deleted at once; the daemon waits for the grace period)."""


@dataclass(frozen=True, slots=True)
class _Parsed:
    content: NoteContent
    note: ParsedNote
    blocks: list[BlockRecord]


def block_records(rel: str, parsed: ParsedNote) -> list[BlockRecord]:
    return [
        BlockRecord(id=b.id, file=rel, text=b.text, hash=b.hash, version=b.version, position=i)
        for i, b in enumerate(parsed.blocks)
    ]


def live_blocks(store: GraphStore) -> Iterator[StoredBlock]:
    """Every live block the store holds, note by note in path order."""
    for path in sorted(store.file_states()):
        yield from store.blocks_of_file(path)


def is_copy(vault: Vault, stored: StoredBlock | None, record: BlockRecord) -> bool:
    """Whether ``record`` is a copy of a block the store places in another note that still
    holds it: the store's copy wins, so a copied paragraph never steals the original's
    identity (a block whose old note no longer holds it has moved instead)."""
    return (
        stored is not None
        and stored.file != record.file
        and stored.deleted_at is None
        and note_holds(vault, stored.file, record.id)
    )


def note_holds(vault: Vault, rel: str, block_id: str) -> bool:
    """Whether the note at ``rel`` holds ``block_id`` now (read from disk)."""
    note = vault.note(rel)
    if note is None:
        return False
    try:
        content = vault.read(note)
    except (ParseError, OSError):
        return False
    return any(b.id == block_id for b in parse_note(content.text).blocks)


def file_state(content: NoteContent) -> FileState:
    return FileState(
        path=content.note.rel,
        mtime_ns=content.note.mtime_ns,
        size=content.note.size,
        sha256=content.sha256,
    )


class Scanner:
    """Finds dirty blocks; the same code serves ``resync``, start-up and the watcher."""

    def __init__(self, vault: Vault, store: GraphStore, queue: DurableQueue | None) -> None:
        self.vault = vault
        self.store = store
        self.queue = queue

    def scan(
        self,
        notes: Iterable[NoteFile] | None = None,
        *,
        full: bool = True,
        dry_run: bool = False,
        force_read: bool = False,
        progress: Callable[[int], None] | None = None,
    ) -> ScanReport:
        """Sync ``notes`` (default: the whole vault) and enqueue what changed.

        With ``full``, notes the store knows but the vault no longer holds are forgotten and
        their blocks marked deleted, and blocks with failed (null) scores are queued again.
        With ``dry_run`` nothing is enqueued or stored: the report says what would change.
        ``force_read`` ignores the recorded file states (``status --verify``).
        """
        report = ScanReport()
        states = self.store.file_states()
        owners: dict[str, str] = {}
        removed: dict[str, str] = {}
        batch: list[_Parsed] = []
        seen: set[str] = set()
        for note in self.vault.iter_notes() if notes is None else notes:
            seen.add(note.rel)
            report.files_seen += 1
            if progress is not None:
                progress(report.files_seen)
            known = None if force_read else states.get(note.rel)
            parsed = self._read_if_changed(note, known, report)
            if parsed is None:
                continue
            batch.append(parsed)
            if len(batch) >= BATCH_FILES:
                removed.update(self._flush(batch, owners, report, dry_run=dry_run))
                batch = []
        removed.update(self._flush(batch, owners, report, dry_run=dry_run))
        gone = sorted(set(states) - seen) if full else []
        if dry_run:
            report.deleted_blocks += sum(len(self.store.blocks_of_file(p)) for p in gone)
            return report
        removed.update(self.forget(gone))
        if removed:
            report.vanished = self.vanished(removed)
            if full and report.vanished:
                report.deleted_blocks += self.store.mark_deleted(report.vanished)
        if full and self.queue is not None:
            report.rescore_blocks = self._enqueue_null_scores()
        return report

    def _read_if_changed(
        self, note: NoteFile, known: FileState | None, report: ScanReport
    ) -> _Parsed | None:
        if (
            known is not None
            and known.mtime_ns != 0
            and (known.mtime_ns, known.size) == (note.mtime_ns, note.size)
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
        if known is not None and known.sha256 == content.sha256 and content.note.mtime_ns == 0:
            return None
        parsed = parse_note(content.text)
        report.files_parsed += 1
        for problem in parsed.problems:
            message = f"{note.rel}:{problem.line}: {problem.message}"
            log.warning("%s", message)
            report.errors.append(message)
        if parsed.has_markers:
            report.files_with_markers += 1
        report.blocks_seen += len(parsed.blocks)
        return _Parsed(content, parsed, block_records(note.rel, parsed))

    def _flush(
        self,
        batch: list[_Parsed],
        owners: dict[str, str],
        report: ScanReport,
        *,
        dry_run: bool,
    ) -> dict[str, str]:
        if not batch:
            return {}
        stored = self.store.get_blocks([b.id for p in batch for b in p.blocks])
        dirty: list[Dirty] = []
        syncs: list[FileSync] = []
        for p in batch:
            kept: list[BlockRecord] = []
            for b in p.blocks:
                old = stored.get(b.id)
                owner = owners.get(b.id)
                if owner is None and old is not None and is_copy(self.vault, old, b):
                    owner = owners[b.id] = old.file
                if owner is not None and owner != b.file:
                    log.warning(
                        "duplicate block id %s in %s and %s; skipped in %s",
                        b.id,
                        owner,
                        b.file,
                        b.file,
                    )
                    report.duplicates.append((b.id, owner, b.file))
                    continue
                owners[b.id] = b.file
                kept.append(b)
                if old is None or old.hash != b.hash or old.deleted_at is not None:
                    dirty.append(Dirty(b.id, b.file, b.hash))
                    report.dirty_files[b.file] = report.dirty_files.get(b.file, 0) + 1
            positions = [
                BlockRecord(b.id, b.file, b.text, b.hash, b.version, i) for i, b in enumerate(kept)
            ]
            syncs.append(FileSync(file_state(p.content), positions))
        report.dirty_blocks += len(dirty)
        if dry_run:
            return {}
        if self.queue is not None:
            self.queue.enqueue(dirty)
        return {
            bid: result.path for result in self.store.sync_files(syncs) for bid in result.removed
        }

    def forget(self, paths: Sequence[str]) -> dict[str, str]:
        """Drop notes that are gone from the store; return their live blocks (id -> note)."""
        if not paths:
            return {}
        ids = self.store.forget_files(paths)
        return {bid: block.file for bid, block in self.store.get_blocks(ids).items()}

    def vanished(self, removed: dict[str, str]) -> dict[str, str]:
        """The blocks among ``removed`` (id -> note that lost it) no synced note took over."""
        current = self.store.get_blocks(removed)
        return {
            bid: removed[bid]
            for bid, block in sorted(current.items())
            if block.deleted_at is None and block.file == removed[bid]
        }

    def _enqueue_null_scores(self) -> int:
        assert self.queue is not None
        claims = self.store.claims_needing_evaluation()
        block_ids = sorted({c.block_id for c in claims})
        blocks = self.store.get_blocks(block_ids)
        self.queue.enqueue(
            Dirty(bid, blocks[bid].file, None, "rescore") for bid in block_ids if bid in blocks
        )
        return len(block_ids)
