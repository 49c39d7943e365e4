"""Adopt's marks in a note, and taking them out again: ``aclarai unadopt`` and emptied blocks.

What ``aclarai adopt`` and the score write-back add to an ordinary note are whole lines: per
block an id comment on a line of its own, the ``^anchor`` of the block's own id in its comment
zone and the score comments there (also in the legacy place above the id comment), plus the
``block=start`` lines. :func:`unadopt_note` removes exactly those lines, so that a note adopted,
scored and unadopted is the note it was, byte for byte; everything else stays, including the
user's own ``^my-id`` at the end of a paragraph (adopt gave that block the same id and added
only the id comment) and any other line of a comment zone. A conversation note (its header has
``aclarai:`` metadata, as every imported one does) is not adopt's to undo and is refused.

:func:`drop_emptied` removes the same lines for each emptied block of an adopted note (an id
comment whose paragraph the user deleted), so an emptied block leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from aclarai.parsers.blocks import Marker, NoteLayout, is_adopt_id, scan_note
from aclarai.parsers.errors import ParseError
from aclarai.parsers.grammar import parse_anchor


@dataclass(frozen=True, slots=True)
class Unadopted:
    """The note without adopt's marks, the block ids they gave and how many lines went."""

    text: str
    block_ids: tuple[str, ...]
    lines_removed: int


def unadopt_note(text: str) -> Unadopted:
    """The note without the lines adopt and the score write-back added (see the module doc).

    Raises:
        ParseError: a conversation note, a note with blocks adopt did not make, or one that
            would still hold a block after the marks are out; nothing is changed.
    """
    layout = scan_note(text)
    if not layout.markers and not layout.block_starts:
        return Unadopted(text, (), 0)
    if layout.note.metadata:
        raise ParseError("a conversation note, not an adopted one; left as it is")
    if not layout.note.adopted:
        raise ParseError("its blocks were not made by adopt; left as it is")
    drop = set(layout.block_starts)
    for marker in layout.markers:
        drop.update(marked_lines(layout, marker))
    result = without_lines(layout.lines, drop)
    # Only the ids a user wrote by hand stay; one of aclarai's left behind shares its line.
    kept = {
        m.block_id for m in layout.markers if m.index not in drop and not is_adopt_id(m.block_id)
    }
    left = scan_note(result)
    if any(m.block_id not in kept for m in left.markers) or left.block_starts:
        raise ParseError(
            "an id comment shares its line with text; left as it is",
            block_id=next((m.block_id for m in left.markers if m.block_id not in kept), None),
        )
    ids = tuple(dict.fromkeys(m.block_id for m in layout.markers if m.block_id not in kept))
    return Unadopted(result, ids, len(drop))


def drop_emptied(text: str, layout: NoteLayout) -> str:
    """``text`` without the lines of its emptied blocks (``layout`` is ``scan_note(text)``)."""
    drop: set[int] = set()
    for marker in layout.markers:
        if marker.emptied:
            drop.update(marked_lines(layout, marker))
    return without_lines(layout.lines, drop) if drop else text


def marked_lines(layout: NoteLayout, marker: Marker) -> list[int]:
    """The lines of one block that adopt and the write-back added: its score comments, and
    its id comment when it stands alone on its line and adopt made it (an id of adopt's form
    with its ``^anchor``, or the user's own ``^id`` ending the line above it)."""
    lines = layout.lines
    marked = [line.index for line in marker.above if line.score is not None]
    content = lines[marker.index].rstrip("\r")
    own = marker.index > 0 and lines[marker.index - 1].rstrip().endswith(f" ^{marker.block_id}")
    adopted = is_adopt_id(marker.block_id)
    if (
        (adopted or own)
        and not content[: marker.start].strip()
        and not content[marker.end :].strip()
    ):
        marked.append(marker.index)
    for line in marker.below:
        anchor = adopted and parse_anchor(lines[line.index]) == marker.block_id
        if line.score is not None or anchor:
            marked.append(line.index)
    return marked


def without_lines(lines: list[str], drop: Iterable[int]) -> str:
    """The note of ``lines`` (split on ``\\n``) without the lines ``drop``.

    Adopt gave a note whose last line had no line ending one (CRLF notes: the ``\\r``) before
    its own lines; when the note's last line goes, the line now last gives it back.
    """
    gone = set(drop)
    kept = [line for index, line in enumerate(lines) if index not in gone]
    last = len(lines) - 1
    if kept and last in gone and lines[0].endswith("\r"):
        kept[-1] = kept[-1].removesuffix("\r") + ("\r" if lines[last].endswith("\r") else "")
    return "\n".join(kept)
