"""The text a reader sees: one rendering of Obsidian Markdown to plain text.

Grading compares words, so it must compare the words a reader sees, not the syntax around them:
``The app has no [[Ribbon]].`` says what ``The app has no Ribbon.`` says. :func:`reader_text`
renders a note or a block to that text; :func:`prose_text` keeps only its prose, the part that
can state facts; :func:`line_kinds` tells which lines are which.

How each construct renders (what Obsidian's reading view shows, as words):

- ``[[Target]]`` → ``Target``; ``[[Target|alias]]`` → ``alias``; ``[[Note#Heading]]`` →
  ``Note > Heading`` and ``[[#Heading]]`` → ``Heading``, as Obsidian labels them; a block
  reference ``[[Note#^id]]`` → ``Note`` (the id is an address, not words). Embeds ``![[…]]`` and
  images ``![alt](url)`` → nothing (the reader sees a picture or another note, not these words).
- ``[text](url)`` and ``[text][ref]`` → ``text``; ``<https://…>`` → the URL; inline HTML tags
  go, their text stays; HTML entities are decoded.
- Emphasis, strong, ``~~strikethrough~~`` and ``==highlights==`` → their text; inline code and
  inline math → their text without the backticks or dollars.
- List markers, task boxes, ``>`` quote marks and heading ``#``s go; a callout header
  ``> [!note] Title`` → ``Title`` (a bare ``> [!note]`` → nothing); footnote markers ``[^1]``,
  inline footnotes ``^[…]`` and block ids ``^id`` go, a footnote definition keeps its text.
- Backslash escapes → the character; typographic quotes → straight (``It’s`` → ``It's``,
  ``“x”`` → ``"x"``).
- ``%%comments%%`` and ``<!-- comments -->`` (also over several lines; inside inline code
  they show as typed), front matter, thematic breaks, table rules and link reference
  definitions → nothing. Tags (``#tag``) stay as written: the reader sees them in the sentence.

A list item, heading, callout title, quote and each paragraph starts a new paragraph of the
output (paragraphs are separated by a blank line), so that sentences never run from one item
into the next. Code, math and HTML blocks are kept by :func:`reader_text` (their text is what
the reader sees) and left out by :func:`prose_text`, with embeds and task items: they never
state a claim. Both functions are total (any string in, never an exception) and cheap: a line
without any Markdown character is copied as it is.
"""

from __future__ import annotations

import html
import re
from enum import Enum

__all__ = ["LineKind", "line_kinds", "prose_text", "reader_text"]


class LineKind(Enum):
    """What one line of Markdown is, to a reader."""

    PROSE = "prose"
    """Running text: a paragraph, list item, heading, quote or callout line."""
    TASK = "task"
    """A task list item (``- [ ] Call the plumber``): a to-do, not a statement."""
    BLANK = "blank"
    """Empty or whitespace only."""
    CODE = "code"
    """A fenced code block (its fence lines included) or an indented code block."""
    MATH = "math"
    """A ``$$`` display-math block, delimiters included (blank lines inside do not end it)."""
    HTML = "html"
    """An HTML block: a block-level tag or a tag alone on its line, up to the next blank line."""
    COMMENT = "comment"
    """Wholly inside a ``%%`` or ``<!-- -->`` comment."""
    FRONT_MATTER = "front_matter"
    """The YAML properties between ``---`` lines at the start of a note."""
    EMBED = "embed"
    """Nothing but embeds (``![[note]]``, ``![](image.png)``)."""
    MARKUP = "markup"
    """Shows no words: a thematic break, table rule, link reference definition or ``^id``."""


_RENDERED = frozenset({LineKind.PROSE, LineKind.TASK})
_KEPT_AS_IS = frozenset({LineKind.CODE, LineKind.MATH, LineKind.HTML})

# A line holding none of these characters, and opening with none of these starts, is plain
# text: no syntax this module renders can be in it. Two patterns, since one with alternatives
# scans several times slower.
_SYNTAX_CHARACTER = re.compile(r"[\[*_`\\<&$^=~’‘“”„‚‛\ufeff]")
_SYNTAX_START = re.compile(r"[\s>#+-]|\d{1,9}[.)]")

