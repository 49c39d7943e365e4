"""Tier 1 notes → blocks: the utterances that end in an ``aclarai:id`` comment.

A block's text is every line from the end of the previous block's comment zone (or the end of
the header: YAML frontmatter and leading metadata comments, or a ``<!-- aclarai:block=start -->``
line, which ``aclarai adopt`` puts after headings, tables and the like) up to its id comment,
without any ``aclarai:`` comment or ``^anchor`` line. The id comment sits either on its own line
after the text or at the end of the text's last line. Its **comment zone** is the run of
score/metadata comment lines and ``^anchor`` lines right after it, plus (legacy placement,
own-line layout only) the run of score comment lines directly above it; a blank line ends a zone.

Lines inside fenced or indented code are plain text: markdown-it-py says where code is, and is
skipped entirely when the note has no fence marker and no indented line.

That is the rule of a conversation note, where an utterance may hold blank lines. An **adopted
note** (an ordinary note given ids by ``aclarai adopt``) keeps one paragraph or list item per
block: its block's text is only the last Markdown element (paragraph, list item, heading …)
before the id comment, so a paragraph typed between two blocks is never merged into the next
one; it stays text of no block until adopt gives it an id. The element must end right before
the id comment, as adopt puts it: a blank line between them means the block's own text was
deleted, and the text above is no block's. In an adopted note an id comment with no text before
it is an **emptied** block (:attr:`Marker.emptied`), never a file-level id: the rewriter takes
its lines out (see :mod:`aclarai.parsers.rewrite`).

A note is adopted when it has no header metadata (every imported conversation has a title) and
carries one of adopt's marks: a ``block=start`` line, or an id comment on a line of its own,
either followed (past its score comments) by the ``^anchor`` of the same id, or right after a
text line that ends in the user's own ``^id`` of the same name. A note whose paragraphs were all
deleted is still adopted: its id lines are an emptied block's, and go.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt

from aclarai.parsers.errors import ParseError
from aclarai.parsers.grammar import (
    AclaraiComment,
    CommentKind,
    LineComments,
    decode_metadata_value,
    is_block_start,
    parse_anchor,
    scan_line,
)
from aclarai.parsers.hashing import content_hash
from aclarai.parsers.model import SCORE_NAMES, Block, ParsedNote, Problem, ProblemKind

_BOM = "\ufeff"
_INDENTED = re.compile(r"^(?: {0,3}\t| {4})", re.MULTILINE)
_EMPTY_ITEM = re.compile(r"[ \t]*(?:[-+*]|[0-9]{1,9}[.)])(?:[ \t]+\[.?\])?[ \t]*\r?$")
_OWN_ID = re.compile(r"\s\^([A-Za-z0-9-]+)$")
_ADOPT_ID = re.compile(r"blk-[A-Za-z0-9-]+")
"""An Obsidian block id the user wrote at the end of a line."""
_ZONE_LINES = 8
"""How far below an id comment its ``^anchor`` is looked for (three score comments and more)."""
_MAY_START_ELEMENT = re.compile(r" {0,3}(?:[-+*#>|<=_~`]|[0-9]{1,9}[.)])")
"""A line that may start a new Markdown element right after a paragraph line (loosely: a false
match only costs a parse)."""
_SCORE_KEYS = frozenset(SCORE_NAMES)
_NEVER_ADOPTED = frozenset(
    {"heading_open", "hr", "fence", "html_block", "table_open", "blockquote_open"}
)
"""Elements ``aclarai adopt`` never gives an id, whatever their context: never an adopted
note's block. (Indented code is not among them: with the lines around it, the same text may be a
paragraph's.)"""
_EMBEDS = re.compile(r"!\[\[[^\]]*\]\]")


