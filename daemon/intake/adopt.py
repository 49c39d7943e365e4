"""``aclarai adopt``: give the paragraphs and list items of ordinary notes block ids.

The text work is :func:`aclarai.parsers.adopt_note`; this module finds the notes (``.md`` files
of the paths given, dot folders skipped), reads them, and writes the adopted text back through
:func:`aclarai.daemon.vault.writer.write_if_unchanged`, so a note the user changed meanwhile is left
alone (reported, never overwritten). ``adopt.folders`` names vault folders whose notes
``aclarai resync`` and the daemon adopt before syncing them; an adopted note anywhere is adopted
again after a sync finds in it a paragraph typed since (unless ``adopt.new_paragraphs`` is off)
or an emptied block, whose lines go (:func:`readopt`). A vault's template folders and the
dashboard note are never adopted (:mod:`.scope`); ``aclarai unadopt`` undoes it all
(:mod:`.unadopt`).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aclarai.daemon.intake.scope import AdoptScope, scope_for, vault_root_of
from aclarai.daemon.vault.notesync import NoteSync, SyncReport
from aclarai.daemon.vault.writer import sha256_bytes, write_if_unchanged
from aclarai.graph import GraphStore
from aclarai.parsers import (
    ParseError,
    WriteConflict,
    adopt_note,
    decode_note,
    drop_emptied,
    scan_note,
)

log = logging.getLogger(__name__)


@dataclass
class AdoptReport:
    notes_seen: int = 0
    notes_adopted: int = 0
    blocks: int = 0
    planned: list[tuple[Path, int, str]] = field(default_factory=list)
    """(note, line, block id) of every block made (or, on a dry run, that would be)."""
    errors: list[str] = field(default_factory=list)
    dry_run: bool = False
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    """(note, why) of every note left alone: templates, aclarai's own notes."""


def iter_markdown(paths: Iterable[Path]) -> Iterator[Path]:
    """The ``.md`` notes of ``paths`` (files as given, folders walked without dot folders).

    Only regular files are notes, as in the vault's own walk: a symlink is skipped (its target
    is a note where it lies, and one leading out of the vault is never written), and so is a
    named pipe, socket or device, which reading would block on; each with one log line. A path
    that does not exist is given back, for its reader to report.
    """
    for path in paths:
        if path.is_dir():
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    note = Path(folder) / name
                    if name.endswith(".md") and not name.startswith(".") and _regular(note):
                        yield note
        elif _regular(path):
            yield path


def _regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (or missing); logs why it is skipped otherwise."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return True
    except OSError as exc:
        log.warning("skipping %s: %s", path, exc.strerror or exc)
        return False
    if stat.S_ISREG(mode):
        return True
    kind = "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
    log.warning("skipping %s: %s, never adopted or written", path, kind)
    return False


