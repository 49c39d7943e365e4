"""``aclarai import``: chat exports (files, folders, zips) in, one Tier 1 note per conversation out.

Each source is read and parsed whole before any note is written for it, so a malformed,
truncated, huge or non-UTF-8 export fails alone, with one error naming the file and what is
wrong, and leaves nothing of itself in the vault; the other sources are still imported. A folder
or zip is first offered whole to the readers (a Slack workspace); otherwise each of its files is
detected on its own, and files no reader claims are skipped. Zips are opened defensively (see
:mod:`aclarai.daemon.intake.export_files`): a zip bomb or a member escaping with ``../`` fails
the whole zip before anything is inflated.

Notes are written one at a time through :mod:`aclarai.daemon.vault.writer` (created with
``create_if_absent``, extended with ``write_if_unchanged``), so a crash leaves whole notes only.
Imports are idempotent and additive: the notes of the import folder are recognised by the
``source`` header (format, conversation key and part, see :mod:`aclarai.parsers.exports.render`),
read by their header lines only; a conversation already there gets only its new messages
appended, or nothing at all. A conversation whose note would be over ``vault.max_file_mb`` is
written as parts under it (:mod:`aclarai.parsers.exports.parts`).

Memory: a reader gets a whole file's bytes (capped by ``import.max_file_mb``) and returns its
conversations, so the peak is about the largest file plus its parsed conversations (a few times
its size; ``benchmarks/import.py`` measures it); zip members and folder files are read one at a
time, only when a reader asks, and notes are rendered and written one at a time.
"""

from __future__ import annotations

import logging
import sys
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aclarai.daemon.config import Config
from aclarai.daemon.intake.export_files import (
    DEFAULT_LIMITS,
    MB,
    FolderFiles,
    ImportLimits,
    ZipFiles,
    read_capped,
)
from aclarai.daemon.progress import terminal_progress
from aclarai.daemon.vault.bounds import inside_vault
from aclarai.daemon.vault.writer import (
    create_if_absent,
    create_many,
    sha256_bytes,
    write_if_unchanged,
)
from aclarai.parsers import AclaraiError, ParseError, WriteConflict, decode_note
from aclarai.parsers.exports import (
    Conversation,
    ExportReader,
    detect,
    detect_bundle,
    reader_named,
    readers,
)
from aclarai.parsers.exports import parts as note_parts
from aclarai.parsers.exports import render as tier1

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
"""Called with (conversations done, conversations found so far)."""


def import_limits(config: Config) -> ImportLimits:
    settings = config.import_
    return ImportLimits(
        int(settings.max_file_mb * MB),
        int(settings.max_archive_mb * MB),
        settings.max_archive_members,
        settings.max_compression_ratio,
        int(config.vault.max_file_mb * MB),
    )


