"""The one grammar of ``aclarai:`` comments and ``^anchor`` lines.

Every regular expression that recognises an ``aclarai:`` comment lives here; the block parser and
the score rewriter call these functions instead of matching comments themselves.

::

    <!-- aclarai:id=blk-q1w2e3 ver=3 -->             id comment (ver optional, missing means 1)
    <!-- aclarai:entailed_score=0.91 -->             score comment (one of SCORE_NAMES, 0..1)
    <!-- aclarai:participants=["alice", "bob"] -->   metadata comment (any other key)
    ^blk-q1w2e3                                      anchor line

``aclarai:`` and the keys ``id``/``ver``/score names are case-insensitive, and any whitespace may
sit inside ``<!-- -->`` and around ``=``. Ids are ASCII letters, digits, ``_`` and ``-``. A
comment must close on the line where it opens; one that does not is reported, never guessed at.

Numbers are bounded so that no comment can break what stores them: ``ver`` is an integer in
0..2**31-1 (:data:`MAX_VERSION`; a write-back at the bound keeps it there), scores are decimals in
0..1. Anything else (``ver=99999999999999999999``, ``ver=-1``, ``entailed_score=1e9``) is
malformed. Metadata values are kept as text; JSON ones are decoded only when they nest less than
:data:`MAX_JSON_DEPTH` deep, so no comment can exhaust the decoder.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from aclarai.parsers.model import SCORE_NAMES

_OPEN = re.compile(r"<!--\s*aclarai:", re.IGNORECASE)
_COMMENT = re.compile(r"<!--\s*aclarai:(.*?)-->", re.IGNORECASE)
_KEY_VALUE = re.compile(r"\s*([A-Za-z][A-Za-z0-9_-]*)\s*=\s*(.*?)\s*", re.DOTALL)
_ID_VALUE = re.compile(r"([A-Za-z0-9_-]+)(?:\s+ver\s*=\s*(\S*))?", re.IGNORECASE)
_BLOCK_ID = re.compile(r"[A-Za-z0-9_-]+")
_VERSION = re.compile(r"[0-9]+")
_SCORE_VALUE = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")
_ANCHOR = re.compile(r"\s*\^([A-Za-z0-9_-]+)\s*")
_WRITTEN_ID = re.compile(r"<!-- aclarai:id=([A-Za-z0-9_-]+) ver=(0|[1-9][0-9]{0,8}) -->")
"""A line that is just an id comment as :func:`format_id_comment` writes it, with a version of at
most nine digits (so within :data:`MAX_VERSION`): the commonest comment line, and unique."""

MAX_VERSION = 2**31 - 1
"""The largest ``ver`` the grammar accepts (a signed 32-bit integer, what any store holds)."""
MAX_JSON_DEPTH = 64
"""JSON metadata nesting deeper than this stays raw text."""

_SCORE_KEYS = frozenset(SCORE_NAMES)
_JSON_STARTS = ("[", "{", '"')
# Real notes repeat the same score and metadata comment lines thousands of times; caching only
# short lines keeps the cache small however long a note's paragraphs are.
_CACHED_LINE_CHARS = 160


class CommentKind(Enum):
    """What an ``aclarai:`` comment is."""

    ID = "id"
    """``id=… [ver=N]``: the marker that ends a block."""
    SCORE = "score"
    """One of :data:`SCORE_NAMES` with a value in 0..1."""
    METADATA = "metadata"
    """Any other ``key=value`` (``title``, ``created_at``, ``participants`` …)."""
    MALFORMED = "malformed"
    """An ``aclarai:`` comment that breaks the grammar; ``problem`` says how."""


@dataclass(frozen=True, slots=True)
class AclaraiComment:
    """One complete ``<!-- aclarai:… -->`` comment found on a line.

    ``start``/``end`` delimit the comment in the line. ``key`` is lower-cased for ids and scores
    and kept as written for metadata; it is also set on a malformed comment whose key was
    recognised (``entailed_score=abc`` has key ``entailed_score``). ``value`` is the block id
    (ID), the float (SCORE), the raw text (METADATA, see :func:`decode_metadata_value`) or
    ``None`` (MALFORMED).
    """

    kind: CommentKind
    start: int
    end: int
    key: str | None
    value: object
    version: int = 1
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class LineComments:
    """The ``aclarai:`` comments of one line and, if any, where an unterminated one opens."""

    comments: tuple[AclaraiComment, ...]
    unterminated_at: int | None


NO_COMMENTS = LineComments((), None)


def scan_line(line: str) -> LineComments:
    """Find every ``aclarai:`` comment on one line.

    Args:
        line: One line of a note, with or without its line ending.

    Returns:
        The comments in order, and the column of an ``<!-- aclarai:`` that never closes on
        this line (``None`` when every comment is closed).
    """
    if "<!--" not in line:
        return NO_COMMENTS
    if line.startswith("<!-- aclarai:id="):
        written = _WRITTEN_ID.fullmatch(line)
        if written is not None:
            # What _scan finds on such a line, without its general grammar or the cache, where
            # ids would only push out the score and metadata lines that do repeat.
            comment = AclaraiComment(
                CommentKind.ID, 0, len(line), "id", written.group(1), int(written.group(2))
            )
            return LineComments((comment,), None)
    if len(line) <= _CACHED_LINE_CHARS:
        return _scan_short_line(line)
    return _scan(line)


@lru_cache(maxsize=4096)
def _scan_short_line(line: str) -> LineComments:
    return _scan(line)


def _scan(line: str) -> LineComments:
    comments = []
    end = 0
    for match in _COMMENT.finditer(line):
        comments.append(_classify(match.group(1), match.start(), match.end()))
        end = match.end()
    unterminated = _OPEN.search(line, end)
    if not comments and unterminated is None:
        return NO_COMMENTS
    return LineComments(tuple(comments), None if unterminated is None else unterminated.start())


def _classify(body: str, start: int, end: int) -> AclaraiComment:
    kind, key, value, version, problem = _classify_body(body)
    return AclaraiComment(kind, start, end, key, value, version, problem)


def _classify_body(body: str) -> tuple[CommentKind, str | None, object, int, str | None]:
    match = _KEY_VALUE.fullmatch(body)
    if match is None:
        return CommentKind.MALFORMED, None, None, 1, "expected key=value after 'aclarai:'"
    key, raw = match.group(1), match.group(2)
    lowered = key.lower()
    if lowered == "id":
        return _classify_id(raw)
    if lowered in _SCORE_KEYS:
        return _classify_score(lowered, raw)
    return CommentKind.METADATA, key, raw, 1, None


def _classify_id(raw: str) -> tuple[CommentKind, str | None, object, int, str | None]:
    match = _ID_VALUE.fullmatch(raw)
    if match is None:
        return (
            CommentKind.MALFORMED,
            "id",
            None,
            1,
            f"bad id {raw!r}: expected letters, digits, '_' and '-', then optional ver=N",
        )
    version = match.group(2)
    if version is None:
        return CommentKind.ID, "id", match.group(1), 1, None
    if _VERSION.fullmatch(version) is None:
        return CommentKind.MALFORMED, "id", None, 1, f"bad ver={version!r}: expected a number"
    # Length first: int() of thousands of digits is slow, then refused.
    digits = version.lstrip("0")
    if len(digits) > len(str(MAX_VERSION)) or int(digits or "0") > MAX_VERSION:
        shown = version if len(version) <= 24 else version[:20] + "…"
        return (
            CommentKind.MALFORMED,
            "id",
            None,
            1,
            f"bad ver={shown!r}: expected a number 0..{MAX_VERSION}",
        )
    return CommentKind.ID, "id", match.group(1), int(digits or "0"), None


def _classify_score(name: str, raw: str) -> tuple[CommentKind, str | None, object, int, str | None]:
    if _SCORE_VALUE.fullmatch(raw) is None or float(raw) > 1.0:
        return CommentKind.MALFORMED, name, None, 1, f"bad {name}={raw!r}: expected a number 0..1"
    return CommentKind.SCORE, name, float(raw), 1, None


def decode_metadata_value(raw: str) -> object:
    """Decode a metadata value: JSON lists, objects and quoted strings; anything else verbatim.

    Bare words stay strings even when they happen to be valid JSON, so ``title=2024`` is the
    title ``"2024"``, not the number 2024.
    """
    if raw.startswith(_JSON_STARTS) and _json_depth(raw) < MAX_JSON_DEPTH:
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _json_depth(raw: str) -> int:
    """An upper bound of how deep ``raw`` nests (brackets inside strings counted too)."""
    if raw.count("[") + raw.count("{") < MAX_JSON_DEPTH:
        return 0
    depth = deepest = 0
    for char in raw:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def next_version(version: int) -> int:
    """The ``ver`` a write-back gives a block: one more, but never over :data:`MAX_VERSION`."""
    return min(version + 1, MAX_VERSION)


BLOCK_START_COMMENT = "<!-- aclarai:block=start -->"
"""A line of its own that says the next block's text starts after it: what comes before it
since the previous block (a heading, a table …) belongs to no block."""


def is_block_start(found: LineComments) -> bool:
    """Whether a line's comments are exactly one ``block=start`` comment."""
    if len(found.comments) != 1 or found.unterminated_at is not None:
        return False
    comment = found.comments[0]
    return (
        comment.kind is CommentKind.METADATA
        and str(comment.key).lower() == "block"
        and str(comment.value).lower() == "start"
    )


