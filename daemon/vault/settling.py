"""Blocks that left their notes, settled: marked deleted once no note took them over.

A block that leaves its note stays live in the store for a while: it may have been cut to be
pasted into another note, whose sync then takes it over with its claims and scores. Which blocks
left is kept on disk, in the queue's database: each store call that may leave blocks behind
writes down its notes *before* it runs, and once it is through, one row per block that left, in
one transaction. :meth:`Settling.settle` marks deleted the blocks that left at least a grace
period ago (each counted from its own leaving) and that their note still does not hold: at once
in a whole pass, after ``watch.delete_grace_s`` in the daemon. A crash, a stop or a restart in
between forgets none of them, so the graph always comes to say what the vault says.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from aclarai.daemon.vault.queue import DurableQueue
from aclarai.graph import GraphStore, SyncResult, key_block_id

log = logging.getLogger(__name__)


class Pending(enum.Enum):
    """A note to settle once its coming sync is through: it changed (or went) since the store
    last synced (or forgot) it."""

    PENDING = "pending"


PENDING = Pending.PENDING

Holding = Callable[[str], set[str] | Pending | None]
"""The keys of the blocks a note holds as the store last synced it; ``None`` when it cannot be
read (its blocks stay as it last held them); :data:`PENDING`."""


class Settling:
    """The blocks leaving the notes of one vault (``queue`` ``None``: a look that records
    nothing, such as ``status --verify``)."""

    def __init__(
        self,
        store: GraphStore,
        queue: DurableQueue | None,
        lock: threading.RLock,
        *,
        holding: Holding,
        deleted: Callable[[Iterable[str]], None],
    ) -> None:
        self.store = store
        self.queue = queue
        self.lock = lock
        self.holding = holding
        self.deleted = deleted
        self.unsettled = queue is not None
        """Whether some note may be left to settle (the queue says which); set by every store
        call that may leave blocks behind, cleared once a settle finds none left."""

    def later(self, paths: Collection[str]) -> None:
        """Before a store call that syncs or forgets these notes."""
        if self.queue is not None and paths:
            self.queue.settle_later(paths)
            self.unsettled = True

    def synced(self, results: Sequence[SyncResult], blocks: Iterable[str]) -> None:
        """After a store sync: what each note lost, and the ``blocks`` it holds (back, if they
        had left)."""
        if self.queue is not None:
            self.queue.synced(
                [r.path for r in results],
                [(key, r.path) for r in results for key in r.removed],
                blocks,
            )

    def forgot(self, paths: Collection[str], lost: Mapping[str, str]) -> None:
        """After the store forgot notes gone from the vault: every block they held left."""
        if self.queue is not None:
            self.queue.synced(paths, lost.items(), ())

    def settle(self, *, grace_s: float = 0.0, now: float | None = None) -> dict[str, str]:
        """Mark deleted the blocks that left their notes at least ``grace_s`` ago (Unix time
        ``now``) and that no note took over meanwhile (a sync of the note they moved to moves
        them there). A note that changed since its last sync is left to that sync, which
        settles it again.

        Returns:
            The blocks marked deleted (key -> the note that lost them).
        """
        if self.queue is None:
            return {}
        with self.lock:
            cutoff = (time.time() if now is None else now) - grace_s
            notes, blocks = self.queue.leaving(before=cutoff)
            left: dict[str, list[str]] = {}
            for key, rel in blocks:
                left.setdefault(rel, []).append(key)
            gone: dict[str, str] = {}
            done_notes: list[str] = []
            done_keys: list[str] = []
            for rel in sorted(set(notes) | left.keys()):
                held = self.holding(rel)
                if held is PENDING:
                    continue
                if held is not None:
                    stored = {b.id for b in self.store.blocks_of_file(rel)}
                    maybe = stored if rel in notes else stored.intersection(left.get(rel, ()))
                    gone.update((key, rel) for key in sorted(maybe) if key not in held)
                done_notes += [rel] if rel in notes else []
                done_keys += left.get(rel, [])
            if gone:
                self.store.mark_deleted(gone)
                self.deleted(gone)
                for rel in sorted(set(gone.values())):
                    ids = sorted(key_block_id(bid) for bid, note in gone.items() if note == rel)
                    log.info("%s: %d block(s) marked deleted: %s", rel, len(ids), ", ".join(ids))
            if done_notes or done_keys:
                self.queue.settled(done_notes, done_keys, before=cutoff)
            self.unsettled = bool(self.queue.unsettled())
            return gone
