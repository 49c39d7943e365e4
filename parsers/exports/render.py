"""A :class:`Conversation` → a Tier 1 note, and the additive update of one already imported.

A rendered note is a header of metadata comments, then one block per utterance::

    <!-- aclarai:title=Sprint planning -->
    <!-- aclarai:created_at=2024-06-03T09:00:00Z -->
    <!-- aclarai:participants=["alice", "bob"] -->
    <!-- aclarai:message_count=2 -->
    <!-- aclarai:source={"format": "slack", "file": "general/2024-06-03.json", "id": "C1"} -->

    alice: text, every line of it
    <!-- aclarai:id=blk-3f7a0c9e12b4d856 ver=1 -->
    ^blk-3f7a0c9e12b4d856

Block ids are ``blk-`` and 16 hex digits (64 bits) of the sha256 of (conversation key,
message id or position): letters, digits and dashes only, as Obsidian wants in a block
reference, and the same on every import of the same export. The conversation key is the
export's own conversation id, else ``sha256:`` of the format, the conversation's start time and
its first message, which stays the same when the conversation grows. Two id-less conversations
that start with the same message at the same time are taken for one.

Message text that would change how the note parses is neutralised, visibly but harmlessly in
Markdown: ``<!-- aclarai:`` becomes ``<\\!-- aclarai:`` and a line that reads as an ``^anchor``
gets a backslash before the caret (both render as typed); a code fence the message leaves open
is closed after it, so the id comment that follows is never inside code. Outside code, what
Obsidian would hide, or let run past the message over the rest of the note, is escaped to show
as typed: every ``<!--`` (``<\\!--``), every ``%%`` (``%\\%``, a comment), and every ``$`` of
each run of two or more in a message that leaves a math block open or runs three ``$``
together (``\\$\\$``).

Every function here is pure.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

from markdown_it import MarkdownIt

from aclarai.parsers.blocks import NoteLayout, parse_note, scan_note
from aclarai.parsers.errors import ParseError
from aclarai.parsers.exports.base import Conversation, Message
from aclarai.parsers.grammar import (
    CommentKind,
    escape_comment_openers,
    format_id_comment,
    scan_line,
)
from aclarai.parsers.reading import _CODE_SPAN
from aclarai.parsers.timestamps import format_utc

BLOCK_PREFIX = "blk-"
_HAZARD = re.compile(r"\r|<!--|\^|```|~~~|%%|\$\$")
_ID_CHARS = 16
_ANCHOR_LIKE = re.compile(r"(\s*)(\^[A-Za-z0-9_-]+\s*)")
_FENCE_START = re.compile(r" {0,3}(?:```|~~~)")
_FENCE_RUN = re.compile(r"(`{3,}|~{3,})")
_PERCENTS = re.compile(r"%(?=%)")
_DOLLARS = re.compile(r"\${2,}")
_MAYBE_CODE = re.compile(r" {0,3}(?:```|~~~)| {4}|\t")
_UNSAFE_NAME = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|#^\[\]]+')
_RESERVED_STEMS = frozenset(
    {"con", "prn", "aux", "nul"}
    | {f"com{i}" for i in range(1, 10)}
    | {f"lpt{i}" for i in range(1, 10)}
)
MAX_NAME_BYTES = 120
"""File names are capped well below the 255 bytes most file systems allow, leaving room for the
collision suffix and for the folder part of a Windows path."""


@dataclass(frozen=True, slots=True)
class SourceRef:
    """What a note's ``source`` header says it was imported from."""

    format: str
    key: str
    """The conversation key (see the module docstring)."""
    part: int = 1
    """Which note of a conversation split into several (see :mod:`.parts`); 1 when not split."""


@dataclass(frozen=True, slots=True)
class Appended:
    """The result of :func:`append_messages`."""

    text: str
    """The new note text; the very ``text`` given when nothing was appended."""
    block_ids: tuple[str, ...]
    """The blocks appended, in order."""


def conversation_key(conversation: Conversation) -> str:
    """The key that recognises a conversation across imports (see the module docstring)."""
    if conversation.id:
        return conversation.id
    first = next((m for m in conversation.messages if m.text.strip()), None)
    parts = [conversation.format, _iso(conversation.created_at) or ""]
    if first is not None:
        parts += [first.speaker, first.text, _iso(first.created_at) or ""]
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()
    return f"sha256:{digest[:32]}"