@dataclass
class ImportReport:
    """What one import run did (or, with ``dry_run``, would do)."""

    sources: int = 0
    sources_failed: int = 0
    conversations: int = 0
    created: int = 0
    extended: int = 0
    unchanged: int = 0
    messages: int = 0
    """Messages written as new blocks (created notes and appended ones)."""
    messages_read: int = 0
    """Messages the readers found in the conversations imported (written now, or before)."""
    edited_away: int = 0
    """Of those, the ones on branches the user edited away (ChatGPT): never written."""
    skipped: int = 0
    """Files of a folder or zip that no reader claims."""
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Vault-relative paths of the notes created or extended, in order."""
    elapsed_s: float = 0.0
    dry_run: bool = False

    @property
    def exit_status(self) -> int:
        """0 all imported, 1 some failed, 2 nothing could be done."""
        if not self.errors:
            return 0
        done = self.created + self.extended + self.unchanged
        return 1 if done or self.sources_failed < self.sources else 2

    def add(self, other: ImportReport) -> None:
        """Count ``other``'s work in this report too (one inbox drain, file by file)."""
        for name in ("sources", "sources_failed", "conversations", "created", "extended"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.unchanged += other.unchanged
        self.messages += other.messages
        self.messages_read += other.messages_read
        self.edited_away += other.edited_away
        self.skipped += other.skipped
        self.errors += other.errors
        self.notes += other.notes


def import_sources(
    sources: Sequence[Path],
    vault_root: Path,
    folder: str,
    *,
    limits: ImportLimits = DEFAULT_LIMITS,
    format_name: str | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    fallback: ExportReader | None = None,
) -> ImportReport:
    """Import every source into ``<vault_root>/<folder>``; see the module docstring.

    ``fallback`` reads a single file no reader claims (the model, with ``model.backend: llm``);
    without it such a file is an error naming the formats known.

    Raises:
        AclaraiError: the vault does not exist, the import folder escapes it, or
            ``format_name`` names no reader.
    """
    started = time.monotonic()
    if not vault_root.is_dir():
        raise AclaraiError(f"vault {vault_root} does not exist or is not a folder")
    forced = None
    if format_name is not None:
        forced = reader_named(format_name)
        if forced is None:
            raise AclaraiError(f"unknown format {format_name!r}; known: {_known()}")
    target = _import_folder(vault_root, folder)
    notes = _NoteIndex(vault_root, target, limits.max_note_bytes)
    report = ImportReport(dry_run=dry_run)
    for source in sources:
        report.sources += 1
        try:
            conversations, skipped = read_source(source, limits, forced, fallback)
        except (ParseError, OSError) as exc:
            report.sources_failed += 1
            report.errors.append(_describe(source, exc))
            log.debug("import of %s failed: %s", source, report.errors[-1])
            continue
        report.skipped += skipped
        report.conversations += len(conversations)
        for done, conversation in enumerate(conversations, 1):
            report.messages_read += conversation.read_count
            report.edited_away += conversation.edited_away
            if conversation.lost:
                report.errors.append(
                    f"{source}: {conversation.title!r}: {conversation.lost} of the messages "
                    "read could not be placed in the conversation and are not written"
                )
            try:
                notes.store(conversation, report, dry_run=dry_run)
            except (ParseError, WriteConflict, OSError) as exc:
                report.errors.append(f"{source}: {conversation.title!r}: {exc}")
            if progress is not None:
                progress(done, len(conversations))
        notes.flush(report)
    report.elapsed_s = time.monotonic() - started
    return report


def _known() -> str:
    return ", ".join(reader.name for reader in readers())


def _describe(source: Path, exc: Exception) -> str:
    if isinstance(exc, OSError):
        return f"{source}: cannot read: {exc.strerror or exc}"
    text = str(exc)
    # Readers name the file themselves; a bare member name gains the source in front.
    return text if text.startswith(str(source)) else f"{source}: {text}"


def _import_folder(vault_root: Path, folder: str) -> Path:
    root = vault_root.resolve()
    return root / inside_vault(root, "import.folder", folder)


def read_source(
    source: Path,
    limits: ImportLimits,
    forced: ExportReader | None = None,
    fallback: ExportReader | None = None,
) -> tuple[list[Conversation], int]:
    """The conversations of one source and how many of its files no reader claimed.

    Raises:
        ParseError: the source (or a file in it) is unusable; the message says which and why.
        OSError: the source cannot be read.
    """
    if source.is_dir():
        return _read_bundle(FolderFiles(source, limits), source, forced)
    if zipfile.is_zipfile(source) or source.suffix.lower() == ".zip":
        with ZipFiles(source, limits) as files:
            return _read_bundle(files, source, forced)
    data = read_capped(source, limits.max_file_bytes)
    reader = forced or detect(data, source.name)
    if reader is None and fallback is not None and fallback.detect(data, source.name):
        reader = fallback
    if reader is None:
        raise ParseError(f"{source}: not a known export format (known: {_known()})", path=source)
    return reader.parse(data, source.name), 0


def _read_bundle(
    files: Mapping[str, bytes], source: Path, forced: ExportReader | None
) -> tuple[list[Conversation], int]:
    whole = forced if forced is not None and forced.detect_bundle(files) else None
    if whole is None and forced is None:
        whole = detect_bundle(files)
    if whole is not None:
        return whole.parse_bundle(files), 0
    conversations: list[Conversation] = []
    claimed = skipped = 0
    for name in files:
        data = files[name]
        reader = forced if forced is not None and forced.detect(data, name) else None
        if forced is None:
            reader = detect(data, name)
        if reader is None:
            skipped += 1
            continue
        claimed += 1
        conversations += reader.parse(data, name)
    if not claimed:
        raise ParseError(
            f"{source}: no file in it is a known export format (known: {_known()})", path=source
        )
    return conversations, skipped


class _NoteIndex:
    """The import folder's notes by (format, conversation key, part), found from their headers.

    A conversation whose note would be over ``max_note_bytes`` is written as several parts (see
    :mod:`aclarai.parsers.exports.parts`); a message already in one of its notes is never added
    to another. New notes are created in batches (one ``sync()`` for many files, see
    :func:`~aclarai.daemon.vault.writer.create_many`); :meth:`flush` writes what is pending.
    """

    BATCH = 256

    def __init__(self, vault_root: Path, folder: Path, max_note_bytes: int) -> None:
        self.vault_root = vault_root.resolve()
        self.folder = folder
        self.max_note_bytes = max_note_bytes
        self._by_key: dict[tuple[str, str, int], Path] | None = None
        self._parts: dict[tuple[str, str], dict[int, Path]] = {}
        """The same notes by (format, conversation key), then part."""
        self._pending: dict[Path, tuple[str, bytes, int]] = {}

    def _index(self) -> dict[tuple[str, str, int], Path]:
        if self._by_key is None:
            self._by_key = {}
            if self.folder.is_dir():
                for path in sorted(self.folder.rglob("*.md")):
                    if any(p.startswith(".") for p in path.relative_to(self.folder).parts):
                        continue
                    ref = _read_source_ref(path)
                    if ref is not None:
                        self._by_key.setdefault((ref.format, ref.key, ref.part), path)
                        self._parts.setdefault((ref.format, ref.key), {}).setdefault(ref.part, path)
        return self._by_key

    def store(self, conversation: Conversation, report: ImportReport, *, dry_run: bool) -> None:
        key = tier1.conversation_key(conversation)
        parts = note_parts.split_parts(conversation, self.max_note_bytes)
        index = self._index()
        found = [index.get((conversation.format, key, part.number)) for part in parts]
        # Every note of the conversation, whatever the split now: when the limit grows, fewer
        # parts are computed, and messages in the notes past them must not be added again.
        notes = list(self._parts.get((conversation.format, key), {}).values())
        if any(path in self._pending for path in notes):
            self.flush(report)
        existing = [path if path is not None and path.exists() else None for path in found]
        split = len(parts) > 1 or (conversation.format, key, 2) in index
        held = _ids_by_note([path for path in notes if path.exists()]) if split else {}
        elsewhere = set().union(*held.values()) if held else set()
        names = [_note_name(conversation, part.number, split) for part in parts]
        paths = [path or self._free_name(name) for path, name in zip(existing, names, strict=True)]
        for number, (part, path) in enumerate(zip(parts, paths, strict=True)):
            skip = elsewhere - held.get(path, set())
            blocks = [entry for entry in part.blocks if entry[1] not in skip]
            if existing[number] is not None:
                self._extend(path, blocks, len(part.blocks), report, dry_run=dry_run)
                continue
            if not blocks:
                continue
            index[(conversation.format, key, part.number)] = path
            self._parts.setdefault((conversation.format, key), {})[part.number] = path
            if not split:
                text = tier1.render_note(conversation)
            else:
                text = note_parts.render_part(
                    conversation,
                    note_parts.Part(part.number, tuple(blocks)),
                    previous=paths[number - 1].name if number else None,
                    following=paths[number + 1].name if number + 1 < len(parts) else None,
                )
                if number and existing[number - 1] is not None and not dry_run:
                    _link_next(paths[number - 1], path.name)
            self._add(path, names[number], text, len(blocks), report, dry_run=dry_run)

    def _add(
        self,
        path: Path,
        name: str,
        text: str,
        messages: int,
        report: ImportReport,
        *,
        dry_run: bool,
    ) -> None:
        if dry_run:
            self._count(report, path, messages)
            return
        self._pending[path] = (name, text.encode("utf-8"), messages)
        if len(self._pending) >= self.BATCH:
            self.flush(report)

    def _free_name(self, name: str) -> Path:
        number = 1
        while True:
            path = self.folder / (name if number == 1 else tier1.numbered_name(name, number))
            if path not in self._pending and not path.exists():
                return path
            number += 1

    def flush(self, report: ImportReport) -> None:
        """Create the pending notes; a name taken meanwhile gets the next free one."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            created = create_many([(path, data) for path, (_, data, _) in pending.items()])
        except OSError as exc:
            report.errors.append(f"{self.folder}: cannot write notes: {exc.strerror or exc}")
            return
        for (path, (name, data, messages)), ok in zip(pending.items(), created, strict=True):
            if not ok:
                path = self._create(name, data)
            self._count(report, path, messages)

    def _count(self, report: ImportReport, path: Path, messages: int) -> None:
        report.created += 1
        report.messages += messages
        report.notes.append(path.relative_to(self.vault_root).as_posix())

    def _create(self, name: str, data: bytes) -> Path:
        while True:
            path = self._free_name(name)
            try:
                create_if_absent(path, data)
                return path
            except WriteConflict:
                continue

    def _extend(
        self,
        path: Path,
        blocks: list[tier1.Entry],
        count: int,
        report: ImportReport,
        *,
        dry_run: bool,
    ) -> None:
        data = path.read_bytes()
        text = decode_note(data, path=str(path))
        result = tier1.append_entries(text, blocks, count)
        if not result.block_ids:
            report.unchanged += 1
            return
        if not dry_run:
            new = result.text.encode("utf-8")
            write_if_unchanged(path, new, expected_sha256=sha256_bytes(data))
        report.extended += 1
        report.messages += len(result.block_ids)
        report.notes.append(path.relative_to(self.vault_root).as_posix())


def _note_name(conversation: Conversation, number: int, split: bool) -> str:
    if split:
        return note_parts.part_file_name(conversation, number)
    return tier1.note_file_name(conversation)


def _ids_by_note(paths: Sequence[Path | None]) -> dict[Path, set[str]]:
    """The block ids written in each of a conversation's notes."""
    held: dict[Path, set[str]] = {}
    for path in paths:
        if path is not None:
            text = path.read_text(encoding="utf-8", errors="replace")
            held[path] = tier1.written_ids(text)
    return held


def _link_next(path: Path, name: str) -> None:
    """Add the link to the part after it at the end of a part written before that part was."""
    data = path.read_bytes()
    text = decode_note(data, path=str(path))
    link = note_parts.next_link(name)
    if link in text:
        return
    newline = "\r\n" if "\r\n" in text else "\n"
    ending = "" if text.endswith("\n") or not text else newline
    new = f"{text}{ending}{newline}{link}{newline}"
    write_if_unchanged(path, new.encode("utf-8"), expected_sha256=sha256_bytes(data))


def _read_source_ref(path: Path) -> tier1.SourceRef | None:
    """The ``source`` of a note's header, reading only the header's lines."""
    header: list[str] = []
    try:
        with path.open("rb") as handle:
            for raw in handle:
                line = raw.decode("utf-8", "replace")
                if line.strip() and not line.lstrip("\ufeff").lstrip().startswith("<!--"):
                    break
                header.append(line.rstrip("\r\n"))
    except OSError as exc:
        log.warning("cannot read %s: %s", path, exc)
        return None
    return tier1.header_source("\n".join(header))


def progress_display(label: str) -> Progress:
    """A bar per source on a terminal (stderr); else one plain line per source when it is done."""
    bar = terminal_progress(label, unit="conversations")
    if bar is not None:
        return bar

    def show(done: int, total: int) -> None:
        if done == total:
            print(f"{label}: {total} conversation(s)", file=sys.stderr)

    return show


def import_rows(report: ImportReport) -> list[tuple[str, object]]:
    """The summary table's rows, for this command's summary and resync's."""
    would = " (would be)" if report.dry_run else ""
    return [
        ("sources", f"{report.sources} ({report.sources_failed} failed)"),
        ("conversations", report.conversations),
        ("notes created" + would, report.created),
        ("notes extended" + would, report.extended),
        ("notes unchanged", report.unchanged),
        ("messages read", _read_row(report)),
        ("messages written" + would, report.messages),
        ("files skipped (no known format)", report.skipped),
        ("errors", len(report.errors)),
        ("time", f"{report.elapsed_s:.2f} s"),
    ]


def _read_row(report: ImportReport) -> str:
    """The messages read, and how many of them were edited away, not to be written."""
    if not report.edited_away:
        return str(report.messages_read)
    return f"{report.messages_read} ({report.edited_away} on branches edited away)"


def format_report(report: ImportReport) -> str:
    """The summary table (the errors are listed apart, one line each)."""
    rows = import_rows(report)
    width = max(len(k) for k, _ in rows)
    head = "aclarai import" + (" --dry-run" if report.dry_run else "")
    return "\n".join([head, "-" * len(head), *(f"{k.ljust(width)}  {v}" for k, v in rows)])
