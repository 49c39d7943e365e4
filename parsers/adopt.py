"""Adopting an ordinary Markdown note: its paragraphs and list items become Tier 1 blocks.

Each top-level paragraph and each top-level list item gets, on the lines right after it and at
its indentation, an id comment and an ``^anchor`` that Obsidian can link to::

    The deploy failed twice on Tuesday.
    <!-- aclarai:id=blk-4e1f0a9b27c3d865 ver=1 -->
    ^blk-4e1f0a9b27c3d865

A paragraph whose last line already ends in an Obsidian block id (``… text ^my-id``) keeps it and
gets only the id comment, with that id. Never marked: frontmatter, headings, code (fenced or
indented), tables, block quotes and callouts, HTML, thematic breaks, paragraphs made only of
embeds (``![[…]]``), empty list items (``- `` or ``- [ ]`` alone), anything in a ``$$`` math
block or a ``%%`` comment (:func:`aclarai.parsers.reading.line_kinds` says where they run, blank
lines inside included), a heading after a byte-order mark, and text a block already holds. No
existing byte changes, only lines are added (in the note's own line ending); markdown-it-py says
what is what. :mod:`aclarai.parsers.marks` takes the lines out again.

The note becomes an *adopted note* (see :mod:`aclarai.parsers.blocks`): each block is its own
paragraph or list item, so a paragraph typed later between two blocks is text of no block, and
adopting the note again gives it its own id; an emptied block's lines go at the same time. In
a conversation note (header metadata) only what follows its last block is marked, and as a
block there is every line since the previous one, a ``<!-- aclarai:block=start -->`` line goes
before an element that a heading, a table or the like precedes, so they stay in no block.

New ids are ``blk-`` and 16 hex digits of the sha256 of (``salt``, the note's text, the
element's text, its position), so they are the same on a dry run and the real one; give the
note's path as the salt to keep ids apart between notes with the same paragraph, and ``in_use``
to keep them apart from the ids the vault uses elsewhere. Adopting an adopted note that nobody
edited changes nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

from aclarai.parsers.blocks import NoteLayout, only_embeds, scan_note
from aclarai.parsers.errors import ParseError
from aclarai.parsers.grammar import (
    BLOCK_START_COMMENT,
    format_id_comment,
    is_block_id,
    parse_anchor,
    scan_line,
)
from aclarai.parsers.marks import drop_emptied
from aclarai.parsers.model import Block
from aclarai.parsers.reading import LineKind, line_kinds

_OBSIDIAN_ID = re.compile(r"\s\^([A-Za-z0-9-]+)\s*$")
_LIST_MARKER = re.compile(r"(\s*)([-+*]|[0-9]{1,9}[.)])(\s*)")
_TASK_BOX = re.compile(r"^\[.?\]")
_BOM = "\ufeff"
_HIDDEN = frozenset({LineKind.MATH, LineKind.COMMENT})
"""Lines no id may go into: Obsidian shows no Markdown there."""
_ID_CHARS = 16
_NEVER_A_PARAGRAPH = re.compile(
    r" {0,3}(?:#{1,6}(?:[ \t]|\r?$)|>|(?:[-*_][ \t]*){3,}\r?$|(?:[-+*]|[0-9]{1,9}[.)])"
    r"(?:[ \t]+\[.?\])?[ \t]*\r?$)"
)
"""A line no top-level paragraph or list item with text holds: a heading, a quote's line, a
thematic break, an empty list item."""


@dataclass(frozen=True, slots=True)
class Adopted:
    """The note after adoption and the blocks it gained, in note order."""

    text: str
    block_ids: tuple[str, ...]
    lines: tuple[int, ...]
    """1-based line of each new block's last line of text, in the note given (less the lines of
    its emptied blocks, which go first)."""


@dataclass(frozen=True, slots=True)
class _Target:
    first: int
    """0-based index of the element's first line."""
    last: int
    """0-based index of the element's last non-blank line."""
    indent: str
    existing_id: str | None


