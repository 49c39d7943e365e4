"""Which files of a vault are notes, and reading them.

A note is a ``.md`` file under the vault matched by the include globs and none of the exclude
globs, outside every dot folder (``.obsidian/``, ``.trash/``, ``.git/`` …), and not a symlink
leading outside the vault. Our own temp files are never notes.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from aclarai.daemon.writer import TEMP_PREFIX, sha256_bytes
from aclarai.parsers import ParseError, decode_note

log = logging.getLogger(__name__)

RACY_WINDOW_NS = 2_000_000_000


@dataclass(frozen=True, slots=True)
class NoteFile:
    rel: str
    """Vault-relative POSIX path: the note's key everywhere (store, queue, logs)."""
    path: Path
    mtime_ns: int
    size: int


@dataclass(frozen=True, slots=True)
class NoteContent:
    note: NoteFile
    data: bytes
    text: str
    sha256: str


def _glob_match(rel: str, pattern: str) -> bool:
    # fnmatch's "*" crosses "/", so "**/*.md" only needs help for files at the vault root.
    return fnmatchcase(rel, pattern) or (
        pattern.startswith("**/") and fnmatchcase(rel, pattern[3:])
    )


class Vault:
    """A vault folder and the rules that say which of its files are notes."""

    def __init__(
        self,
        root: Path,
        *,
        include: Sequence[str] = ("**/*.md",),
        exclude: Sequence[str] = (),
        max_file_bytes: int = 10 * 1024 * 1024,
    ) -> None:
        self.root = root.expanduser().resolve()
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self.max_file_bytes = max_file_bytes

    def rel(self, path: Path) -> str | None:
        """The vault-relative path of ``path``, or ``None`` when it is outside the vault."""
        try:
            return path.absolute().relative_to(self.root).as_posix()
        except ValueError:
            try:
                return path.resolve().relative_to(self.root).as_posix()
            except (ValueError, OSError):
                return None

    def is_note_path(self, rel: str) -> bool:
        """Whether a vault-relative path may hold a note (name rules only, no I/O)."""
        parts = rel.split("/")
        if any(part.startswith(".") for part in parts):
            return False
        if not rel.endswith(".md") or parts[-1].startswith(TEMP_PREFIX):
            return False
        if not any(_glob_match(rel, pattern) for pattern in self.include):
            return False
        return not any(_glob_match(rel, pattern) for pattern in self.exclude)

    def _inside(self, path: Path) -> bool:
        try:
            path.resolve().relative_to(self.root)
        except (ValueError, OSError):
            return False
        return True

    def iter_notes(self) -> Iterator[NoteFile]:
        """Every note of the vault in path order (depth first), without reading any."""
        yield from self._walk(self.root)

    def _walk(self, folder: Path) -> Iterator[NoteFile]:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            log.warning("cannot list %s: %s", folder, exc)
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            try:
                if entry.is_symlink() and not self._inside(path):
                    log.warning("skipping %s: symlink leading outside the vault", path)
                    continue
                if entry.is_dir():
                    if not entry.is_symlink():
                        yield from self._walk(path)
                    continue
                if not entry.is_file():
                    continue
                rel = path.relative_to(self.root).as_posix()
                if entry.is_symlink() or not self.is_note_path(rel):
                    continue
                st = entry.stat()
            except OSError as exc:
                log.warning("cannot stat %s: %s", path, exc)
                continue
            yield NoteFile(rel=rel, path=path, mtime_ns=st.st_mtime_ns, size=st.st_size)

    def note(self, rel: str) -> NoteFile | None:
        """The note at a vault-relative path, or ``None`` if it is gone or not a note."""
        path = self.root / rel
        if not self.is_note_path(rel):
            return None
        try:
            if path.is_symlink() and not self._inside(path):
                return None
            st = path.stat()
        except OSError:
            return None
        if not path.is_file():
            return None
        return NoteFile(rel=rel, path=path, mtime_ns=st.st_mtime_ns, size=st.st_size)

    def read(self, note: NoteFile) -> NoteContent:
        """Read and decode a note.

        Raises:
            ParseError: too large, not UTF-8 text, or unreadable (the message says which).
            FileNotFoundError: the note vanished.
        """
        if note.size > self.max_file_bytes:
            raise ParseError(
                f"{note.rel}: {note.size / 1e6:.1f} MB is over vault.max_file_mb, skipped",
                path=note.rel,
            )
        for _ in range(3):
            try:
                before = note.path.stat()
                data = note.path.read_bytes()
                after = note.path.stat()
            except FileNotFoundError:
                raise
            except OSError as exc:
                raise ParseError(
                    f"{note.rel}: cannot read: {exc.strerror or exc}", path=note.rel
                ) from exc
            if (before.st_mtime_ns, before.st_size) == (after.st_mtime_ns, after.st_size):
                break
        if len(data) > self.max_file_bytes:
            raise ParseError(f"{note.rel}: grew over vault.max_file_mb, skipped", path=note.rel)
        try:
            text = decode_note(data)
        except ParseError as exc:
            raise ParseError(f"{note.rel}: {exc}", path=note.rel) from exc
        mtime_ns = before.st_mtime_ns
        # Like git's "racily clean" entries: a file modified within the last moments may be
        # modified again within the same timestamp tick, so its mtime proves nothing.
        if time.time_ns() - mtime_ns < RACY_WINDOW_NS:
            mtime_ns = 0
        fresh = NoteFile(rel=note.rel, path=note.path, mtime_ns=mtime_ns, size=len(data))
        return NoteContent(note=fresh, data=data, text=text, sha256=sha256_bytes(data))