def block_ids(conversation: Conversation) -> list[str | None]:
    """The block id of each message (``None`` for a message with no text, never rendered).

    A message id the export repeats falls back to its position, so ids stay unique in a note.
    """
    key = conversation_key(conversation)
    ids: list[str | None] = []
    used: set[str] = set()
    for position, message in enumerate(conversation.messages):
        if not message.text.strip():
            ids.append(None)
            continue
        block_id = _block_id(key, message.id or f"#{position}")
        if block_id in used:
            block_id = _block_id(key, f"{message.id}#{position}")
        used.add(block_id)
        ids.append(block_id)
    return ids


def _block_id(conversation_key: str, message_key: str) -> str:
    digest = hashlib.sha256(f"{conversation_key}\0{message_key}".encode()).hexdigest()
    return BLOCK_PREFIX + digest[:_ID_CHARS]


Entry = tuple[Message, str]
"""A message with text and its block id."""


def entries(conversation: Conversation) -> list[Entry]:
    """The messages that become blocks, with their block ids, in order."""
    ids = block_ids(conversation)
    return [(m, i) for m, i in zip(conversation.messages, ids, strict=True) if i is not None]


def render_note(conversation: Conversation) -> str:
    """The whole Tier 1 note of a conversation, LF line endings, one final newline."""
    blocks = entries(conversation)
    lines = [*header_lines(conversation, len(blocks)), ""]
    for message, block_id in blocks:
        lines += [*block_lines(message, block_id), ""]
    return "\n".join(lines)


def header_lines(conversation: Conversation, count: int, part: int | None = None) -> list[str]:
    """The metadata comments of a conversation's note (of its ``part``-th note when split)."""
    source: dict[str, str | int | None] = {
        "format": conversation.format,
        "file": conversation.source_name,
        "id": conversation.id,
    }
    if not conversation.id:
        source["hash"] = conversation_key(conversation)
    if part is not None:
        source["part"] = part
    created = _iso(conversation.created_at or _first_time(conversation.messages))
    title = " ".join(conversation.title.split()) or "Untitled conversation"
    if part is not None:
        title = f"{title} (part {part})"
    lines = [_meta("title", _text_value(title))]
    if created is not None:
        lines.append(_meta("created_at", created))
    lines += [
        _meta("participants", _json_value(list(participants(conversation)))),
        _meta("message_count", str(count)),
        _meta("source", _json_value(source)),
    ]
    return lines


def participants(conversation: Conversation) -> tuple[str, ...]:
    """The reader's participants, else the speakers in order of first appearance."""
    if conversation.participants:
        return tuple(_speaker(p) for p in conversation.participants)
    seen: dict[str, None] = {}
    for message in conversation.messages:
        if message.text.strip():
            seen.setdefault(_speaker(message.speaker), None)
    return tuple(seen)


def _meta(key: str, value: str) -> str:
    return f"<!-- aclarai:{key}={value} -->"


def _json_value(value: object) -> str:
    # JSON escapes newlines; escaping < and > as well keeps "-->" and "<!--" out of the comment.
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def _text_value(text: str) -> str:
    """A metadata value that reads back as ``text``: bare when safe, else a JSON string."""
    clean = " ".join(text.split())
    if not clean.startswith(("[", "{", '"')) and "<" not in clean and ">" not in clean:
        return clean
    return _json_value(clean)


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    # Without the fraction the Unix time is a whole number of seconds, exact as a float.
    return format_utc(moment.replace(microsecond=0).timestamp())


def _first_time(messages: Iterable[Message]) -> datetime | None:
    return next((m.created_at for m in messages if m.created_at is not None), None)


@lru_cache(maxsize=4096)
def _speaker(name: str) -> str:
    clean = " ".join(name.split()).replace(":", "")
    return escape_comment_openers(clean) or "unknown"


def block_text(message: Message) -> str:
    """The text a message's block parses back to: ``speaker: text``, neutralised."""
    text = message.text
    if text == text.strip() and _HAZARD.search(text) is None:
        # Most messages: nothing to trim, neutralise or close.
        return f"{_speaker(message.speaker)}: {text}"
    lines = message.text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    lines = _inert_outside_code([_neutralise(line) for line in lines])
    if _FENCE_START.match(lines[0]):
        # A fence after "speaker: " would be plain text and its closing line would open one.
        lines.insert(0, f"{_speaker(message.speaker)}:")
    else:
        lines[0] = f"{_speaker(message.speaker)}: {lines[0]}"
    return "\n".join(_close_fences(lines))


def _neutralise(line: str) -> str:
    line = escape_comment_openers(line)
    anchor = _ANCHOR_LIKE.fullmatch(line)
    if anchor is not None:
        return f"{anchor.group(1)}\\{anchor.group(2)}"
    return line