_QUOTES_PREFIX = re.compile(r"^(?:[ \t]{0,3}>[ \t]?)+")
_CALLOUT = re.compile(r"^\[![^\]\n]*\][+-]?[ \t]*")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}(?:[ \t]+|$)")
_HEADING_CLOSE = re.compile(r"(?<![ \t])[ \t]+#+[ \t]*$")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_TASK_BOX = re.compile(r"\[.\](?:[ \t]+|$)")
_FOOTNOTE_DEFINITION = re.compile(r"^\[\^[^\]\s]+\]:[ \t]*")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_MATH_FENCE = "$$"
# CommonMark's HTML blocks: a block-level tag opens one anywhere, any other tag only alone on
# its line ("<span>Warning</span> the server is down." is a paragraph).
_HTML_BLOCK = re.compile(
    r"^[ \t]{0,3}(?:</?(?:address|article|aside|base|basefont|blockquote|body|caption|center|col"
    r"|colgroup|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame"
    r"|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes"
    r"|ol|optgroup|option|p|param|pre|script|search|section|style|summary|table|tbody|td|textarea"
    r"|tfoot|th|thead|title|tr|track|ul|video|audio|svg|canvas)(?:[\s/>]|$)"
    r"|</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>[ \t]*$)",
    re.I,
)
_EMBED_LINE = re.compile(r"^[ \t]*(?:(?:!\[\[[^\[\]\n]*\]\]|!\[[^\]\n]*\]\([^)\n]*\))[ \t]*)+$")
_MARKUP_LINE = re.compile(
    r"^[ \t]{0,3}(?:(?:[-*_][ \t]*){3,}"  # thematic break
    r"|\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?"  # table rule
    r"|\|?[ \t]*:?-{3,}:?[ \t]*\|"  # one-column table rule
    r"|\[[^\]^\n][^\]\n]*\]:[ \t]+\S.*"  # link reference definition
    r"|\^[A-Za-z0-9-]+)[ \t]*$"  # a block id on its own line
)
_INDENTED = re.compile(r"^(?: {4}|[ \t]{0,3}\t)")
_FRONT_MATTER_OPEN = re.compile(r"^---[ \t]*$")
_FRONT_MATTER_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$")