def adopt_files(
    paths: Iterable[Path],
    *,
    dry_run: bool = False,
    on_write: Callable[[Path, os.stat_result], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    root: Path | None = None,
    dashboard: str | None = None,
    store: GraphStore | None = None,
) -> AdoptReport:
    """Adopt every note of ``paths``; ``on_write(path, stat)`` hears of each note written,
    ``progress(done, total)`` of each note read.

    Notes of a vault's template folders and its dashboard (``dashboard``, vault-relative) are
    left alone (see :mod:`.scope`); the vault is ``root``, else the one each path given lies
    in (see :func:`.scope.vault_root_of`). With the vault's ``store``, a new id is never one
    the graph holds live (see :func:`ids_in_use`).
    """
    report = AdoptReport(dry_run=dry_run)
    notes = [
        (note, root if root is not None else vault_root_of(given))
        for given in paths
        for note in iter_markdown([given])
    ]
    scopes: dict[Path, AdoptScope] = {}
    in_use = None if store is None else ids_in_use(store)
    for path, vault in notes:
        report.notes_seen += 1
        if progress is not None:
            progress(report.notes_seen, len(notes))
        if vault not in scopes:
            scopes[vault] = scope_for(vault, dashboard)
        reason = scopes[vault].reason_to_skip(path)
        if reason is not None:
            report.skipped.append((path, reason))
            continue
        try:
            data = path.read_bytes()
            text = decode_note(data, path=str(path))
            result = adopt_note(text, salt=str(path.resolve()), in_use=in_use)
            if result.text == text:
                continue
            new = result.text.encode("utf-8")
            if not dry_run:
                st = write_if_unchanged(path, new, expected_sha256=sha256_bytes(data))
                if on_write is not None:
                    on_write(path, st)
        except (OSError, ParseError, WriteConflict) as exc:
            message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            report.errors.append(f"{path}: {message}")
            log.warning("adopt: %s", report.errors[-1])
            continue
        report.notes_adopted += 1
        report.blocks += len(result.block_ids)
        report.planned += [
            (path, line, block_id)
            for line, block_id in zip(result.lines, result.block_ids, strict=True)
        ]
    return report


def ids_in_use(store: GraphStore) -> Callable[[Sequence[str]], set[str]]:
    """The ids among those asked that the graph holds live in some note, in one call: a new
    block must not take one, as a block that moved there with its id may come back. (One a
    deleted block of the note had would only restore it, to be graded again.)"""

    def in_use(block_ids: Sequence[str]) -> set[str]:
        return {block.block_id for block in store.live_blocks_with_ids(block_ids)}

    return in_use


def readopt(
    notes: NoteSync,
    report: SyncReport,
    *,
    new_paragraphs: bool = True,
    dashboard: str | None = None,
    on_write: Callable[[Path, os.stat_result], None] | None = None,
) -> int:
    """Adopt again the adopted notes a sync found in need (``report.emptied``, and with
    ``new_paragraphs`` ``report.unmarked``): an emptied block's lines go, and each paragraph
    or list item typed since gets its id (never in a template folder or the dashboard, see
    :mod:`.scope`); then sync them again. Returns how many notes were written.

    A note changed meanwhile, or one whose Markdown adopt cannot mark, is left as it is with
    one log line: the next sync of it tries again.
    """
    rels = set(report.emptied)
    if new_paragraphs:
        rels.update(report.unmarked)
    if not rels:
        return 0
    scope = scope_for(notes.vault.root, dashboard)
    in_use = ids_in_use(notes.store)
    written: list[str] = []
    for rel in sorted(rels):
        note = notes.vault.note(rel)
        if note is None:
            continue
        try:
            content = notes.vault.read(note)
            if new_paragraphs and scope.reason_to_skip(note.path) is None:
                text = adopt_note(content.text, salt=str(note.path.resolve()), in_use=in_use).text
            else:
                text = drop_emptied(content.text, scan_note(content.text))
            if text == content.text:
                continue
            st = write_if_unchanged(note.path, text.encode("utf-8"), expected_sha256=content.sha256)
        except (OSError, ParseError, WriteConflict) as exc:
            log.warning("%s: not adopted again for now: %s", rel, exc)
            continue
        if on_write is not None:
            on_write(note.path, st)
        log.info("%s: adopted again (new paragraphs given ids, emptied blocks taken out)", rel)
        written.append(rel)
    again = [note for note in map(notes.vault.note, written) if note is not None]
    if again:
        notes.sync_notes(again)
    return len(written)


def format_adopt_report(report: AdoptReport) -> str:
    would = " (would be)" if report.dry_run else ""
    lines = [
        f"notes seen      {report.notes_seen}",
        f"notes adopted   {report.notes_adopted}{would}",
        f"blocks marked   {report.blocks}{would}",
        f"notes skipped   {len(report.skipped)} (templates, aclarai's own notes)",
        f"errors          {len(report.errors)}",
    ]
    if report.dry_run:
        lines += [f"  {path}:{line}: {block_id}" for path, line, block_id in report.planned]
        lines += [f"  {path}: skipped, {why}" for path, why in report.skipped]
    return "\n".join(lines)
