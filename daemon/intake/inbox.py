"""The inbox: exports dropped into a vault folder are imported, then archived.

Each entry of ``import.inbox`` (a file, a zip or a folder, dot names and ``*.error.txt`` aside)
is imported once it has been quiet (no change to it, or to anything in it, for the quiet period).
An entry that imported cleanly is moved to ``import.archive`` (a dot folder of the vault, so never
a note; a name already there gets `` (2)``, `` (3)`` …); nothing is ever deleted. An entry that
failed stays where it is with ``<name>.error.txt`` beside it saying why, and is tried again only
once it changes (it is newer than its error file). ``aclarai resync`` drains the inbox before its
pass; the daemon drains it on events in the folder, through :class:`InboxWatcher`.

A Markdown note is never an export: a ``.md`` file and a folder holding one are left where they
are, with no error file, and are synced and graded like every note of the vault. So are the
other files Obsidian shows in a vault (canvases, bases, images, audio, video, PDFs), none of which
is an export, in case ``import.inbox`` names a folder of the user's. An error file an earlier
version left beside such a file is removed (it is ours, and says something false).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from aclarai.daemon.config import Config
from aclarai.daemon.intake.importer import ImportLimits, ImportReport, import_limits, import_sources
from aclarai.daemon.vault.writer import create_if_absent, sha256_bytes, write_if_unchanged
from aclarai.parsers import WriteConflict
from aclarai.parsers.exports import render as tier1

log = logging.getLogger(__name__)

ERROR_SUFFIX = ".error.txt"
VAULT_FILE_SUFFIXES = frozenset(
    {
        *(".md", ".canvas", ".base", ".pdf"),
        *(".avif", ".bmp", ".gif", ".jpeg", ".jpg", ".png", ".svg", ".webp", ".heic"),
        *(".flac", ".m4a", ".mp3", ".ogg", ".wav", ".webm", ".3gp", ".mkv", ".mov", ".mp4", ".ogv"),
    }
)
"""The files Obsidian shows in a vault (notes and their attachments): never an export."""


@dataclass(frozen=True, slots=True)
class Inbox:
    """Where the inbox, the archive and the imported notes are, and how to import."""

    folder: Path
    archive: Path
    vault_root: Path
    notes_folder: str
    limits: ImportLimits


def inbox_for(config: Config, vault_root: Path) -> Inbox | None:
    """The vault's inbox, or ``None`` when ``import.inbox`` is off."""
    settings = config.import_
    if not settings.inbox:
        return None
    return Inbox(
        vault_root / settings.inbox,
        vault_root / settings.archive,
        vault_root,
        settings.folder,
        import_limits(config),
    )


def drain_inbox(
    inbox: Inbox, *, quiet_s: float = 0.0, dry_run: bool = False
) -> tuple[ImportReport, bool]:
    """Import every quiet entry of the inbox; return the report and whether some were too fresh.

    Entries still changing (modified less than ``quiet_s`` ago) are left for a later drain.
    With ``dry_run`` the report says what a drain would do, and nothing is written or moved.
    """
    report = ImportReport(dry_run=dry_run)
    waiting = False
    if not inbox.folder.is_dir():
        return report, waiting
    started = time.monotonic()
    for entry in sorted(inbox.folder.iterdir()):
        if entry.name.startswith(".") or entry.name.endswith(ERROR_SUFFIX) or entry.is_symlink():
            continue
        if not (entry.is_dir() or entry.is_file()):
            # A named pipe, socket or device: reading it would block, or never end.
            log.warning("inbox: skipping %s: not a regular file", entry.name)
            continue
        error_file = entry.with_name(entry.name + ERROR_SUFFIX)
        if is_vault_file(entry):
            if error_file.exists() and not dry_run:
                _remove(error_file)
            continue
        changed = _last_change_s(entry)
        if time.time() - changed < quiet_s:
            waiting = True
            continue
        if error_file.exists() and error_file.stat().st_mtime >= changed:
            continue
        one = import_sources(
            [entry], inbox.vault_root, inbox.notes_folder, limits=inbox.limits, dry_run=dry_run
        )
        report.add(one)
        if dry_run:
            continue
        if one.errors:
            _write_error(error_file, one.errors)
            log.warning("inbox: %s not imported: %s", entry.name, one.errors[0])
            continue
        archived = _archive(entry, inbox.archive)
        if error_file.exists():
            error_file.unlink()
        log.info(
            "inbox: imported %s (%d note(s) created, %d extended); moved to %s",
            entry.name,
            one.created,
            one.extended,
            archived,
        )
    report.elapsed_s = time.monotonic() - started
    return report, waiting