def adopt_note(
    text: str, *, salt: str = "", in_use: Callable[[Sequence[str]], Collection[str]] | None = None
) -> Adopted:
    """The note with every unmarked paragraph and list item made a block (see the module doc);
    ``in_use(ids)`` says which of the new ids the vault uses elsewhere, which it never takes
    (asked once for all of them, and again only for the ones made in their place).

    Raises:
        ParseError: the marked note would not read back with the same old blocks plus the new
            ones (a shape of Markdown this does not handle); nothing is changed.
    """
    layout = scan_note(text)
    if any(marker.emptied for marker in layout.markers):
        text = drop_emptied(text, layout)
        layout = scan_note(text)
    lines = layout.lines
    start = _start_line(lines, layout)
    targets = _targets(lines, start, layout) if layout.unclaimed else []
    if not targets:
        return Adopted(text, (), ())
    crlf = lines[0].endswith("\r")
    # The note as it is now seeds its new ids: a paragraph adopted again once its note changed
    # (its first id went with it to another note, say) gets another id.
    seed = f"{salt}\0{hashlib.sha256(text.encode('utf-8')).hexdigest()}"
    chosen = _ids(seed, lines, targets, {m.block_id for m in layout.markers}, in_use)
    out = list(lines)
    ids: list[str] = []
    after = _block_ends(start, layout, targets)
    # Only a conversation's utterance runs back to the previous block; an adopted note's block
    # is its last element (see aclarai.parsers.blocks).
    conversation = bool(layout.note.metadata)
    for position, target in reversed(list(enumerate(targets))):
        block_id = chosen[position]
        ids.append(block_id)
        end = "\r" if crlf else ""
        added = [f"{target.indent}{format_id_comment(block_id, 1)}{end}"]
        if target.existing_id != block_id:
            added.append(f"{target.indent}^{block_id}{end}")
        if target.last == len(lines) - 1 and crlf:
            # The note's last line has no line ending of its own; it gets one before ours.
            out[target.last] += "\r"
            added[-1] = added[-1].removesuffix("\r")
        out[target.last + 1 : target.last + 1] = added
        if conversation and any(line.strip() for line in lines[after[position] : target.first]):
            lead = lines[target.first][
                : len(lines[target.first]) - len(lines[target.first].lstrip())
            ]
            out.insert(target.first, f"{lead}{BLOCK_START_COMMENT}{end}")
    ids.reverse()
    result = "\n".join(out)
    _check(layout.note.blocks, result, ids)
    return Adopted(result, tuple(ids), tuple(t.last + 1 for t in targets))


def unmarked_paragraphs(layout: NoteLayout) -> int:
    """How many paragraphs and list items of an adopted note hold text no block holds: what
    :func:`adopt_note` would give an id (0 for a note that is not adopted)."""
    if not layout.note.adopted or not layout.unclaimed:
        return 0
    lines = layout.lines
    # Every adopted note has headings held by no block, many have code or quotes: a note whose
    # unclaimed lines are all of these needs no Markdown parse.
    if all(i in layout.code or _NEVER_A_PARAGRAPH.match(lines[i]) for i in layout.unclaimed):
        return 0
    return len(_targets(lines, _start_line(lines, layout), layout))


def _start_line(lines: list[str], layout: NoteLayout) -> int:
    """The first line that may be marked: after the frontmatter, the header comments and (in a
    conversation note) the zone of the note's last block."""
    if layout.markers and not layout.note.adopted:
        last = layout.markers[-1]
        return last.index + 1 + len(last.below)
    index = 0
    if lines[0].lstrip("\ufeff").rstrip() == "---":
        for end in range(1, len(lines)):
            if lines[end].rstrip() in ("---", "..."):
                index = end + 1
                break
    while index < len(lines):
        stripped = lines[index].strip()
        if stripped and not _is_comment_line(stripped):
            break
        index += 1
    return index


def _is_comment_line(stripped: str) -> bool:
    found = scan_line(stripped)
    return len(found.comments) == 1 and found.comments[0].end == len(stripped)


def _block_ends(start: int, layout: NoteLayout, targets: list[_Target]) -> list[int]:
    """For each target, the line after the block (or header) before it."""
    ends = sorted({start, *(m.index + 1 + len(m.below) for m in layout.markers)})
    result = []
    previous = start
    for target in targets:
        previous = max([previous, *(end for end in ends if end <= target.first)])
        result.append(previous)
        previous = target.last + 1
    return result