def escape_comment_openers(text: str) -> str:
    """``text`` with every ``<!-- aclarai:`` made inert as ``<\\!-- aclarai:`` (Markdown still
    shows ``<!--``), so text from outside can never pose as one of our comments."""
    if "<!--" not in text:
        return text
    return _OPEN.sub(lambda match: "<\\!--" + match.group(0)[4:], text)


def parse_anchor(line: str) -> str | None:
    """The id of a ``^anchor`` line (surrounding whitespace allowed), else ``None``."""
    if "^" not in line:
        return None
    match = _ANCHOR.fullmatch(line)
    return None if match is None else match.group(1)


def is_block_id(text: str) -> bool:
    """Whether ``text`` is a valid block id: letters, digits, ``_`` and ``-``."""
    return _BLOCK_ID.fullmatch(text) is not None


def format_id_comment(block_id: str, version: int) -> str:
    """The canonical id comment, e.g. ``<!-- aclarai:id=blk-x ver=2 -->``.

    Raises:
        ValueError: ``block_id`` is not a valid id or ``version`` is outside 0..MAX_VERSION.
    """
    if not is_block_id(block_id):
        raise ValueError(f"invalid block id {block_id!r}")
    if not 0 <= version <= MAX_VERSION:
        raise ValueError(f"invalid version {version}")
    return f"<!-- aclarai:id={block_id} ver={version} -->"


def format_score_value(value: float) -> str:
    """A score as written in a comment: clamped to 0..1, two decimals.

    Raises:
        ValueError: ``value`` is NaN.
    """
    if math.isnan(value):
        raise ValueError("a score cannot be NaN; use None for a failed evaluation")
    return f"{min(1.0, max(0.0, value)):.2f}"


def format_score_comment(name: str, value: float) -> str:
    """The score comment, e.g. ``<!-- aclarai:entailed_score=0.91 -->``.

    Raises:
        ValueError: ``name`` is not one of :data:`SCORE_NAMES`, or ``value`` is NaN.
    """
    if name not in _SCORE_KEYS:
        raise ValueError(f"unknown score name {name!r}; expected one of {SCORE_NAMES}")
    return f"<!-- aclarai:{name}={format_score_value(value)} -->"
