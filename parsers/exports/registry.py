"""Finding the readers, and the one that fits a file.

Readers are registered under the ``aclarai.importers`` entry point group, aclarai's own too
(pyproject.toml), so a third party declares one exactly as aclarai does. An entry point names an
:class:`ExportReader` subclass (or an instance); one that fails to load, cannot be created or
names something else is logged and skipped, never fatal. The built-ins are taken from
:data:`BUILTIN` whatever the metadata says, and their own entry points are recognised, not
counted twice: so they keep a fixed order and are there even when the installed metadata
predates them (an editable install not yet reinstalled).

Reading the metadata is the one thing here that touches the disk; it is done once per
``sys.path``.

Detection asks every reader about the content; when several claim a file, the one whose
extensions match the file name wins, and after that the order of :func:`readers` (built-ins from
most to least specific, then third parties by name).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points

from aclarai.parsers.exports.base import ExportReader
from aclarai.parsers.exports.chatgpt import ChatGPTReader
from aclarai.parsers.exports.claude import ClaudeReader
from aclarai.parsers.exports.csvfile import CsvReader
from aclarai.parsers.exports.discord import DiscordReader
from aclarai.parsers.exports.plaintext import PlainTextReader
from aclarai.parsers.exports.slack import SlackReader
from aclarai.parsers.exports.telegram import TelegramReader
from aclarai.parsers.exports.whatsapp import WhatsAppReader

log = logging.getLogger(__name__)

GROUP = "aclarai.importers"
"""The entry point group readers register under."""

BUILTIN: tuple[type[ExportReader], ...] = (
    ChatGPTReader,
    ClaudeReader,
    SlackReader,
    DiscordReader,
    TelegramReader,
    WhatsAppReader,
    CsvReader,
    PlainTextReader,
)
"""aclarai's own readers, most specific first: the looser text formats come last."""


_found: tuple[tuple[str, ...], tuple[ExportReader, ...]] | None = None
"""The readers last found, and the ``sys.path`` they were found on."""


def readers() -> list[ExportReader]:
    """Every reader: the built-ins in :data:`BUILTIN` order, then third parties by name.

    A third-party reader whose name is already taken is logged and skipped. Reading the
    installed metadata takes milliseconds, so the answer is kept until ``sys.path`` changes; a
    reader installed while the process runs is found by the next process. Readers are shared,
    so they keep no state between calls.
    """
    global _found
    if _found is None or _found[0] != tuple(sys.path):
        _found = (tuple(sys.path), tuple(_load()))
    return list(_found[1])


def _load() -> list[ExportReader]:
    builtin = {cls: cls() for cls in BUILTIN}
    taken = {reader.name for reader in builtin.values()}
    extra: list[ExportReader] = []
    for point in sorted(entry_points(group=GROUP), key=lambda point: point.name):
        try:
            loaded = point.load()
        except Exception:
            log.warning(
                "import reader %r (%s) failed to load; skipped",
                point.name,
                point.value,
                exc_info=True,
            )
            continue
        if isinstance(loaded, type) and loaded in builtin:
            continue
        reader = _instance(loaded, point.name)
        if reader is None:
            continue
        if reader.name in taken:
            log.warning(
                "import reader %r (%s): the name %r is taken; skipped",
                point.name,
                point.value,
                reader.name,
            )
            continue
        taken.add(reader.name)
        extra.append(reader)
    return [*builtin.values(), *extra]


def reader_named(name: str) -> ExportReader | None:
    """The reader called ``name`` (``aclarai import --format NAME``), or None if none is."""
    return next((reader for reader in readers() if reader.name == name), None)


def detect(data: bytes, name: str) -> ExportReader | None:
    """The reader for one file ``name`` holding ``data``, by content; None if none claims it."""
    return _choose([r for r in readers() if _claims(r, lambda r: r.detect(data, name))], name)


def detect_bundle(files: Mapping[str, bytes]) -> ExportReader | None:
    """The reader for a whole folder or zip (see :meth:`ExportReader.detect_bundle`), or None."""
    return _choose([r for r in readers() if _claims(r, lambda r: r.detect_bundle(files))], "")


def _instance(loaded: object, point: str) -> ExportReader | None:
    try:
        if isinstance(loaded, type) and issubclass(loaded, ExportReader):
            return loaded()
    except Exception:
        log.warning("import reader %r could not be created; skipped", point, exc_info=True)
        return None
    if isinstance(loaded, ExportReader):
        return loaded
    log.warning("import reader %r is not an ExportReader (%r); skipped", point, loaded)
    return None


def _claims(reader: ExportReader, ask: Callable[[ExportReader], bool]) -> bool:
    """Whether ``reader`` says yes; a reader that raises while detecting says no."""
    try:
        return bool(ask(reader))
    except Exception:
        log.warning(
            "import reader %r failed while detecting; treated as no", reader.name, exc_info=True
        )
        return False


def _choose(candidates: list[ExportReader], name: str) -> ExportReader | None:
    if len(candidates) > 1:
        lowered = name.lower()
        by_extension = [r for r in candidates if any(lowered.endswith(e) for e in r.extensions)]
        candidates = by_extension or candidates
    return candidates[0] if candidates else None
