"""What a block is about besides its own words: its note's title and aliases, and the headings
above it.

A question names a topic the way the note's title or a heading does ("education discount") more
often than the way the block's sentence words it ("students and nonprofits get 40% off"), so
search reads these beside the block's text. Pure: a note's layout in, a string per block out.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

import yaml

from aclarai.parsers.blocks import NoteLayout
from aclarai.parsers.reading import reader_text

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_MAX_ALIASES = 20
_MAX_NEARBY = 4000


def note_title(rel: str) -> str:
    """A note's title as Obsidian shows it: its file name without ``.md``."""
    return PurePosixPath(rel).stem


@dataclass(frozen=True, slots=True)
class BlockContext:
    about: str
    """One line: the note's title, its aliases and the heading path above the block, as a
    reader sees them (links and emphasis rendered), joined by `` · ``."""
    nearby: str
    """The note's text after the block that no block holds (a callout, a quote, a table), up
    to the next block or heading; the first block also gets such text before it."""


def block_about(rel: str, layout: NoteLayout) -> dict[str, BlockContext]:
    """What each block of the note (by id) is about, and the text near it no block holds."""
    head = [note_title(rel), *_aliases(layout.lines), *_titles(layout.note.metadata)]
    path: list[tuple[int, str]] = []
    headings: dict[int, tuple[str, ...]] = {}
    for index, line in enumerate(layout.lines):
        if index in layout.code:
            continue
        match = _HEADING.match(line)
        if match is None:
            continue
        level = len(match.group(1))
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, reader_text(match.group(2)).strip()))
        headings[index] = tuple(text for _, text in path)
    blocks = sorted(layout.note.blocks, key=lambda b: b.line)
    nearby = _nearby(layout, [b.line - 1 for b in blocks], set(headings))
    about: dict[str, BlockContext] = {}
    above: tuple[str, ...] = ()
    lines_with_headings = sorted(headings)
    cursor = 0
    for n, block in enumerate(blocks):
        while cursor < len(lines_with_headings) and lines_with_headings[cursor] < block.line - 1:
            above = headings[lines_with_headings[cursor]]
            cursor += 1
        parts = dict.fromkeys(p for p in (*head, *above) if p)
        about[block.id] = BlockContext(" · ".join(parts), nearby.get(n, ""))
    return about


def _nearby(layout: NoteLayout, id_lines: list[int], headings: set[int]) -> dict[int, str]:
    """The unclaimed text of the note, by the index (in ``id_lines``) of the block it follows
    (text before the first block goes with it)."""
    if not id_lines:
        return {}
    texts: dict[int, list[str]] = {}
    for index in layout.unclaimed:
        if index in headings or index in layout.code:
            continue
        owner = bisect.bisect_right(id_lines, index) - 1
        texts.setdefault(max(owner, 0), []).append(layout.lines[index])
    rendered = {n: " ".join(reader_text("\n".join(lines)).split()) for n, lines in texts.items()}
    return {n: text[:_MAX_NEARBY] for n, text in rendered.items() if text}


def _titles(metadata: Mapping[str, object]) -> list[str]:
    title = metadata.get("title")
    return [title] if isinstance(title, str) else []


def _aliases(lines: list[str]) -> list[str]:
    """The ``aliases`` (or ``alias``) of the note's YAML front matter; none if it has none or
    the front matter does not parse."""
    if not lines or lines[0].lstrip("\ufeff").rstrip() != "---":
        return []
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        return []
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError:
        return []
    if not isinstance(data, dict):
        return []
    value = data.get("aliases", data.get("alias"))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return [str(v).strip() for v in value[:_MAX_ALIASES] if str(v).strip()]
