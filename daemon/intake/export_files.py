"""Export sources as bytes: files read under a size cap, folders and zips as lazy mappings.

A folder or zip is presented to the readers as a ``Mapping`` of ``/``-separated member names to
bytes, each member read only when a reader asks for it. Zips are checked when opened, before
anything is inflated: a member named ``..`` or absolute, more than ``max_archive_members``
members, more than ``max_archive_mb`` uncompressed in all, or a member over 1 MB inflating more
than ``max_compression_ratio`` times fails the whole zip; a member is never inflated past the
size its header gave. Every failure is a :class:`ParseError` naming the file and what is wrong.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from aclarai.parsers import ParseError

MB = 1024 * 1024
_BOMB_FLOOR_BYTES = MB
"""Small members may compress extremely well (a file of spaces); only big ones are suspects."""
_SKIPPED_MEMBERS = ("__MACOSX/",)


@dataclass(frozen=True, slots=True)
class ImportLimits:
    max_file_bytes: int = 256 * MB
    max_archive_bytes: int = 2048 * MB
    max_archive_members: int = 100_000
    max_compression_ratio: float = 200.0
    max_note_bytes: int = 10 * MB
    """The largest note written (``vault.max_file_mb``): a longer conversation is split."""


def read_capped(path: Path, cap: int) -> bytes:
    size = path.stat().st_size
    if size > cap:
        raise ParseError(
            f"{path}: {size / MB:.1f} MB is over import.max_file_mb ({cap / MB:.0f} MB)",
            path=path,
        )
    with path.open("rb") as handle:
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise ParseError(f"{path}: grew over import.max_file_mb while read", path=path)
    return data


class FolderFiles(Mapping[str, bytes]):
    """A folder's regular files (dot files and symlinks skipped) by ``/`` path, read lazily."""

    def __init__(self, root: Path, limits: ImportLimits) -> None:
        self.root = root
        self.limits = limits
        self._names = sorted(self._walk())
        self._known = frozenset(self._names)

    def _walk(self) -> Iterator[str]:
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            base = Path(folder)
            for name in files:
                path = base / name
                if name.startswith(".") or path.is_symlink() or not path.is_file():
                    continue
                yield path.relative_to(self.root).as_posix()

    def __getitem__(self, name: str) -> bytes:
        if name not in self._known:
            raise KeyError(name)
        return read_capped(self.root / name, self.limits.max_file_bytes)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._known


class ZipFiles(Mapping[str, bytes]):
    """A zip's members by name, checked against the limits on open and read lazily."""

    def __init__(self, path: Path, limits: ImportLimits) -> None:
        self.path = path
        self.limits = limits
        try:
            self._zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, EOFError) as exc:
            raise ParseError(f"{path}: not a readable zip archive (truncated?)", path=path) from exc
        try:
            self._members = self._check(self._zip.infolist())
        except BaseException:
            self._zip.close()
            raise

    def _check(self, infos: list[zipfile.ZipInfo]) -> dict[str, zipfile.ZipInfo]:
        limits, path = self.limits, self.path
        if len(infos) > limits.max_archive_members:
            raise ParseError(
                f"{path}: {len(infos)} members, over import.max_archive_members "
                f"({limits.max_archive_members})",
                path=path,
            )
        members: dict[str, zipfile.ZipInfo] = {}
        total = 0
        for info in infos:
            name = info.filename.replace("\\", "/")
            pure = PurePosixPath(name)
            if name.startswith("/") or ".." in pure.parts or (len(name) > 1 and name[1] == ":"):
                raise ParseError(
                    f"{path}: member {info.filename!r} points outside the archive; refused",
                    path=path,
                )
            total += info.file_size
            if total > limits.max_archive_bytes:
                raise ParseError(
                    f"{path}: over {limits.max_archive_bytes / MB:.0f} MB uncompressed "
                    "(import.max_archive_mb); a zip bomb?",
                    path=path,
                )
            ratio = info.file_size / max(info.compress_size, 1)
            if info.file_size > _BOMB_FLOOR_BYTES and ratio > limits.max_compression_ratio:
                raise ParseError(
                    f"{path}: member {info.filename!r} inflates {ratio:.0f}x "
                    "(import.max_compression_ratio); a zip bomb?",
                    path=path,
                )
            if info.is_dir() or name.startswith(_SKIPPED_MEMBERS):
                continue
            if any(part.startswith(".") for part in pure.parts):
                continue
            members[name] = info
        return members

    def __enter__(self) -> ZipFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self._zip.close()

    def __getitem__(self, name: str) -> bytes:
        info = self._members[name]
        cap = self.limits.max_file_bytes
        if info.file_size > cap:
            raise ParseError(
                f"{self.path}: member {name!r} is {info.file_size / MB:.1f} MB, over "
                f"import.max_file_mb",
                path=self.path,
            )
        try:
            with self._zip.open(info) as handle:
                # The header's size is what the checks saw; never inflate more than it says.
                data = handle.read(info.file_size + 1)
        except (zipfile.BadZipFile, EOFError, OSError, RuntimeError) as exc:
            raise ParseError(
                f"{self.path}: member {name!r} is corrupt: {exc}", path=self.path
            ) from exc
        if len(data) != info.file_size:
            raise ParseError(f"{self.path}: member {name!r} is corrupt", path=self.path)
        return data

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)


DEFAULT_LIMITS = ImportLimits()
