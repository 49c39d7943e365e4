"""The daemon's watch path: the notes the watcher found settled, synced to the graph.

Each tick of the watch loop hands the watcher's changes to :meth:`WatchPath.apply`. The notes
touched are synced (those in ``adopt.folders`` adopted first), the adopted notes a sync found in
need adopted again (:func:`~aclarai.daemon.intake.adopt.readopt`), the notes gone forgotten,
and the blocks that left their notes ``watch.delete_grace_s`` ago and turned up nowhere marked
deleted (:meth:`~aclarai.daemon.vault.notesync.NoteSync.settle`). When the store or the disk
fails, the changes are kept and tried again after :data:`SYNC_RETRY_S`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from aclarai.daemon.config import Config
from aclarai.daemon.intake.adopt import adopt_files, readopt
from aclarai.daemon.loop.liveness import Liveness
from aclarai.daemon.loop.watcher import Changes, OwnWrites
from aclarai.daemon.vault.bounds import VAULT_ITSELF
from aclarai.daemon.vault.notesync import NoteSync
from aclarai.parsers import AclaraiError

log = logging.getLogger(__name__)

SYNC_RETRY_S = 2.0
LOCK_WAIT_S = 0.2


class WatchPath:
    """Syncs the notes the watcher saw change; ``queued()`` hears of a sync that queued blocks
    to grade, ``deleted()`` of blocks marked deleted (the dashboard shows them no more)."""

    def __init__(
        self,
        config: Config,
        notes: NoteSync,
        own_writes: OwnWrites,
        liveness: Liveness,
        *,
        queued: Callable[[], None],
        deleted: Callable[[], None],
    ) -> None:
        self.config = config
        self.notes = notes
        self.vault = notes.vault
        self.own_writes = own_writes
        self.liveness = liveness
        self.queued = queued
        self.deleted = deleted
        self.adopt_prefixes = tuple(
            "" if f == VAULT_ITSELF else f"{f}/" for f in config.adopt.folders
        )
        self._touched: set[str] = set()
        self._gone: set[str] = set()
        self._retry_at = 0.0

    @property
    def pending(self) -> bool:
        """Whether changes wait to be synced."""
        return bool(self._touched or self._gone)

    def apply(self, changes: Changes) -> None:
        for rel in changes.touched:
            self._gone.discard(rel)
            self._touched.add(rel)
        for rel in changes.gone:
            self._touched.discard(rel)
            self._gone.add(rel)
        if changes.touched or changes.gone:
            self.liveness.looked()
        now = time.monotonic()
        if not (self.pending or self.notes.unsettled) or now < self._retry_at:
            return
        # A full reconcile may hold the sync lock for a while; keep the changes for later.
        if not self.notes.lock.acquire(timeout=LOCK_WAIT_S):
            return
        try:
            self._sync()
        except (AclaraiError, OSError) as exc:
            log.warning("could not sync changed notes (%s); retrying in %.0f s", exc, SYNC_RETRY_S)
            self.liveness.error(f"could not sync changed notes: {exc}")
            self._retry_at = now + SYNC_RETRY_S
        except Exception:
            # A bug, not a passing state: retrying would log it on every tick. The notes are
            # dropped here and the next reconcile syncs them.
            log.exception(
                "could not sync %s; left to the next reconcile", ", ".join(sorted(self._touched))
            )
            self._touched.clear()
            self._gone.clear()
        finally:
            self.notes.lock.release()

    def _sync(self) -> None:
        gone = sorted(self._gone)
        notes = []
        for rel in sorted(self._touched):
            note = self.vault.note(rel)
            if note is None:
                gone.append(rel)
            else:
                notes.append(note)
        adopting = [n.path for n in notes if n.rel.startswith(self.adopt_prefixes)]
        if adopting:
            adopt_files(
                adopting,
                on_write=self._written,
                root=self.vault.root,
                dashboard=self.config.dashboard.path,
                store=self.notes.store,
            )
            notes = [n for n in (self.vault.note(n.rel) for n in notes) if n is not None]
        if notes:
            report = self.notes.sync_notes(notes)
            for rel in sorted(report.dirty_files):
                log.info("%s changed: its dirty blocks are queued", rel)
            readopted = readopt(
                self.notes,
                report,
                new_paragraphs=self.config.adopt.new_paragraphs,
                dashboard=self.config.dashboard.path,
                on_write=self._written,
            )
            if report.dirty_blocks or readopted:
                self.queued()
        if gone:
            lost = self.notes.forget(gone)
            for rel in gone:
                count = sum(1 for f in lost.values() if f == rel)
                log.log(
                    logging.INFO if count else logging.DEBUG,
                    "%s is gone; %d block(s) will be marked deleted in %.0f s unless they turn up "
                    "in another note",
                    rel,
                    count,
                    self.config.watch.delete_grace_s,
                )
        self._touched.clear()
        self._gone.clear()
        if self.notes.settle(grace_s=self.config.watch.delete_grace_s):
            self.deleted()

    def _written(self, path: Path, st: os.stat_result) -> None:
        rel = self.vault.rel(path)
        if rel is not None:
            self.own_writes.remember(rel, st)
