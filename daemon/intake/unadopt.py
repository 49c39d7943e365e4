"""``aclarai unadopt``: take out of ordinary notes exactly what adopt and the scores put in.

The text work is :func:`aclarai.parsers.marks.unadopt_note` (id comments, the ``^blk-`` anchors
adopt added, ``block=start`` lines, score comments; nothing else, byte for byte); this module
finds the notes as adopt does, and writes each through
:func:`aclarai.daemon.vault.writer.write_if_unchanged` (atomic, and never over a note the user
changed meanwhile). Conversation notes are refused, one line each.

The graph is not touched here: the next ``resync`` (or the daemon, at once) finds the notes
without blocks and marks their blocks deleted, as when a paragraph is deleted. A folder still
listed in ``adopt.folders`` would be adopted again by that resync, so it is named on stderr.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from aclarai.daemon.intake.adopt import iter_markdown
from aclarai.daemon.intake.scope import vault_root_of
from aclarai.daemon.vault.writer import sha256_bytes, write_if_unchanged
from aclarai.parsers import ParseError, WriteConflict, decode_note, unadopt_note

log = logging.getLogger(__name__)


@dataclass
class UnadoptReport:
    notes_seen: int = 0
    notes_changed: int = 0
    blocks: int = 0
    lines_removed: int = 0
    changed: list[tuple[Path, int]] = field(default_factory=list)
    """(note, blocks taken out) of every note changed (or, on a dry run, that would be)."""
    errors: list[str] = field(default_factory=list)
    dry_run: bool = False


def unadopt_files(paths: Iterable[Path], *, dry_run: bool = False) -> UnadoptReport:
    """Take adopt's marks out of every note of ``paths``."""
    report = UnadoptReport(dry_run=dry_run)
    for path in iter_markdown(paths):
        report.notes_seen += 1
        try:
            data = path.read_bytes()
            result = unadopt_note(decode_note(data, path=str(path)))
            if not result.lines_removed:
                continue
            if not dry_run:
                new = result.text.encode("utf-8")
                write_if_unchanged(path, new, expected_sha256=sha256_bytes(data))
        except (OSError, ParseError, WriteConflict) as exc:
            message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            report.errors.append(f"{path}: {message}")
            log.warning("unadopt: %s", report.errors[-1])
            continue
        report.notes_changed += 1
        report.blocks += len(result.block_ids)
        report.lines_removed += result.lines_removed
        report.changed.append((path, len(result.block_ids)))
    return report


def folders_adopting(paths: Iterable[Path], folders: Iterable[str]) -> list[Path]:
    """The ``adopt.folders`` that hold some of ``paths`` or lie inside them, for any folder
    above a path taken as the vault: resync would adopt their notes again."""
    found: list[Path] = []
    for path in paths:
        resolved = path.resolve()
        vault = vault_root_of(path)
        for root in (resolved, *resolved.parents):
            for folder in folders:
                if folder.strip("/") in ("", ".") and root != vault:
                    # The whole vault: only the one the path lies in, not every folder above.
                    continue
                adopting = (root / folder).resolve()
                overlaps = resolved.is_relative_to(adopting) or adopting.is_relative_to(resolved)
                if overlaps and adopting not in found and adopting.is_dir():
                    found.append(adopting)
    return found


def format_unadopt_report(report: UnadoptReport) -> str:
    would = " (would be)" if report.dry_run else ""
    lines = [
        f"notes seen      {report.notes_seen}",
        f"notes restored  {report.notes_changed}{would}",
        f"blocks removed  {report.blocks}{would}",
        f"lines removed   {report.lines_removed}{would}",
        f"errors          {len(report.errors)}",
    ]
    if report.dry_run:
        lines += [f"  {path}: {count} block(s)" for path, count in report.changed]
    return "\n".join(lines)