def _inert_outside_code(lines: list[str]) -> list[str]:
    """The lines with Obsidian's hiding syntax escaped wherever it is not code (see above)."""
    if not any(mark in line for line in lines for mark in ("<!--", "%%", "$$")):
        return lines
    # Code as rendered: the first line follows "speaker: " unless it opens a fence.
    probe = lines if _FENCE_START.match(lines[0]) else [f"x: {lines[0]}", *lines[1:]]
    code = _code_lines(probe)
    text = "\n".join(line for i, line in enumerate(lines) if i not in code)
    math_open = text.count("$$") % 2 == 1 or "$$$" in text
    return [line if i in code else _inert(line, math_open) for i, line in enumerate(lines)]


def _inert(line: str, math_open: bool) -> str:
    out: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(line):
        out += [_escape_hiding(line[last : span.start()], math_open), span.group()]
        last = span.end()
    out.append(_escape_hiding(line[last:], math_open))
    return "".join(out)


def _escape_hiding(text: str, math_open: bool) -> str:
    text = _PERCENTS.sub(r"%\\", text.replace("<!--", "<\\!--"))
    # Every dollar of a run: one left bare would pair with another as inline math.
    return _DOLLARS.sub(lambda run: "\\$" * len(run.group()), text) if math_open else text


def _code_lines(lines: list[str]) -> set[int]:
    """Indexes of the lines inside fenced or indented code."""
    if not any(_MAYBE_CODE.match(line) for line in lines):
        return set()
    code: set[int] = set()
    for token in _markdown().parse("\n".join(lines)):
        if token.type in ("fence", "code_block") and token.map:
            code.update(range(*token.map))
    return code


def _close_fences(lines: list[str]) -> list[str]:
    """The lines, with a fence they leave open closed, so what follows them is never code.

    A closing line is added when that is enough; in the rare shapes where it is not (a fence
    opened inside a list item) every run of three backticks or tildes is escaped instead.
    """
    if not any("```" in line or "~~~" in line for line in lines):
        return lines
    tokens = [t for t in _markdown().parse("\n".join(lines)) if t.type == "fence" and t.map]
    if tokens and _ends_open(lines, tokens[-1].markup, tokens[-1].map or [0, 0]):
        closed = [*lines, tokens[-1].markup]
        if not _swallows_next_line(closed):
            return closed
    if not _swallows_next_line(lines):
        return lines
    return [_FENCE_RUN.sub(r"\\\1", line) for line in lines]


def _ends_open(lines: list[str], mark: str, span: list[int]) -> bool:
    closing = lines[span[1] - 1].strip() if span[1] - 1 > span[0] else ""
    return not (closing.startswith(mark) and not closing.strip(mark[0]))


def _swallows_next_line(lines: list[str]) -> bool:
    """Whether a comment line at column 0 right after ``lines`` would be inside code."""
    after = len(lines)
    for token in _markdown().parse("\n".join([*lines, "<!-- -->"])):
        if token.type in ("fence", "code_block") and token.map and token.map[1] > after:
            return True
    return False


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark").disable("inline")


def block_lines(message: Message, block_id: str) -> list[str]:
    """A block's lines: its text, its id comment and its ``^anchor``."""
    return [block_text(message), format_id_comment(block_id, 1), f"^{block_id}"]


def source_of(metadata: dict[str, object] | object) -> SourceRef | None:
    """The import source a note's header metadata names, or ``None`` for any other note."""
    if not isinstance(metadata, dict):
        return None
    source = metadata.get("source")
    if not isinstance(source, dict):
        return None
    fmt, key = source.get("format"), source.get("id") or source.get("hash")
    if not isinstance(fmt, str) or not isinstance(key, str):
        return None
    part = source.get("part", 1)
    return SourceRef(fmt, key, part if isinstance(part, int) and part >= 1 else 1)


def header_source(header: str) -> SourceRef | None:
    """:func:`source_of` for the header lines of a note (all a caller needs to read)."""
    return source_of(parse_note(header).metadata)


def append_messages(text: str, conversation: Conversation) -> Appended:
    """The note with only the conversation's messages it lacks added, as new blocks.

    Identity is the block id: a message whose block id is anywhere in the note (even moved or
    edited by the user) is never added again; when every id of the conversation is written
    somewhere in the note in an id comment, the note is taken as complete without parsing.
    Every existing byte is kept, in order: the new blocks are inserted right after the last
    block's comment zone, so text the user wrote below the last block stays below it, on its
    own, and is never taken into a new block. They use the note's own line ending (CRLF when
    its first line ends so); a blank line comes before each, and one after the last when the
    user's text follows without one.

    The header's ``message_count`` is updated only when its line is exactly as rendered here
    (``<!-- aclarai:message_count=N -->`` on its own line in the header); then only its digits
    change. Otherwise the header is left alone.

    Raises:
        ParseError: the new blocks would not read back as blocks (a note with no block left
            whose end is open code or the user's text); nothing is added.
    """
    blocks = entries(conversation)
    return append_entries(text, blocks, len(blocks))