_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_ESCAPED_BASE = 0xE000
"""Escaped characters hide as private-use characters while the syntax is rendered."""
_ESCAPED = re.compile("[\ue021-\ue07e]")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
# An embed alone in brackets takes them along: 「（![[icon.svg]]）」 shows an icon, not "（）".
_EMBED = re.compile(r"[（(][ \t]*!\[\[[^\[\]\n]*\]\][ \t]*[）)]|!\[\[[^\[\]\n]*\]\]")
_WIKILINK = re.compile(r"\[\[([^\[\]|\ue07c\n]*)(?:[|\ue07c]([^\[\]\n]*))?\]\]")
# A link's destination, and its optional title, bounded so that a line of many unclosed
# links is read in linear time.
_DESTINATION = (
    r"\((?:<[^<>\n]{0,500}>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)"
    r"(?:[ \t]+(?:\"[^\"\n]{0,500}\"|'[^'\n]{0,500}'|\([^()\n]{0,500}\)))?[ \t]*\)"
)
_IMAGE = re.compile(
    rf"[（(][ \t]*!\[[^\[\]\n]*\](?:{_DESTINATION}|\[[^\[\]\n]*\])[ \t]*[）)]"
    rf"|!\[[^\[\]\n]*\](?:{_DESTINATION}|\[[^\[\]\n]*\])"
)
_LINK = re.compile(rf"\[([^\[\]\n]*)\]{_DESTINATION}")
_FOOTNOTE = re.compile(r"\[\^[^\[\]\s]+\]|\^\[[^\[\]\n]*\]")
_REFERENCE_LINK = re.compile(r"\[([^\[\]\n]+)\]\[[^\[\]\n]*\]")
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto|obsidian):[^<>\s]+|[^<>\s@]+@[^<>\s@]+\.\w+)>")
_LINE_BREAK_TAG = re.compile(r"<br[ \t]*/?>", re.I)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_BLOCK_ID = re.compile(r"(?<![ \t])[ \t]+\^[A-Za-z0-9-]+[ \t]*$")
_DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$")
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?=[^\s$])([^$\n]*?[^\s$\\])\$(?![\d$])")
# The text inside emphasis holds no delimiter of its own kind (nested emphasis is rendered by a
# second pass), so that a line of many unclosed delimiters is read in linear time.
_HIGHLIGHT = re.compile(r"==(?=\S)((?:[^=]|=(?!=))+?)(?<=\S)==")
_STRIKE = re.compile(r"~~(?=\S)((?:[^~]|~(?!~))+?)(?<=\S)~~")
_STAR = re.compile(r"(\*{1,3})(?=[^\s*])([^*]+?)(?<=[^\s*])\1(?!\*)")
_UNDERSCORE = re.compile(r"(?<![\w\\])(_{1,3})(?=[^\s_])([^_]+?)(?<=[^\s_])\1(?!\w)")
_QUOTES = str.maketrans({"’": "'", "‘": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"'})
_PARAGRAPH_BREAKS = re.compile(r"\n{3,}")
_SPACES = re.compile(r"  +")


def reader_text(markdown: str) -> str:
    """The text a reader of the rendered Markdown sees (see the module docstring).

    Args:
        markdown: A note, a block or a claim; anything that is not a string renders as "".

    Returns:
        Plain text: paragraphs separated by one blank line, no trailing spaces, stripped.
    """
    return _render(markdown, prose_only=False)


def prose_text(markdown: str, *, code_spans: bool = False) -> str:
    """Like :func:`reader_text`, without the parts that never state a claim.

    Code and math blocks, HTML blocks, comments, front matter, embeds and task items are left
    out; where one stood, a paragraph ends.

    Args:
        markdown: A note or a block.
        code_spans: Keep inline code as written, backticks included. A claim drawn from this
            text renders again to what the reader saw: ``the `![[File.base]]` syntax`` reads
            as its literal content, where the bare ``![[File.base]]`` would read as an embed.

    Returns:
        The rendered prose, "" when there is none.
    """
    return _render(markdown, prose_only=True, code_spans=code_spans)


def line_kinds(markdown: str) -> list[LineKind]:
    """The kind of each line of ``markdown`` (as :meth:`str.split` on ``"\\n"`` cuts it).

    A line partly inside a comment (``text %% note %%``) is of the kind of its visible rest.
    """
    if not isinstance(markdown, str):
        return []
    return [kind for kind, _ in _classify(markdown.split("\n"))]


def _render(markdown: object, *, prose_only: bool, code_spans: bool = False) -> str:
    if not isinstance(markdown, str) or not markdown:
        return ""
    if "\n" not in markdown and "%" not in markdown and _plain(markdown):
        # Most blocks of a conversation are one plain line.
        text = markdown.strip()
        return _SPACES.sub(" ", text) if "  " in text else text
    return _render_lines(markdown, prose_only=prose_only, code_spans=code_spans)


def _render_lines(markdown: str, *, prose_only: bool, code_spans: bool) -> str:
    out: list[str] = []
    previous_quote = 0
    previous_heading = False
    for kind, line in _classify(markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")):
        if kind in _RENDERED and not (prose_only and kind is LineKind.TASK):
            text, quote, starts = _render_line(line, code_spans)
            if starts or previous_heading or quote != previous_quote:
                out.append("")
            previous_quote, previous_heading = quote, starts in ("heading", "callout")
            if text:
                out.append(text)
            elif starts:
                out.append("")
            continue
        previous_heading = False
        # Whatever is left out ends the paragraph around it; fence lines end the code's.
        out.append(
            _kept_line(kind, line).rstrip() if kind in _KEPT_AS_IS and not prose_only else ""
        )
    return _PARAGRAPH_BREAKS.sub("\n\n", "\n".join(out)).strip()


def _plain(line: str) -> bool:
    return not _SYNTAX_CHARACTER.search(line) and not _SYNTAX_START.match(line)


def _kept_line(kind: LineKind, line: str) -> str:
    line = _strip_quotes(line)
    if kind is LineKind.CODE:
        return "" if _FENCE.match(line) else line
    if kind is LineKind.MATH:
        return line.replace(_MATH_FENCE, "")
    return _TAG.sub("", line)


def _classify(lines: list[str]) -> list[tuple[LineKind, str]]:
    """Each line's kind, and its text with comments cut out."""
    result: list[tuple[LineKind, str]] = []
    fence = ""
    in_math = in_html = in_list = False
    comment = ""  # the closer of the comment the line starts in: "%%", "-->" or ""
    start = 0
    if lines and lines[0].startswith("\ufeff"):
        # A byte-order mark is no text: "\ufeff# Title" is a heading.
        lines = [lines[0][1:], *lines[1:]]
    if lines and _FRONT_MATTER_OPEN.match(lines[0]):
        close = next((i for i in range(1, len(lines)) if _FRONT_MATTER_CLOSE.match(lines[i])), 0)
        result.extend((LineKind.FRONT_MATTER, line) for line in lines[: close + 1] if close)
        start = close + 1 if close else 0
    previous = LineKind.BLANK
    for line in lines[start:]:
        body = _strip_quotes(line)
        if fence:
            if body.strip().startswith(fence) and not body.strip().strip(fence[0]):
                fence = ""
            result.append((LineKind.CODE, line))
            continue
        if in_math:
            in_math = _MATH_FENCE not in body
            result.append((LineKind.MATH, line))
            continue
        if comment or "%%" in line or "<!--" in line:
            line, comment = _uncomment(line, comment)
            if not line.strip():
                result.append((LineKind.COMMENT, line))
                continue
            body = _strip_quotes(line)
        kind = _line_kind(line, body, previous, in_list, in_html)
        if kind is LineKind.CODE and (opened := _FENCE.match(body)):
            fence = opened.group(1)
        elif kind is LineKind.MATH:
            in_math = body.count(_MATH_FENCE) == 1
        in_html = kind is LineKind.HTML
        if kind is not LineKind.BLANK:
            in_list = (kind in _RENDERED and bool(_LIST_ITEM.match(body))) or (
                in_list and bool(_INDENTED.match(line))
            )
        previous = kind
        result.append((kind, line))
    return result


def _line_kind(line: str, body: str, previous: LineKind, in_list: bool, in_html: bool) -> LineKind:
    if not body.strip():
        return LineKind.BLANK
    if in_html:
        return LineKind.HTML
    if _FENCE.match(body):
        return LineKind.CODE
    if body.lstrip().startswith(_MATH_FENCE):
        return LineKind.MATH
    indented_code = previous in (LineKind.BLANK, LineKind.CODE) and not in_list
    if indented_code and _INDENTED.match(line) and not _LIST_ITEM.match(line):
        return LineKind.CODE
    if _HTML_BLOCK.match(body):
        return LineKind.HTML
    if _EMBED_LINE.match(body):
        return LineKind.EMBED
    if _MARKUP_LINE.match(body):
        return LineKind.MARKUP
    item = _LIST_ITEM.match(body)
    if item and _TASK_BOX.match(body, item.end()):
        return LineKind.TASK
    return LineKind.PROSE


def _strip_quotes(line: str) -> str:
    prefix = _QUOTES_PREFIX.match(line)
    return line[prefix.end() :] if prefix else line


def _uncomment(line: str, closer: str) -> tuple[str, str]:
    """The line without its comment parts, and the closer of a comment still open at its end."""
    kept: list[str] = []
    at = 0
    # Where the next opener of each kind is, and the next code span (which shows an opener as
    # typed); searched again only once passed, so that a line of many comments is read once.
    percent = angle = -1
    span: re.Match[str] | None = None
    spans = "`" in line
    while at <= len(line):
        if closer:
            end = line.find(closer, at)
            if end < 0:
                return "".join(kept), closer
            at, closer = end + len(closer), ""
            continue
        if percent < at:
            percent = line.find("%%", at)
            if percent < 0:
                percent = len(line) + 1
        if angle < at:
            angle = line.find("<!--", at)
            if angle < 0:
                angle = len(line) + 1
        begin = min(percent, angle)
        if begin > len(line):
            kept.append(line[at:])
            break
        if spans and (span is None or span.start() < at):
            span = _CODE_SPAN.search(line, at)
            spans = span is not None
        if span is not None and span.start() < begin:
            kept.append(line[at : span.end()])
            at = span.end()
            continue
        kept.append(line[at:begin])
        closer = "%%" if begin == percent else "-->"
        at = begin + (2 if closer == "%%" else 4)
    return "".join(kept), closer


def _render_line(line: str, code_spans: bool = False) -> tuple[str, int, str]:
    """A prose line's text, its quote depth, and what it starts ("" for a continuation)."""
    if _plain(line):
        text = line.rstrip()
        return (_SPACES.sub(" ", text) if "  " in text else text), 0, ""
    quote = 0
    if prefix := _QUOTES_PREFIX.match(line):
        line, quote = line[prefix.end() :], prefix.group().count(">")
    starts = ""
    callout = _CALLOUT.match(line) if quote else None
    if callout:
        line, starts = line[callout.end() :], "callout"
    elif heading := _HEADING.match(line):
        line, starts = _HEADING_CLOSE.sub("", line[heading.end() :]), "heading"
    elif item := _LIST_ITEM.match(line):
        line, starts = line[item.end() :], "item"
        if box := _TASK_BOX.match(line):
            line = line[box.end() :]
    elif footnote := _FOOTNOTE_DEFINITION.match(line):
        line, starts = line[footnote.end() :], "footnote"
    text = _render_inline(line, code_spans).strip()
    return (_SPACES.sub(" ", text) if "  " in text else text), quote, starts


def _render_inline(text: str, code_spans: bool = False) -> str:
    """The inline Markdown of one line, rendered (links, emphasis, code, escapes, quotes)."""
    if not _SYNTAX_CHARACTER.search(text):
        return text
    escaped = "\\" in text
    if escaped:
        text = _ESCAPE.sub(lambda m: chr(_ESCAPED_BASE + ord(m.group(1))), text)
    if "`" in text:
        pieces: list[str] = []
        at = 0
        for span in _CODE_SPAN.finditer(text):
            pieces.append(_markup(text[at : span.start()]))
            code = span.group() if code_spans else _code_text(span.group(2))
            pieces.append(_unhide(code, keep_backslash=True))
            at = span.end()
        pieces.append(_markup(text[at:]))
        text = "".join(pieces)
    else:
        text = _markup(text)
    return _unhide(text, keep_backslash=False) if escaped else text


def _code_text(code: str) -> str:
    return code[1:-1] if len(code) > 2 and code[0] == code[-1] == " " else code


def _unhide(text: str, *, keep_backslash: bool) -> str:
    prefix = "\\" if keep_backslash else ""
    return _ESCAPED.sub(lambda m: prefix + chr(ord(m.group()) - _ESCAPED_BASE), text)


def _markup(text: str) -> str:
    if "[" in text:
        if "[[" in text:
            text = _EMBED.sub("", text)
            text = _WIKILINK.sub(_wikilink_text, text)
        if "](" in text or "][" in text:
            text = _IMAGE.sub("", text)
            text = _LINK.sub(r"\1", text)
        if "^" in text:
            text = _FOOTNOTE.sub("", text)
        if "][" in text:
            text = _REFERENCE_LINK.sub(r"\1", text)
    elif "^[" in text:
        text = _FOOTNOTE.sub("", text)
    if "<" in text:
        text = _AUTOLINK.sub(r"\1", text)
        text = _LINE_BREAK_TAG.sub(" ", text)
        text = _TAG.sub("", text)
    if "^" in text:
        text = _BLOCK_ID.sub("", text)
    if "$" in text:
        text = _DISPLAY_MATH.sub(r"\1", text)
        text = _INLINE_MATH.sub(r"\1", text)
    if "==" in text:
        text = _HIGHLIGHT.sub(r"\1", text)
    if "~~" in text:
        text = _STRIKE.sub(r"\1", text)
    if "*" in text:
        # Twice, for emphasis nested in strong ("**a *b* c**").
        text = _STAR.sub(r"\2", _STAR.sub(r"\2", text))
    if "_" in text:
        text = _UNDERSCORE.sub(r"\2", _UNDERSCORE.sub(r"\2", text))
    if "&" in text and ";" in text:
        text = html.unescape(text)
    return text.translate(_QUOTES)


def _wikilink_text(match: re.Match[str]) -> str:
    alias = (match.group(2) or "").strip()
    if alias:
        return alias
    note, *anchors = match.group(1).split("#")
    headings = [a.strip() for a in anchors if a.strip() and not a.strip().startswith("^")]
    return " > ".join(part for part in (note.strip(), *headings) if part)
