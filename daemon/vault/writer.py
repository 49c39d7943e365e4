"""The one file writer: every change to a note is atomic and conditional.

A write reads nothing itself: the caller read the note's bytes and remembered their sha256.
Just before replacing, the note is hashed again; if a user (or a sync tool) changed it meanwhile,
:class:`WriteConflict` is raised and nothing is written. Otherwise the new bytes go to a temp
file in the same folder (a dot-name the watcher and Obsidian ignore), are fsynced, renamed over
the note with ``os.replace`` (atomic on POSIX), and the folder is fsynced so the rename itself
survives a crash. The note's permission bits are kept. A crash at any instant leaves either the
old or the new note, never a mix; at worst a stray temp file, which :func:`remove_stale_temp_files`
cleans. A temp file's name holds its writer's pid and start time
(``.aclarai-tmp-<pid>-<start>-<random>-<note name>.tmp``), so any command may clean up after a
crash while another aclarai writes beside it: only files whose writer is gone are removed.

A new file (the dashboard note) is created the same way, through :func:`create_if_absent`: the
temp file is hard-linked to the final name, which fails if anything is there already, so a note
someone created meanwhile is never replaced.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import logging
import os
import re
import secrets
import stat
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from aclarai.daemon.vault.processes import current, is_alive
from aclarai.parsers import WriteConflict

log = logging.getLogger(__name__)

TEMP_PREFIX = ".aclarai-tmp-"
"""Temp files start with a dot (hidden from Obsidian and skipped by the watcher)."""
_WRITER = re.compile(re.escape(TEMP_PREFIX) + r"(\d+)-(\d*)-[0-9a-f]{8}-")
UNNAMED_STALE_AFTER_S = 600.0
"""A temp file whose name does not say who writes it (an older aclarai's) is stale once it is
this old: no writer takes that long over one note."""


def is_temp_file(path: Path) -> bool:
    return path.name.startswith(TEMP_PREFIX)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_if_unchanged(path: Path, data: bytes, *, expected_sha256: str) -> os.stat_result:
    """Replace ``path`` with ``data`` if its bytes still hash to ``expected_sha256``.

    Returns the note's stat taken right after the rename, so the caller can record exactly the
    state it wrote (its signature recognises our own write). If another write landed between
    the rename and that stat, the temp file's own stat is returned instead: it matches nothing
    on disk, so that write is never taken for ours.

    Raises:
        WriteConflict: the note changed (or vanished, or is no regular file: a symlink, a named
            pipe) since it was read; nothing was written.
        OSError: the folder is not writable, the disk is full …; nothing was written.
    """
    folder = path.parent
    try:
        st = path.lstat()
        # A symlink would be replaced by a file (and its target outside the vault read); a
        # named pipe would block the read. Neither is a note.
        if not stat.S_ISREG(st.st_mode):
            raise WriteConflict(f"{path} is not a regular file; not written", path=path)
        current = path.read_bytes()
        mode = stat.S_IMODE(st.st_mode)
    except FileNotFoundError as exc:
        raise WriteConflict(f"{path} vanished before the write", path=path) from exc
    if sha256_bytes(current) != expected_sha256:
        raise WriteConflict(f"{path} changed since it was read, will retry", path=path)
    tmp = _write_temp(path, data, mode)
    try:
        # The check is repeated right before the rename to keep the window for a lost user
        # keystroke as small as the filesystem allows.
        if sha256_bytes(path.read_bytes()) != expected_sha256:
            raise WriteConflict(f"{path} changed while writing, will retry", path=path)
        ours = tmp.stat()
        os.replace(tmp, path)
        written = path.stat()
        if _identity(written) != _identity(ours):
            written = ours
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_dir(folder)
    return written


def create_if_absent(path: Path, data: bytes, *, mode: int = 0o644) -> os.stat_result:
    """Create ``path`` holding ``data``, atomically, unless something is there already.

    Returns the new file's stat.

    Raises:
        WriteConflict: ``path`` exists (it was created since the caller looked); nothing written.
        OSError: the folder is missing or not writable, the disk is full …; nothing was written.
    """
    folder = path.parent
    tmp = _write_temp(path, data, mode)
    try:
        try:
            os.link(tmp, path)
        except FileExistsError as exc:
            raise WriteConflict(f"{path} appeared before it was created", path=path) from exc
        written = path.stat()
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    _fsync_dir(folder)
    return written


def create_many(files: Sequence[tuple[Path, bytes]], *, mode: int = 0o644) -> list[bool]:
    """:func:`create_if_absent` for many new files at once; whether each was created.

    Same promise, paid once: every temp file is written, then one ``sync()`` makes them all
    durable (one fsync per file costs ~10 ms on a real disk: an import of 2,000 conversations
    would wait 20 s), then each is linked to its name (``False`` where the name exists: that
    file is not written) and each folder is fsynced once.

    Raises:
        OSError: a folder is missing or not writable, the disk is full …; the files linked
            before it are whole, the others were not created.
    """
    temps: list[Path] = []
    try:
        for path, data in files:
            temps.append(_write_temp(path, data, mode, fsync=False))
        os.sync()
        created = []
        for (path, _), tmp in zip(files, temps, strict=True):
            try:
                os.link(tmp, path)
            except FileExistsError:
                created.append(False)
            else:
                created.append(True)
    finally:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
    for folder in {path.parent for path, _ in files}:
        _fsync_dir(folder)
    return created


def _write_temp(path: Path, data: bytes, mode: int, *, fsync: bool = True) -> Path:
    """``data`` in a new hidden temp file beside ``path``, with ``mode``; fsynced unless the
    caller syncs many at once. A temp file left half-written is removed before raising."""
    me = current()
    tmp = path.parent / f"{TEMP_PREFIX}{me.pid}-{me.start}-{secrets.token_hex(4)}-{path.name}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            if fsync:
                os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return tmp


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    """What a rename keeps of a file (its ctime changes)."""
    return st.st_ino, st.st_size, st.st_mtime_ns


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_stale_temp_files(root: Path) -> int:
    """Delete the temp files a crash left behind under ``root`` (a folder, or one note: its
    own temp files beside it), leaving those a live process is writing; return how many."""
    if root.is_dir():
        found: Iterable[Path] = root.rglob(f"{TEMP_PREFIX}*")
    else:
        found = root.parent.glob(f"{TEMP_PREFIX}*-{glob.escape(root.name)}.tmp")
    removed = 0
    for tmp in found:
        if _writer_alive(tmp):
            continue
        with contextlib.suppress(OSError):
            tmp.unlink()
            removed += 1
            log.info("removed stale temp file %s", tmp)
    return removed


def _writer_alive(tmp: Path) -> bool:
    match = _WRITER.match(tmp.name)
    if match is not None:
        return is_alive(int(match[1]), match[2])
    try:
        return time.time() - tmp.lstat().st_mtime < UNNAMED_STALE_AFTER_S
    except OSError:
        return False
