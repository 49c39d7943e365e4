"""A conversation too long for one note, as several Tier 1 notes under ``vault.max_file_mb``.

resync skips a note over ``vault.max_file_mb``, so a conversation whose note would be bigger is
cut into parts, in order, each holding as many messages as fit. Whether a message fits depends
only on the messages before it in its part and on the limit, never on what follows: a
conversation that grows keeps its earlier parts as they were, its last part fills up and new
parts follow. A part counts the room its blocks' score comments will take once graded
(:data:`SCORE_ROOM` a block) and keeps :func:`header_room` for its header and links, so it stays
under the limit after resync writes its scores. A message bigger than a whole part is a part of
its own (over the limit: resync says so and skips it).

Parts are notes named ``2024-06-03 Title (part 001).md``, ``… (part 002).md`` (zero-padded, so
they sort), titled ``Title (part 2)``, with ``"part": N`` in the ``source`` header. A part after
the first starts with a link to the one before (then a ``block=start`` line, so the link is never
part of a block), and a part with one after it ends with a link to it. Block ids are the
conversation's own (:func:`~aclarai.parsers.exports.render.block_ids`), whichever part a block is
in, so a re-import finds every message where it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from aclarai.parsers.exports.base import Conversation
from aclarai.parsers.exports.render import (
    Entry,
    block_lines,
    entries,
    header_lines,
    note_file_name,
)
from aclarai.parsers.grammar import BLOCK_START_COMMENT

SCORE_ROOM = 160
"""Bytes a block grows by once graded: three score comment lines and a longer ``ver``."""
_MAX_HEADER_ROOM = 64 * 1024


@dataclass(frozen=True, slots=True)
class Part:
    """One note of a conversation: its number (from 1) and its blocks."""

    number: int
    blocks: tuple[Entry, ...]


def header_room(max_bytes: int) -> int:
    """Bytes of a part kept for its header and its links to the other parts."""
    return min(max_bytes // 8, _MAX_HEADER_ROOM)


def split_parts(conversation: Conversation, max_bytes: int | None) -> list[Part]:
    """The conversation's blocks cut into parts under ``max_bytes`` (one part when ``None``)."""
    blocks = entries(conversation)
    if max_bytes is None:
        return [Part(1, tuple(blocks))]
    budget = max_bytes - header_room(max_bytes)
    parts: list[Part] = []
    current: list[Entry] = []
    used = 0
    for entry in blocks:
        size = block_size(entry)
        if current and used + size > budget:
            parts.append(Part(len(parts) + 1, tuple(current)))
            current, used = [], 0
        current.append(entry)
        used += size
    parts.append(Part(len(parts) + 1, tuple(current)))
    return parts


def block_size(entry: Entry) -> int:
    """A block's bytes in a note, its blank line and its future score comments included."""
    message, block_id = entry
    return sum(len(line.encode("utf-8")) + 1 for line in block_lines(message, block_id)) + (
        1 + SCORE_ROOM
    )


def part_file_name(conversation: Conversation, number: int) -> str:
    """``2024-06-03 Title (part 002).md``: the note name of a conversation's ``number``-th part."""
    stem = note_file_name(conversation).removesuffix(".md")
    return f"{stem} (part {number:03d}).md"


def render_part(
    conversation: Conversation,
    part: Part,
    *,
    previous: str | None = None,
    following: str | None = None,
) -> str:
    """A part's whole note; ``previous`` and ``following`` are the other parts' note names."""
    lines = [*header_lines(conversation, len(part.blocks), part.number), ""]
    if previous is not None:
        lines += [previous_link(previous), BLOCK_START_COMMENT, ""]
    for message, block_id in part.blocks:
        lines += [*block_lines(message, block_id), ""]
    if following is not None:
        lines += [next_link(following), ""]
    return "\n".join(lines)


def previous_link(name: str) -> str:
    """The line linking a part to the part before it, by that note's file name."""
    return f"← [[{name.removesuffix('.md')}|previous part]]"


def next_link(name: str) -> str:
    """The line linking a part to the part after it, by that note's file name."""
    return f"[[{name.removesuffix('.md')}|next part]] →"