def _targets(lines: list[str], start: int, layout: NoteLayout) -> list[_Target]:
    """The elements to mark: top-level paragraphs and list items holding text no block holds,
    outside math blocks and ``%%`` comments."""
    # markdown-it reads a lone CR as a line break; a space keeps its line numbers equal to ours.
    shown = [line.rstrip("\r").replace("\r", " ") for line in lines]
    if start == 0:
        # A byte-order mark is no text: "\ufeff# Title" is a heading.
        shown[0] = shown[0].lstrip(_BOM)
    kinds = line_kinds("\n".join(shown))
    # Our own comment lines are HTML comments to a reader, and never hide an element.
    hidden = {
        i
        for i, kind in enumerate(kinds)
        if kind in _HIDDEN and not _is_comment_line(lines[i].strip())
    }
    unclaimed = set(layout.unclaimed)
    tokens = _markdown().parse("\n".join(shown[start:]))
    targets: list[_Target] = []
    for index, token in enumerate(tokens):
        if token.map is None:
            continue
        first, stop = start + token.map[0], start + token.map[1]
        if (
            not _has_text(lines[first:stop])
            or unclaimed.isdisjoint(range(first, stop))
            or not hidden.isdisjoint(range(first, stop))
        ):
            continue
        if token.type == "paragraph_open" and token.level == 0:
            if only_embeds(tokens[index + 1].content):
                continue
            targets.append(_target(lines, first, stop, indent=""))
        elif token.type == "list_item_open" and token.level == 1:
            if _empty_item(tokens, index):
                continue
            targets.append(_target(lines, first, stop, indent=_content_indent(shown[first])))
        else:
            continue
        # An item that goes on after a block it holds: its new block starts after that one.
        new_from = min(i for i in range(first, stop) if i in unclaimed)
        targets[-1] = replace(targets[-1], first=new_from)
    return [t for t in targets if t.last >= start]


def _empty_item(tokens: list[Token], index: int) -> bool:
    """Whether the list item opened at ``tokens[index]`` says nothing (``- `` or ``- [ ]``)."""
    content = tokens[index + 2] if tokens[index + 1].type == "paragraph_open" else None
    return content is None or _TASK_BOX.sub("", content.content, count=1).strip() == ""


def _target(lines: list[str], first: int, stop: int, *, indent: str) -> _Target:
    last = stop - 1
    while last > first and not lines[last].strip():
        last -= 1
    found = _OBSIDIAN_ID.search(lines[last].rstrip("\r"))
    existing = found.group(1) if found is not None and is_block_id(found.group(1)) else None
    return _Target(first, last, indent, existing)


def _has_text(lines: list[str]) -> bool:
    """Whether a block made of ``lines`` would hold any text: a paragraph of ``^anchor`` lines
    and ``aclarai:`` comments alone is none, by the Tier 1 grammar."""
    return any(
        line.strip() and parse_anchor(line) is None and not _is_comment_line(line.strip())
        for line in lines
    )


def _content_indent(line: str) -> str:
    match = _LIST_MARKER.match(line)
    if match is None:
        return ""
    lead, marker, space = match.groups()
    width = len(lead) + len(marker) + (len(space) if 1 <= len(space) <= 4 else 1)
    return " " * width


def _ids(
    seed: str,
    lines: list[str],
    targets: list[_Target],
    taken: set[str],
    in_use: Callable[[Sequence[str]], Collection[str]] | None,
) -> list[str]:
    """Each target's id: its own ``^id`` where the note uses it for nothing else, else a new
    one that no block of the note has and ``in_use`` does not name."""
    chosen: dict[int, str] = {}
    fresh: list[int] = []
    for position, target in reversed(list(enumerate(targets))):
        block_id = target.existing_id
        if block_id is None or block_id in taken:
            block_id = _new_id(seed, lines[target.last], position, taken)
            fresh.append(position)
        taken.add(block_id)
        chosen[position] = block_id
    while fresh and in_use is not None:
        clash = set(in_use([chosen[p] for p in fresh]))
        fresh = [p for p in fresh if chosen[p] in clash]
        for position in fresh:
            chosen[position] = _new_id(seed, lines[targets[position].last], position, taken)
            taken.add(chosen[position])
    return [chosen[position] for position in range(len(targets))]


def _new_id(seed: str, last_line: str, position: int, taken: set[str]) -> str:
    seed = f"{seed}\0{last_line}\0{position}"
    while True:
        block_id = "blk-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:_ID_CHARS]
        if block_id not in taken:
            return block_id
        seed += "\0"


def _check(old_blocks: tuple[Block, ...], result: str, ids: list[str]) -> None:
    found = {block.id: block for block in scan_note(result).note.blocks}
    for block in old_blocks:
        new = found.get(block.id)
        # Lines added above a block move its id comment; nothing else of it may change.
        if new is None or replace(new, line=block.line) != block:
            raise ParseError(
                "adopting would change an existing block; the note is left as it is",
                block_id=block.id,
            )
    missing = [block_id for block_id in ids if block_id not in found]
    if missing:
        raise ParseError(
            f"adopting would not give block {missing[0]!r} (unusual Markdown around it); "
            "the note is left as it is",
            block_id=missing[0],
        )


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")
