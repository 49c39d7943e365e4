"""Where a block new to its note came from: a renamed or moved note, a cut and pasted paragraph.

A block is its note plus its id, as in Obsidian, so the same id in another note is another block
(a template puts its ids in every note made from it), unless that note no longer holds it: then
the block moved, and takes its claims and scores along (:attr:`BlockRecord.moved_from`).
:class:`BlockMoves` tells the two apart for :class:`~aclarai.daemon.vault.notesync.NoteSync`,
under its lock, and keeps what that needs between syncs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection

from aclarai.daemon.vault.notes import NoteFile, Vault
from aclarai.graph import BlockRecord, FileState, GraphStore, StoredBlock, key_block_id

log = logging.getLogger(__name__)


class BlockMoves:
    """Finds the blocks that new blocks take over; ``held_ids`` reads which block keys a note
    holds now (``None``: it cannot be read)."""

    def __init__(
        self, store: GraphStore, vault: Vault, held_ids: Callable[[str], set[str] | None]
    ) -> None:
        self.store = store
        self.vault = vault
        self.held_ids = held_ids
        self.left: set[str] = set()
        """Blocks a sync found gone from their note, live until their deletion (a note that
        still looks as synced cannot be trusted to hold them)."""
        self.seen: dict[str, tuple[int, int]] = {}
        """Each note's (mtime_ns, size) when it was last synced: a note that still shows them
        holds what the store holds (the store records no mtime for a racily clean read)."""

    def taken_over(
        self,
        every: dict[str, list[BlockRecord]],
        stored: dict[str, StoredBlock],
        walked: Collection[str],
    ) -> dict[str, StoredBlock]:
        """The live blocks of other notes that the blocks of ``every`` (note -> its blocks)
        new to the store (not in ``stored``) take over, by new key: same id, and its note no
        longer holds it. Among several, the one with the same text, then the first key; each is
        taken once. ``walked``: notes a walk found in step with the store."""
        fresh = [b for records in every.values() for b in records if b.id not in stored]
        if not fresh:
            return {}
        candidates: dict[str, list[StoredBlock]] = {}
        for old in self.store.live_blocks_with_ids({key_block_id(b.id) for b in fresh}):
            candidates.setdefault(old.block_id, []).append(old)
        if not candidates:
            return {}
        files = {old.file for found in candidates.values() for old in found}
        states = self.store.file_states(f for f in files - every.keys() if f not in walked)
        holds = _Holdings(self, every, states, walked)
        # Each candidate is looked at once: a template's id has one in every note made from it.
        loose = {
            block_id: free
            for block_id, found in candidates.items()
            if (free := [old for old in found if not holds(old)])
        }
        taken: dict[str, StoredBlock] = {}
        used: set[str] = set()
        for b in fresh:
            found = [
                old
                for old in loose.get(key_block_id(b.id), ())
                if old.file != b.file and old.id not in used
            ]
            if found:
                old = min(found, key=lambda o: (o.hash != b.hash, o.id))
                taken[b.id] = old
                used.add(old.id)
                log.info("%s: block %s came from %s", b.file, old.block_id, old.file)
        return taken


class _Holdings:
    """Whether a block's note still holds it, each note looked at once per sync: from the
    batch being synced, else from the note's file when it changed since the store last synced
    it (or the block left it since), else the store's word (always for a note the walk has
    passed: looking at each note made from a template again for every batch of a walk would
    make it quadratic)."""

    def __init__(
        self,
        moves: BlockMoves,
        every: dict[str, list[BlockRecord]],
        states: dict[str, FileState],
        walked: Collection[str],
    ) -> None:
        self.moves = moves
        self.held = {rel: {b.id for b in records} for rel, records in every.items()}
        self.states = states
        self.walked = walked
        self.unchanged: dict[str, bool] = {}

    def __call__(self, block: StoredBlock) -> bool:
        if block.file in self.held:
            return block.id in self.held[block.file]
        if block.id not in self.moves.left and self._unchanged(block.file):
            return True
        held = self.moves.held_ids(block.file)
        self.held[block.file] = set() if held is None else held
        return block.id in self.held[block.file]

    def _unchanged(self, rel: str) -> bool:
        if rel in self.walked:
            return True
        if rel not in self.unchanged:
            note = self.moves.vault.note(rel)
            state = self.states.get(rel)
            self.unchanged[rel] = note is not None and (
                self.moves.seen.get(rel) == _stat(note)
                or (state is not None and state.mtime_ns != 0 and _stat(note) == _stat(state))
            )
        return self.unchanged[rel]


def _stat(note: NoteFile | FileState) -> tuple[int, int]:
    return note.mtime_ns, note.size