def is_vault_file(entry: Path) -> bool:
    """Whether an inbox entry is the user's: a note or attachment, or a folder holding a note."""
    if not entry.is_dir():
        return entry.suffix.lower() in VAULT_FILE_SUFFIXES
    for _folder, dirs, files in os.walk(entry):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if any(name.lower().endswith(".md") for name in files):
            return True
    return False


def _remove(error_file: Path) -> None:
    try:
        error_file.unlink()
    except OSError as exc:
        log.warning("inbox: cannot remove %s: %s", error_file, exc)
    else:
        log.info("inbox: removed %s: its note is a note, not an export", error_file.name)


def _last_change_s(entry: Path) -> float:
    """The newest mtime of the entry or, for a folder, of anything in it."""
    newest = entry.stat().st_mtime
    if entry.is_dir():
        for folder, _dirs, files in os.walk(entry):
            for name in files:
                try:
                    newest = max(newest, (Path(folder) / name).stat().st_mtime)
                except OSError:
                    continue
    return newest


def _archive(entry: Path, archive: Path) -> Path:
    archive.mkdir(parents=True, exist_ok=True)
    number = 1
    while True:
        target = archive / (entry.name if number == 1 else tier1.numbered_name(entry.name, number))
        if not target.exists():
            # rename would silently replace a file that appeared meanwhile; link refuses.
            if entry.is_dir():
                os.rename(entry, target)
                return target
            try:
                os.link(entry, target)
            except FileExistsError:
                number += 1
                continue
            entry.unlink()
            return target
        number += 1


def _write_error(path: Path, errors: list[str]) -> None:
    data = ("\n".join(errors) + "\n").encode("utf-8")
    try:
        if path.exists():
            write_if_unchanged(path, data, expected_sha256=sha256_bytes(path.read_bytes()))
        else:
            create_if_absent(path, data)
    except (OSError, WriteConflict) as exc:
        log.warning("inbox: cannot write %s: %s", path, exc)


class _Poke(FileSystemEventHandler):
    def __init__(self, watcher: InboxWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in ("opened", "closed_no_write"):
            self.watcher.poke()


class InboxWatcher:
    """Says when the inbox should be drained: on start, then once quiet after each event.

    A watchdog observer on the inbox folder (polling when asked) records the time of the last
    event; :meth:`due` is true once that is ``quiet_s`` old. A folder that does not exist yet is
    looked for again every ``quiet_s`` and watched once it appears.
    """

    def __init__(self, folder: Path, *, quiet_s: float, polling: bool = False) -> None:
        self.folder = folder
        self.quiet_s = quiet_s
        self.polling = polling
        self._lock = threading.Lock()
        # Due at once: what arrived while the daemon was down is drained on its first check.
        self._last_event: float | None = time.monotonic() - quiet_s
        self._observer: BaseObserver | None = None
        self._next_look = 0.0

    def poke(self, now: float | None = None) -> None:
        with self._lock:
            self._last_event = time.monotonic() if now is None else now

    def due(self, now: float) -> bool:
        """Whether a drain is due now; true once per quiet spell."""
        if self._observer is None and now >= self._next_look:
            self._next_look = now + max(self.quiet_s, 1.0)
            self._start()
        with self._lock:
            if self._last_event is None or now - self._last_event < self.quiet_s:
                return False
            self._last_event = None
            return True

    def _start(self) -> None:
        if not self.folder.is_dir():
            return
        observer: BaseObserver = PollingObserver(timeout=1.0) if self.polling else Observer()
        observer.schedule(_Poke(self), str(self.folder), recursive=True)
        observer.daemon = True
        try:
            observer.start()
        except OSError as exc:
            log.warning("cannot watch the inbox %s: %s", self.folder, exc)
            return
        self._observer = observer

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=2.0)
            self._observer = None
