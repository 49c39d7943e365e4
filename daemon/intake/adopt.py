"""``aclarai adopt``: give the paragraphs and list items of ordinary notes block ids.

The text work is :func:`aclarai.parsers.adopt_note`; this module finds the notes (``.md`` files
of the paths given, dot folders skipped), reads them, and writes the adopted text back through
:func:`aclarai.daemon.vault.writer.write_if_unchanged`, so a note the user changed meanwhile is left
alone (reported, never overwritten). ``adopt.folders`` names vault folders whose notes
``aclarai resync`` and the daemon adopt before syncing them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aclarai.daemon.vault.writer import sha256_bytes, write_if_unchanged
from aclarai.parsers import ParseError, WriteConflict, adopt_note, decode_note

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


def iter_markdown(paths: Iterable[Path]) -> Iterator[Path]:
    """The ``.md`` files of ``paths`` (files as given, folders walked without dot folders)."""
    for path in paths:
        if path.is_dir():
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if name.endswith(".md") and not name.startswith("."):
                        yield Path(folder) / name
        else:
            yield path


def adopt_files(
    paths: Iterable[Path],
    *,
    dry_run: bool = False,
    on_write: Callable[[Path, os.stat_result], None] | None = None,
) -> AdoptReport:
    """Adopt every note of ``paths``; ``on_write(path, stat)`` hears of each note written."""
    report = AdoptReport(dry_run=dry_run)
    for path in iter_markdown(paths):
        report.notes_seen += 1
        try:
            data = path.read_bytes()
            result = adopt_note(decode_note(data, path=str(path)), salt=str(path.resolve()))
            if not result.block_ids:
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


def format_adopt_report(report: AdoptReport) -> str:
    would = " (would be)" if report.dry_run else ""
    lines = [
        f"notes seen      {report.notes_seen}",
        f"notes adopted   {report.notes_adopted}{would}",
        f"blocks marked   {report.blocks}{would}",
        f"errors          {len(report.errors)}",
    ]
    if report.dry_run:
        lines += [f"  {path}:{line}: {block_id}" for path, line, block_id in report.planned]
    return "\n".join(lines)