def append_entries(text: str, blocks: list[Entry], count: int) -> Appended:
    """:func:`append_messages` for given blocks; ``count`` is the note's new ``message_count``."""
    written = written_ids(text)
    if all(block_id in written for _, block_id in blocks):
        # Re-importing an unchanged export is the common case: no parse needed.
        return Appended(text, ())
    layout = scan_note(text)
    present = {marker.block_id for marker in layout.markers}
    new = [(message, block_id) for message, block_id in blocks if block_id not in present]
    if not new:
        return Appended(text, ())
    newline = "\r\n" if layout.lines[0].endswith("\r") else "\n"
    head, rest = _split_after_last_zone(text, layout)
    head = _with_count(head, layout.lines, count)
    if not head.endswith("\n"):
        head += newline
    chunk = "".join(
        newline + newline.join(block_lines(message, block_id)) + newline
        for message, block_id in new
    )
    if rest.strip(" \t\r\n") and not rest.startswith(("\n", "\r\n")):
        chunk += newline
    result = head + chunk + rest
    parsed = {block.id: block.text for block in parse_note(result).blocks}
    for message, block_id in new:
        if parsed.get(block_id) != block_text(message):
            raise ParseError(
                "cannot add the new messages: the note has no block left and its end would "
                "run into them (open code or other text); add a blank block or remove it",
                block_id=block_id,
            )
    return Appended(result, tuple(block_id for _, block_id in new))


def written_ids(text: str) -> set[str]:
    """Every block id written in a note's id comments, in one pass (code included)."""
    ids: set[str] = set()
    for line in text.split("\n"):
        if "aclarai:id=" in line:
            for comment in scan_line(line).comments:
                if comment.kind is CommentKind.ID:
                    ids.add(str(comment.value))
    return ids


def _split_after_last_zone(text: str, layout: NoteLayout) -> tuple[str, str]:
    """``text`` cut at the start of the line after the last block's comment zone."""
    if not layout.markers:
        return text, ""
    last = layout.markers[-1]
    line = last.index + 1 + len(last.below)
    offset = sum(len(part) + 1 for part in layout.lines[:line])
    return text[:offset], text[offset:]


def _with_count(text: str, lines: list[str], count: int) -> str:
    """``text`` with the header's ``message_count`` digits replaced, if its line is ours."""
    offset = 0
    for line in lines:
        bare = line.removesuffix("\r")
        if bare.strip() and not bare.startswith("<!--"):
            break
        found = scan_line(bare)
        if len(found.comments) == 1 and found.comments[0].key == "message_count":
            value = str(found.comments[0].value)
            if value.isdigit() and bare == f"<!-- aclarai:message_count={value} -->":
                start = offset + len("<!-- aclarai:message_count=")
                return text[:start] + str(count) + text[start + len(value) :]
        offset += len(line) + 1
    return text


def note_file_name(conversation: Conversation) -> str:
    """``2024-06-03 Sprint planning.md``: the start date (UTC) and the title, safe everywhere."""
    iso = _iso(conversation.created_at or _first_time(conversation.messages))
    date = iso[:10] if iso is not None else "undated"
    return safe_file_name(f"{date} {conversation.title or 'Untitled conversation'}") + ".md"


def safe_file_name(stem: str, *, max_bytes: int = MAX_NAME_BYTES) -> str:
    """A file name stem valid on Linux, macOS and Windows and linkable in Obsidian.

    Characters no file system or Obsidian link accepts (``/ \\ : * ? " < > | # ^ [ ]``, control
    characters) become spaces; runs of whitespace collapse; leading dots and spaces (a hidden
    file) and trailing dots and spaces (Windows drops them) go; a reserved Windows device name
    gets a ``_`` after it; the UTF-8 length is capped at ``max_bytes`` on a character boundary.
    """
    clean = " ".join(_UNSAFE_NAME.sub(" ", unicodedata.normalize("NFC", stem)).split())
    clean = clean.lstrip(". ")
    encoded = clean.encode("utf-8")[:max_bytes]
    clean = encoded.decode("utf-8", errors="ignore").rstrip(". ")
    if clean.split(".")[0].lower() in _RESERVED_STEMS:
        clean = f"{clean}_"
    return clean or "conversation"


def numbered_name(name: str, number: int) -> str:
    """``name.md`` with `` (number)`` before the extension: the name for the number-th collision."""
    stem, dot, ext = name.rpartition(".")
    return f"{stem} ({number}){dot}{ext}" if dot else f"{name} ({number})"
