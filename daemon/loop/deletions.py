"""Blocks that left their note, held for a grace period before they are marked deleted.

A block can leave a note because the note was deleted, moved, or the block was cut and pasted
elsewhere. Editors and sync tools do these things in several steps (delete then create, cut then
paste), so a block that disappears is only a *candidate*: if within the grace period another note
is synced holding the same id, the block has moved there (under that note's key, with its claims
and scores) and nothing is deleted. Only candidates that still belong to the note that lost them,
and that the note still does not hold, are marked deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from aclarai.daemon.vault.notesync import NoteSync

log = logging.getLogger(__name__)


@dataclass
class PendingDeletes:
    notes: NoteSync
    grace_s: float
    _since: dict[str, tuple[str, float]] = field(default_factory=dict)
    """Block key -> (the note that lost it, when)."""

    def __len__(self) -> int:
        return len(self._since)

    def add(self, lost: Mapping[str, str], now: float) -> None:
        """Start the grace period of blocks (id -> note that lost them)."""
        for block_id, rel in lost.items():
            self._since.setdefault(block_id, (rel, now))

    def finalize(self, now: float) -> list[str]:
        """Mark deleted the candidates whose grace ended and that nothing took back."""
        due = {bid: rel for bid, (rel, at) in self._since.items() if now - at >= self.grace_s}
        if not due:
            return []
        for block_id in due:
            del self._since[block_id]
        store = self.notes.store
        stored = store.get_blocks(due)
        orphans: dict[str, list[str]] = {}
        for block_id, rel in due.items():
            block = stored.get(block_id)
            if block is not None and block.deleted_at is None and block.file == rel:
                orphans.setdefault(rel, []).append(block_id)
        deleted: list[str] = []
        for rel, ids in sorted(orphans.items()):
            held = self.notes.held_ids(rel)
            if held is None:
                continue
            gone = [bid for bid in ids if bid not in held]
            if gone:
                store.mark_deleted(gone)
                deleted.extend(gone)
                log.info("%s: %d block(s) marked deleted: %s", rel, len(gone), ", ".join(gone))
        return deleted