def decode_note(data: bytes, *, path: str | None = None) -> str:
    """Decode a note's bytes as UTF-8 text, keeping a BOM as a character so bytes round-trip.

    Args:
        data: The file's bytes.
        path: Where they came from, for the error only.

    Raises:
        ParseError: The bytes hold a NUL (binary content) or are not valid UTF-8.
    """
    nul = data.find(b"\0")
    if nul >= 0:
        raise ParseError(f"binary content, not Markdown (NUL byte at offset {nul})", path=path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ParseError(
            f"not UTF-8: invalid byte 0x{data[exc.start]:02x} at offset {exc.start}",
            path=path,
            line=line,
        ) from exc


@dataclass(frozen=True, slots=True)
class ZoneLine:
    """One line of a block's comment zone: a score comment (``score`` set) or anything else."""

    index: int
    score: str | None
    value: float | None


@dataclass(frozen=True, slots=True)
class Marker:
    """Where one id comment and its zone sit, for the rewriter.

    ``index`` is the 0-based line of the id comment, ``start``/``end`` its columns there.
    ``block`` is ``None`` when the id ends no usable block (empty, duplicate, file-level id).
    """

    block_id: str
    version: int
    index: int
    start: int
    end: int
    above: tuple[ZoneLine, ...]
    below: tuple[ZoneLine, ...]
    block: Block | None
    emptied: bool = False
    """An adopted note's block whose text was deleted: its lines are adopt's and go."""


@dataclass(frozen=True, slots=True)
class NoteLayout:
    """A parsed note plus the line positions the rewriter needs.

    ``lines`` is the text split on ``\\n``; a line ending in CRLF keeps its ``\\r``.
    """

    lines: list[str]
    markers: tuple[Marker, ...]
    note: ParsedNote
    block_starts: tuple[int, ...] = ()
    """0-based indexes of the ``block=start`` lines (outside code)."""
    unclaimed: tuple[int, ...] = ()
    """0-based indexes of the text lines after the header that no block holds (headings after
    a ``block=start``, text after the last block, in an adopted note a paragraph typed between
    two blocks): what adopt may still give an id."""
    code: frozenset[int] = frozenset()
    """0-based indexes of the lines inside fenced or indented code."""


def parse_note(text: str) -> ParsedNote:
    """Parse a Tier 1 note into blocks, header metadata, file-level id and problems.

    Never raises on bad content: malformed or unterminated comments, duplicate ids and empty
    blocks become :class:`Problem` entries with their line numbers.
    """
    return scan_note(text).note


def scan_note(text: str) -> NoteLayout:
    """Parse a note and keep where each id comment and its zone sit (see :func:`parse_note`)."""
    lines = text.split("\n")
    header_end, metadata = _read_header(lines)
    code = _code_lines(lines, header_end)
    adopted = not metadata and _has_adopt_mark(lines, code, header_end)
    return _Scanner(lines, code, header_end, metadata, adopted=adopted).run()


def _has_adopt_mark(lines: Sequence[str], code: frozenset[int], start: int) -> bool:
    """Whether a note shows one of adopt's marks (see the module doc)."""
    for index in range(start, len(lines)):
        line = lines[index]
        if "<!--" not in line or index in code:
            continue
        found = scan_line(line)
        if is_block_start(found):
            return True
        marker = _marker_of(line, found)
        if marker is None:
            continue
        # Adopt writes id comments on lines of their own, right after the element's text (a
        # text the user may have deleted since: the id and its anchor are still adopt's).
        if line[: marker.start].strip():
            continue
        before = lines[index - 1] if index > start else ""
        own = _OWN_ID.search(before.rstrip())
        if own is not None and own.group(1) == marker.value:
            return True
        for after in range(index + 1, min(index + 1 + _ZONE_LINES, len(lines))):
            anchor = parse_anchor(lines[after])
            if anchor is not None:
                if anchor == marker.value and (before.strip() or _text_after(lines, after + 1)):
                    return True
            elif _zone_line(after, lines[after], scan_line(lines[after])) is None:
                break
    return False


def only_embeds(paragraph: str) -> bool:
    """Whether a paragraph shows embeds alone (``![[…]]``; its ``^anchor`` lines are no text
    either): adopt gives it no id, and it is no adopted note's block."""
    shown = "\n".join(line for line in paragraph.split("\n") if parse_anchor(line) is None)
    return not _EMBEDS.sub("", shown).strip()


def _text_after(lines: Sequence[str], index: int) -> bool:
    """Whether a line from ``index`` on holds anything: an id with nothing after it is a note's
    file-level id (Tier 1), not an emptied block's."""
    return any(line.strip() for line in lines[index:])


def is_adopt_id(block_id: str) -> bool:
    """Whether ``block_id`` has the form of the ids aclarai makes (``blk-…``), not one a user
    wrote by hand (``summary``)."""
    return _ADOPT_ID.fullmatch(block_id) is not None


def _read_header(lines: Sequence[str]) -> tuple[int, dict[str, object]]:
    """Index of the first line after frontmatter and leading metadata comments, and their dict."""
    metadata: dict[str, object] = {}
    index = 0
    if lines[0].lstrip(_BOM).rstrip() == "---":
        for end in range(1, len(lines)):
            if lines[end].rstrip() in ("---", "..."):
                index = end + 1
                break
    while index < len(lines):
        stripped = lines[index].lstrip(_BOM).strip() if index == 0 else lines[index].strip()
        if stripped:
            comment = _whole_line_comment(stripped)
            if comment is None or comment.kind is not CommentKind.METADATA:
                break
            metadata[str(comment.key)] = decode_metadata_value(str(comment.value))
        index += 1
    return index, metadata


def _whole_line_comment(stripped: str) -> AclaraiComment | None:
    """The comment when a stripped line is exactly one well-closed ``aclarai:`` comment."""
    found = scan_line(stripped)
    if len(found.comments) != 1 or found.unterminated_at is not None:
        return None
    comment = found.comments[0]
    return comment if comment.start == 0 and comment.end == len(stripped) else None


def _code_lines(lines: Sequence[str], start: int) -> frozenset[int]:
    """0-based indexes of lines inside fenced or indented code, at or after ``start``."""
    body = "\n".join(lines[start:])
    if "```" not in body and "~~~" not in body and _INDENTED.search(body) is None:
        return frozenset()
    # markdown-it reads a lone CR as a line break; a space keeps its line numbers equal to ours.
    source = "\n".join(line.rstrip("\r").replace("\r", " ") for line in lines[start:])
    if start == 0:
        # A byte-order mark is no text: "\ufeff```" opens a fence.
        source = source.removeprefix(_BOM)
    code: set[int] = set()
    for token in _markdown().parse(source):
        if token.type in ("fence", "code_block") and token.map is not None:
            code.update(range(start + token.map[0], start + token.map[1]))
    return frozenset(code)


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    # Only block structure matters; skipping inline parsing roughly halves the cost.
    return MarkdownIt("commonmark").enable("table").disable("inline")


def _is_blank(line: str) -> bool:
    return not line or line.isspace()


class _Scanner:
    """One pass over a note's lines, collecting blocks, markers and problems."""

    def __init__(
        self,
        lines: list[str],
        code: frozenset[int],
        header_end: int,
        metadata: dict[str, object],
        *,
        adopted: bool,
    ) -> None:
        self.lines = lines
        self.code = code
        self.header_end = header_end
        self.metadata = metadata
        self.adopted = adopted
        self.blocks: list[Block] = []
        self.markers: list[Marker] = []
        self.problems: list[Problem] = []
        self.seen: set[str] = set()
        self.file_id: str | None = None
        self.unclaimed: list[int] = []
        self.block_starts: list[int] = []

    def run(self) -> NoteLayout:
        lines = self.lines
        count = len(lines)
        pending: list[str] = []
        at: list[int] = []
        """The line index of each entry of ``pending``."""
        legacy: list[ZoneLine] = []
        index = self.header_end
        while index < count:
            line = lines[index]
            if index in self.code or ("<!--" not in line and "^" not in line):
                pending.append(line[:-1] if line.endswith("\r") else line)
                at.append(index)
                legacy = []
                index += 1
                continue
            found = scan_line(line)
            self._report(index, line, found)
            marker = _marker_of(line, found)
            if marker is None:
                zone = _zone_line(index, line, found)
                if zone is not None and zone.score is not None:
                    legacy.append(zone)
                else:
                    legacy = []
                    if zone is None:
                        if _append_text(pending, line, found):
                            at.append(index)
                    elif is_block_start(found):
                        self.block_starts.append(index)
                        self._unclaim(pending, at, len(pending))
                        pending, at = [], []
                index += 1
                continue
            # An id comment that opens its line has no text and no comment before it.
            before = (
                _without_comments(line[: marker.start], found.comments[:-1]) if marker.start else ""
            )
            own_line = _is_blank(before)
            if not own_line:
                pending.append(before)
                at.append(index)
            above = tuple(legacy) if own_line else ()
            if self.adopted:
                first, end = _last_element(pending, bool(at) and at[0] == 0)
                self._unclaim(pending, at, first)
                pending = pending[first:end]
            index = self._end_block(index, marker, pending, above)
            pending, at = [], []
            legacy = []
        self._unclaim(pending, at, len(pending))
        return NoteLayout(
            lines,
            tuple(self.markers),
            ParsedNote(
                tuple(self.blocks),
                self.metadata,
                self.file_id,
                tuple(self.problems),
                adopted=self.adopted,
            ),
            tuple(self.block_starts),
            tuple(self.unclaimed),
            self.code,
        )

    def _unclaim(self, pending: list[str], at: list[int], stop: int) -> None:
        """Record the text lines among the first ``stop`` of ``pending`` as held by no block."""
        kept = zip(pending[:stop], at[:stop], strict=True)
        self.unclaimed.extend(index for text, index in kept if text.strip())

    def _report(self, index: int, line: str, found: LineComments) -> None:
        """Record the malformed and unterminated comments of a line."""
        for comment in found.comments:
            if comment.problem is not None:
                self._problem(ProblemKind.MALFORMED_COMMENT, index, comment.problem)
        if found.unterminated_at is not None:
            self._problem(
                ProblemKind.UNTERMINATED_COMMENT,
                index,
                f"'<!-- aclarai:' at column {found.unterminated_at + 1} is not closed on its line",
            )
        last = len(found.comments) - 1
        for position, comment in enumerate(found.comments):
            if comment.kind is CommentKind.ID and (
                position != last or not _is_blank(line[comment.end :])
            ):
                self._problem(
                    ProblemKind.MALFORMED_COMMENT,
                    index,
                    f"id comment for {comment.value!r} must end its line; ignored",
                )

    def _end_block(
        self,
        index: int,
        marker: AclaraiComment,
        pending: list[str],
        above: tuple[ZoneLine, ...],
    ) -> int:
        """Close the block whose id comment is on line ``index``; return where the next starts."""
        below: list[ZoneLine] = []
        after = index + 1
        while after < len(self.lines) and after not in self.code:
            line = self.lines[after]
            if "<!--" not in line and "^" not in line:
                break
            found = scan_line(line)
            zone = _zone_line(after, line, found)
            if zone is None:
                break
            if found.comments or found.unterminated_at is not None:  # not an ^anchor line
                self._report(after, line, found)
            below.append(zone)
            after += 1
        block_id = str(marker.value)
        if self.header_end == 0 and not self.markers and pending:
            pending[0] = pending[0].lstrip(_BOM)
        text = _join_text(pending)
        emptied = self.adopted and not text
        block = self._make_block(block_id, marker.version, index, text, above, below, after)
        self.markers.append(
            Marker(
                block_id,
                marker.version,
                index,
                marker.start,
                marker.end,
                above,
                tuple(below),
                block,
                emptied,
            )
        )
        return after

    def _make_block(
        self,
        block_id: str,
        version: int,
        index: int,
        text: str,
        above: tuple[ZoneLine, ...],
        below: list[ZoneLine],
        after: int,
    ) -> Block | None:
        if block_id in self.seen:
            self._problem(
                ProblemKind.DUPLICATE_ID,
                index,
                f"id {block_id!r} already used earlier in this note; block skipped",
            )
            return None
        self.seen.add(block_id)
        if not text:
            if not self.adopted and all(_is_blank(line) for line in self.lines[after:]):
                self.file_id = block_id
            else:
                self._problem(
                    ProblemKind.EMPTY_BLOCK, index, f"id {block_id!r} has no text before it"
                )
            return None
        scores = {
            zone.score: zone.value
            for zone in (*above, *below)
            if zone.score is not None and zone.value is not None
        }
        block = Block(block_id, version, text, content_hash(text), index + 1, scores)
        self.blocks.append(block)
        return block

    def _problem(self, kind: ProblemKind, index: int, message: str) -> None:
        self.problems.append(Problem(kind, index + 1, message))


def _zone_line(index: int, line: str, found: LineComments) -> ZoneLine | None:
    """The zone entry when a line is one score/metadata comment or an ``^anchor``."""
    if not found.comments:
        if found.unterminated_at is None and parse_anchor(line) is not None:
            return ZoneLine(index, None, None)
        return None
    if len(found.comments) != 1 or found.unterminated_at is not None:
        return None
    comment = found.comments[0]
    if not (_is_blank(line[: comment.start]) and _is_blank(line[comment.end :])):
        return None
    if comment.kind is CommentKind.SCORE:
        value = comment.value if isinstance(comment.value, float) else None
        return ZoneLine(index, comment.key, value)
    if comment.kind is CommentKind.METADATA:
        return ZoneLine(index, None, None)
    if comment.kind is CommentKind.MALFORMED and comment.key in _SCORE_KEYS:
        return ZoneLine(index, comment.key, None)
    return None


def _marker_of(line: str, found: LineComments) -> AclaraiComment | None:
    """The line's id comment when it is well formed and ends the line."""
    if not found.comments:
        return None
    last = found.comments[-1]
    if last.kind is CommentKind.ID and _is_blank(line[last.end :]):
        return last
    return None


def _append_text(pending: list[str], line: str, found: LineComments) -> bool:
    """Add a line to the utterance with its ``aclarai:`` comments cut out; whether it was."""
    if not found.comments:
        pending.append(line[:-1] if line.endswith("\r") else line)
        return True
    kept = _without_comments(line, found.comments)
    if kept:
        pending.append(kept)
    return bool(kept)


def _last_element(pending: list[str], note_start: bool) -> tuple[int, int]:
    """Where in ``pending`` the last Markdown element starts (a list's last item) and ends: an
    adopted note's block; empty when no text is left (its paragraph was deleted) or when that
    element is none adopt gives an id (a heading, a table, code, a quote, HTML, a paragraph of
    embeds: the paragraph after it was deleted, and it never takes the paragraph's id). Blank
    lines and empty list items right above the id comment belong to no element: a user who
    pressed Enter after a paragraph or a list item has not parted it from its id.
    ``note_start``: ``pending`` starts at the note's first line (BOM and all)."""
    end = len(pending)
    while end and (_is_blank(pending[end - 1]) or _EMPTY_ITEM.match(pending[end - 1])):
        end -= 1
    start = 0
    while start < end and _is_blank(pending[start]):
        start += 1
    if start == end:
        return len(pending), len(pending)
    body = pending[start:end]
    if note_start and start == 0:
        body[0] = body[0].lstrip(_BOM)
    if not (
        body[0][:1].isspace()
        or any(_is_blank(line) or _MAY_START_ELEMENT.match(line) for line in body)
    ):
        return (end, end) if only_embeds("\n".join(body)) else (start, end)
    # markdown-it reads a lone CR as a line break; a space keeps its line numbers equal to ours.
    source = "\n".join(line.replace("\r", " ") for line in body)
    last: int | None = None
    kind = ""
    item: int | None = None
    for token in _markdown().parse(source):
        if token.map is None:
            continue
        if token.level == 0:
            last, kind, item = token.map[0], token.type, None
        elif token.type == "list_item_open" and token.level == 1:
            item = token.map[0]
    found = item if kind.endswith("_list_open") and item is not None else last
    first = start + (found or 0)
    if kind in _NEVER_ADOPTED or (
        kind == "paragraph_open" and only_embeds("\n".join(pending[first:end]))
    ):
        return end, end
    return first, end


def _without_comments(line: str, comments: Sequence[AclaraiComment]) -> str:
    """The line with the given comments cut out and trailing whitespace dropped."""
    parts = []
    position = 0
    for comment in comments:
        parts.append(line[position : comment.start])
        position = comment.end
    parts.append(line[position:])
    return "".join(parts).rstrip()


def _join_text(pending: list[str]) -> str:
    start = 0
    end = len(pending)
    while start < end and _is_blank(pending[start]):
        start += 1
    while end > start and _is_blank(pending[end - 1]):
        end -= 1
    return "\n".join(pending[start:end])
