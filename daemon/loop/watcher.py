"""Watching a vault: filesystem events in, settled note paths out.

A watchdog observer (inotify, or polling for network drives) reports raw events from its own
thread; they are reduced to "something happened to this note path" and handed to a
:class:`Debouncer`, per file. A note is released only after no event for the quiet period *and*
two identical looks at its file (inode, size, mtime and ctime, ``settle_s`` apart), so the daemon
never works on a note the user is still typing into (Obsidian saves every few seconds while
typing). Nothing here reads a note: the note-sync path reads it once, after it settled. A released
note whose file looks exactly as the daemon's own last write left it is dropped: own writes are
recognised by that file signature, never by event type, so a rename of our temp file over the note
looks like any other edit until it is compared.

Event kinds do not matter either: a create, modify, delete or either end of a move all mean "look
at this path again". After the quiet period the path either holds a note file
(:attr:`Changes.touched`) or not (:attr:`Changes.gone`); an editor that saves by writing a temp
file and renaming it over the note therefore ends up as one touch of the note, and a move as a
gone path plus a touched one, which the store turns back into a move by block id.
"""

from __future__ import annotations

import logging
import os
import queue
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from aclarai.daemon.config import WatchSettings
from aclarai.daemon.vault.notes import Vault

log = logging.getLogger(__name__)

NOT_A_NOTE = "!not-a-note:"
"""Prefix of the signature of a note path that holds a folder, a FIFO, a socket or a symlink: never
read, never a note. The reason follows when it deserves a log line (a symlink loop …)."""

_IGNORED_EVENTS = frozenset({"opened", "closed_no_write", "attrib"})
"""Reads and metadata changes never change a note's bytes."""


TICK_S = 0.05
"""How often pending notes are checked; also the longest a batch wait blocks."""


def settle_s(options: WatchSettings) -> float:
    """Least time between the two looks that must agree."""
    return min(0.1, options.quiet_period_s / 3)


@dataclass(frozen=True, slots=True)
class Changes:
    """What settled since the last batch (both may be empty: a timeout tick)."""

    touched: tuple[str, ...] = ()
    """Notes quiet for the quiet period, looked at twice alike, not our own write."""
    gone: tuple[str, ...] = ()
    """Note paths that hold no note file once quiet (deleted or moved away)."""
    settling: int = 0
    """Notes changed but not yet quiet: seen, and not yet handed over."""
    observing: bool = True
    """False once the observer's threads have died: no edit reaches the daemon any more."""


def file_signature(st: os.stat_result) -> str:
    """What two looks at a file compare: any write or rename changes it."""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


class OwnWrites:
    """The file signature of the last write the daemon made to each note (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._signatures: dict[str, str] = {}

    def remember(self, rel: str, st: os.stat_result) -> None:
        """Record a write the daemon made, from the note's stat right after it (the consumer's
        ``on_write`` hook); the watcher settles a note only after the quiet period, so this
        always comes before the write's own events are looked at."""
        with self._lock:
            self._signatures[rel] = file_signature(st)

    def is_own(self, rel: str, signature: str | None) -> bool:
        with self._lock:
            return signature is not None and self._signatures.get(rel) == signature


@dataclass(slots=True)
class _Pending:
    first_event: float
    last_event: float
    signature: str | None = None
    looked_at: float | None = None
    """When ``signature`` was taken; ``None`` while no look happened since the last event."""
    warned: bool = False


