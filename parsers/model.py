"""Data types produced by the Tier 1 parser and consumed by every other room."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

SCORE_NAMES: tuple[str, ...] = ("entailed_score", "coverage_score", "decontextualization_score")
"""The block scores, in their one order: the score comments under a block's id comment, the
fields of an evaluator's score, the graph's edge properties, and what every report, the MCP
tools, the grading workers' wire format and ``aclarai evaluate`` give of a claim."""
SCORE_WORDS: dict[str, str] = {
    "entailed_score": "entailment",
    "coverage_score": "coverage",
    "decontextualization_score": "decontextualization",
}
"""How a justification names each score (``"coverage 0.00: leaves out …"``), and how the
dashboard knows that a justification opens with one."""


def named_scores(record: object) -> dict[str, float | None]:
    """The scores a record holds as attributes (an evaluator's score, a stored one, a claim as
    the dashboard shows it), by name, in :data:`SCORE_NAMES` order."""
    return {name: getattr(record, name) for name in SCORE_NAMES}


class ProblemKind(Enum):
    """What was wrong with a piece of a note. The rest of the note is still parsed."""

    MALFORMED_COMMENT = "malformed_comment"
    """An ``aclarai:`` comment that does not follow the grammar (``ver=abc``, an id with spaces)."""
    UNTERMINATED_COMMENT = "unterminated_comment"
    """``<!-- aclarai:`` with no closing ``-->``."""
    DUPLICATE_ID = "duplicate_id"
    """A block id seen earlier in the same note; the later block is skipped."""
    EMPTY_BLOCK = "empty_block"
    """An id comment with no utterance text before it (and not at the end of the file)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing the parser could not use, with its 1-based line number."""

    kind: ProblemKind
    line: int
    message: str


@dataclass(frozen=True, slots=True)
class Block:
    """One Tier 1 utterance and its ``aclarai:id`` marker.

    ``text`` is the whole utterance without any ``aclarai:`` comment or ``^anchor`` line;
    ``hash`` is :func:`aclarai.parsers.content_hash` of it. ``scores`` holds the score comments
    currently in the block's comment zone (metadata: they never change ``hash``).
    """

    id: str
    version: int
    text: str
    hash: str
    line: int
    """1-based line of the id comment."""
    scores: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ParsedNote:
    """Everything the parser learned from one note."""

    blocks: tuple[Block, ...]
    metadata: Mapping[str, object]
    """Header comments (``title``, ``created_at``, ``participants`` …); JSON values decoded."""
    file_id: str | None
    """A file-level ``aclarai:id`` comment alone at the end of the note, if any."""
    problems: tuple[Problem, ...]
    adopted: bool = False
    """An ordinary note given ids by ``aclarai adopt``, where a block is one paragraph or list
    item, not a conversation's utterance (see :mod:`aclarai.parsers.blocks`)."""

    @property
    def has_markers(self) -> bool:
        return bool(self.blocks) or self.file_id is not None
