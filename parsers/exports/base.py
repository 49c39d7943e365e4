"""The one interface every chat-export reader implements, and the data it returns.

A reader is pure: it gets bytes (one file) or a bundle of named files (a folder or a zip's
members, opened by the daemon) and returns conversations. It never opens a file, never touches
the network and never writes. Readers are found through the ``aclarai.importers`` entry point
group, so a third party can add a format without touching aclarai.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Message:
    """One utterance of a conversation, in the order it was said."""

    speaker: str
    text: str
    created_at: datetime | None = None
    """Timezone-aware (UTC when the export gives no zone) or ``None`` when the export has none."""
    id: str | None = None
    """The export's own message id, when it has one; identity falls back to position."""


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation found in an export: it becomes one Tier 1 note."""

    title: str
    messages: tuple[Message, ...]
    format: str
    """The reader's :attr:`ExportReader.name` (``chatgpt``, ``slack`` …)."""
    source_name: str
    """The file name (or bundle member) it came from, for the note's header."""
    id: str | None = None
    """The export's own conversation id; ``None`` where the format has none."""
    created_at: datetime | None = None
    participants: tuple[str, ...] = field(default=())
    """Speakers in order of first appearance; readers may leave it empty to have it derived."""
    messages_read: int | None = None
    """The messages the reader found for this conversation (``None``: :attr:`messages`, all of
    them). More than :attr:`messages` only by :attr:`edited_away`; anything else was lost, and
    the importer reports the conversation."""
    edited_away: int = 0
    """Messages read on branches the user edited or regenerated away (ChatGPT), not kept."""

    @property
    def read_count(self) -> int:
        """How many messages the reader found (:attr:`messages_read`, else :attr:`messages`)."""
        return len(self.messages) if self.messages_read is None else self.messages_read

    @property
    def lost(self) -> int:
        """Messages read that are neither kept nor on a branch edited away."""
        return max(0, self.read_count - len(self.messages) - self.edited_away)


class ExportReader(ABC):
    """One export format.

    Subclasses set :attr:`name` and implement :meth:`detect` and :meth:`parse`; a format made of
    several files (Slack's folder) also implements :meth:`detect_bundle` and :meth:`parse_bundle`.
    """

    name: str = ""
    """Short format name, used by ``aclarai import --format NAME``."""
    extensions: Sequence[str] = ()
    """File name endings this format usually has; a hint for detection, never the rule."""

    @abstractmethod
    def detect(self, data: bytes, name: str) -> bool:
        """Whether ``data`` (a whole file called ``name``) looks like this format, by content."""

    @abstractmethod
    def parse(self, data: bytes, name: str) -> list[Conversation]:
        """The conversations in one file.

        Raises:
            aclarai.parsers.ParseError: the bytes are not a valid export of this format; the
                message says what is wrong in words a user can act on.
        """

    def detect_bundle(self, files: Mapping[str, bytes]) -> bool:
        """Whether a folder or zip (relative ``/``-separated member names → bytes, read lazily)
        is one export of this format as a whole."""
        return False

    def parse_bundle(self, files: Mapping[str, bytes]) -> list[Conversation]:
        """The conversations of a whole-folder export (see :meth:`detect_bundle`)."""
        raise NotImplementedError(f"{self.name} has no multi-file form")