@dataclass
class Debouncer:
    """Per-file quiet periods and the two-looks rule, on an injected clock (pure bookkeeping).

    ``look`` returns a note's file signature, or ``None`` when the path holds no note.
    """

    options: WatchSettings
    look: Callable[[str], str | None]
    _pending: dict[str, _Pending] = field(default_factory=dict)

    def touch(self, rel: str, now: float) -> None:
        """Something happened to ``rel``: restart its quiet period and forget its last look."""
        entry = self._pending.get(rel)
        if entry is None:
            self._pending[rel] = _Pending(first_event=now, last_event=now)
            return
        entry.last_event = now
        entry.looked_at = None

    def __len__(self) -> int:
        return len(self._pending)

    def step(self, now: float) -> list[tuple[str, str | None]]:
        """Release the notes that settled, as ``(rel, signature)`` pairs in the order they
        changed.

        The first look happens ``settle_s`` after the last event, the second once the quiet
        period is over; when the two differ the note changed without an event we saw, and it
        needs another ``settle_s`` of looking the same.
        """
        settle = settle_s(self.options)
        ready: list[tuple[str, str | None]] = []
        for rel, entry in list(self._pending.items()):
            self._warn_if_busy(rel, entry, now)
            quiet_for = now - entry.last_event
            if entry.looked_at is None:
                if quiet_for >= settle:
                    entry.signature, entry.looked_at = self.look(rel), now
                continue
            if quiet_for < self.options.quiet_period_s or now - entry.looked_at < settle:
                continue
            signature = self.look(rel)
            if signature == entry.signature:
                del self._pending[rel]
                ready.append((rel, signature))
            else:
                entry.signature, entry.looked_at = signature, now
        return ready

    def _warn_if_busy(self, rel: str, entry: _Pending, now: float) -> None:
        if not entry.warned and now - entry.first_event >= self.options.max_wait_s:
            entry.warned = True
            log.warning(
                "%s has kept changing for %.0f s; waiting for %.1f s of quiet before syncing it",
                rel,
                now - entry.first_event,
                self.options.quiet_period_s,
            )


def note_signature(vault: Vault, rel: str) -> str | None:
    """The file signature of the note at ``rel``; ``None`` when no file is there any more.

    Unreadable files settle like any other, and the note-sync path logs why it cannot read them.
    """
    path = vault.root / rel
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"!{exc.errno}"
    if stat.S_ISLNK(st.st_mode):
        return NOT_A_NOTE + (vault.symlink_problem(path) or "")
    if not stat.S_ISREG(st.st_mode):
        return NOT_A_NOTE + "not a regular file (a folder, FIFO or socket)"
    return file_signature(st)


class _Handler(FileSystemEventHandler):
    """Runs on the observer's thread: turns events into ``("file" | "dir", rel)`` items."""

    def __init__(self, vault: Vault, sink: queue.SimpleQueue[tuple[str, str]]) -> None:
        self.vault = vault
        self.sink = sink

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _IGNORED_EVENTS:
            return
        if event.is_directory and event.event_type == "modified":
            return
        kind = "dir" if event.is_directory else "file"
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if not raw:
                continue
            path = Path(os.fsdecode(raw))
            rel = self.vault.rel(path)
            if rel is None or rel == ".":
                continue
            if kind == "file" and not self.vault.is_note_path(rel):
                continue
            if kind == "dir" and any(part.startswith(".") for part in rel.split("/")):
                continue
            self.sink.put((kind, rel))


