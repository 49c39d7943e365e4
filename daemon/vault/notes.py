"""Which files of a vault are notes, and reading them.

A note is a ``.md`` file under the vault matched by the include globs and none of the exclude
globs, outside every dot folder (``.obsidian/``, ``.trash/``, ``.git/``, our own ``.aclarai/`` …),
and a regular file: not a symlink, nor a named pipe, socket or device (those are reported once
per walk). Our own temp files are never notes. A symlink that loops or leads outside the vault is
reported once per walk; a symlink to a file or folder inside it is skipped quietly (its target is
walked where it lies).

Following a path can fail in more ways than ``OSError``: Python 3.11's ``Path.resolve`` raises
``RuntimeError`` for a symlink loop. Paths are therefore only followed here, through
:func:`os.path.realpath`, which reports a loop as ``OSError(ELOOP)`` in strict mode and never
raises otherwise.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from aclarai.daemon.vault.writer import TEMP_PREFIX, sha256_bytes
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
                return Path(os.path.realpath(path)).relative_to(self.root).as_posix()
            except ValueError:
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

    def symlink_problem(self, path: Path) -> str | None:
        """Why the symlink at ``path`` must be reported (a loop, or it leads outside the
        vault), or ``None`` for a symlink inside the vault and for anything not a symlink."""
        if not os.path.islink(path):
            return None
        try:
            target = os.path.realpath(path, strict=True)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "a symlink loop"
            # Dangling: judged by where it would lead.
            target = os.path.realpath(path)
        if Path(target).is_relative_to(self.root):
            return None
        return "a symlink leading outside the vault"

    def iter_notes(self) -> Iterator[NoteFile]:
        """Every note of the vault in path order (depth first), without reading any."""
        yield from self._walk(str(self.root), "")

    def _walk(self, folder: str, prefix: str) -> Iterator[NoteFile]:
        # Relative paths are built as strings: on an unchanged vault this walk is most of a
        # resync, and pathlib's parsing per entry cost more than the stat.
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            log.warning("cannot list %s: %s", folder, exc)
            return
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            try:
                if entry.is_symlink():
                    problem = self.symlink_problem(Path(entry.path))
                    if problem is not None:
                        log.warning("skipping %s: %s", entry.path, problem)
                    continue
                if entry.is_dir():
                    yield from self._walk(entry.path, f"{prefix}{name}/")
                    continue
                rel = prefix + name
                if not entry.is_file():
                    if self.is_note_path(rel):
                        # A named pipe, socket or device: reading it would block.
                        log.warning("skipping %s: not a regular file", entry.path)
                    continue
                if not self.is_note_path(rel):
                    continue
                st = entry.stat()
            except OSError as exc:
                log.warning("cannot stat %s: %s", entry.path, exc)
                continue
            yield NoteFile(rel=rel, path=Path(entry.path), mtime_ns=st.st_mtime_ns, size=st.st_size)

    def note(self, rel: str) -> NoteFile | None:
        """The note at a vault-relative path, or ``None`` if it is gone or not a note."""
        path = self.root / rel
        if not self.is_note_path(rel):
            return None
        try:
            st = path.lstat()
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
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