class VaultWatcher:
    """A running observer on a vault plus the debouncer that settles its events.

    ``known_notes(prefix)`` lists the notes the store knows under a folder: a folder moved out of
    the vault produces one event for the folder and none for the notes inside it.
    """

    def __init__(
        self,
        vault: Vault,
        options: WatchSettings,
        *,
        own_writes: OwnWrites | None = None,
        known_notes: Callable[[str], Iterable[str]] | None = None,
    ) -> None:
        self.vault = vault
        self.options = options
        self.own_writes = own_writes or OwnWrites()
        self.known_notes = known_notes or (lambda prefix: ())
        self.debouncer = Debouncer(options, lambda rel: note_signature(vault, rel))
        self._events: queue.SimpleQueue[tuple[str, str]] = queue.SimpleQueue()
        self._observer: BaseObserver | None = None

    def start(self) -> None:
        """Start observing; fall back to polling when inotify runs out of watches."""
        try:
            self._observer = self._start_observer(self.options.polling)
        except OSError as exc:
            if self.options.polling:
                raise
            log.warning(
                "inotify failed (%s); falling back to polling every %.1f s. Raise "
                "fs.inotify.max_user_watches (see docs/daemon.md) or set watch.polling: true",
                exc,
                self.options.polling_interval_s,
            )
            self._observer = self._start_observer(True)

    def _start_observer(self, polling: bool) -> BaseObserver:
        observer: BaseObserver = (
            PollingObserver(timeout=self.options.polling_interval_s) if polling else Observer()
        )
        observer.schedule(_Handler(self.vault, self._events), str(self.vault.root), recursive=True)
        observer.daemon = True
        observer.start()
        log.info("watching %s (%s)", self.vault.root, "polling" if polling else "inotify")
        return observer

    def observing(self) -> bool:
        """Whether the observer and its emitters still run (a thread that died takes no event)."""
        observer = self._observer
        return (
            observer is not None
            and observer.is_alive()
            and all(emitter.is_alive() for emitter in observer.emitters)
        )

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=2.0)
            self._observer = None

    def touch(self, rel: str, now: float | None = None) -> None:
        """Treat ``rel`` as changed (also used for notes whose processing must be retried)."""
        self.debouncer.touch(rel, time.monotonic() if now is None else now)

    def next_changes(self, timeout_s: float) -> Changes:
        """Wait up to ``timeout_s`` for events, then return what settled (maybe nothing)."""
        try:
            first = self._events.get(timeout=timeout_s) if len(self.debouncer) == 0 else None
        except queue.Empty:
            first = None
        if len(self.debouncer) and first is None:
            time.sleep(min(timeout_s, TICK_S))
        now = time.monotonic()
        if first is not None:
            self._take(*first, now)
        while True:
            try:
                self._take(*self._events.get_nowait(), now)
            except queue.Empty:
                break
        touched: list[str] = []
        gone: list[str] = []
        for rel, signature in self.debouncer.step(now):
            if signature is None:
                gone.append(rel)
            elif signature.startswith(NOT_A_NOTE):
                reason = signature[len(NOT_A_NOTE) :]
                log.log(
                    logging.WARNING if reason else logging.DEBUG,
                    "%s is %s; ignored",
                    rel,
                    reason or "a symlink inside the vault (its target is the note)",
                )
                gone.append(rel)
            elif self.own_writes.is_own(rel, signature):
                log.debug("%s: our own write, nothing to do", rel)
            else:
                touched.append(rel)
        return Changes(tuple(touched), tuple(gone), len(self.debouncer), self.observing())

    def _take(self, kind: str, rel: str, now: float) -> None:
        if kind == "file":
            self.debouncer.touch(rel, now)
            return
        for note in (*self.known_notes(rel + "/"), *self._notes_on_disk(rel)):
            self.debouncer.touch(note, now)

    def _notes_on_disk(self, rel: str) -> list[str]:
        found: list[str] = []
        for folder, dirs, files in os.walk(self.vault.root / rel):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            base = Path(folder)
            for name in files:
                note = self.vault.rel(base / name)
                if note is not None and self.vault.is_note_path(note):
                    found.append(note)
        return found


def watch_vault(
    vault: Vault,
    options: WatchSettings,
    *,
    stop_event: threading.Event,
    own_writes: OwnWrites | None = None,
    known_notes: Callable[[str], Iterable[str]] | None = None,
) -> Iterator[Changes]:
    """Yield settled changes of ``vault`` until ``stop_event`` is set.

    Yields an empty :class:`Changes` at least every :data:`TICK_S` seconds while notes are
    pending and every quarter second otherwise, so the caller can do periodic work.
    """
    watcher = VaultWatcher(vault, options, own_writes=own_writes, known_notes=known_notes)
    watcher.start()
    try:
        while not stop_event.is_set():
            yield watcher.next_changes(0.25)
    finally:
        watcher.stop()
