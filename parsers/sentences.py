"""Sentence splitting for claim extraction and NLI.

One splitter, rule-based and regex-driven: a sentence ends at a full-width ``。``, ``！`` or ``？``
(Japanese and Chinese write no space after them), or at ``.``, ``!``, ``?`` or ``…`` (plus any
closing quotes or brackets) followed by whitespace, unless the word before the full stop is a known
abbreviation (``Dr.``, ``e.g.``, ``Jan.``), an initial (``J. Smith``), a dotted acronym followed
by a lower-case word, or an ellipsis followed by a lower-case word. A blank line always ends a
sentence; a single line break ends one only before a list item, heading or quote line, so
hard-wrapped prose stays whole. Decimals, versions and URLs never split: no whitespace follows
their dots.

pysbd gives similar boundaries on conversational text but costs about 0.3 ms per utterance,
a third of the daemon's whole per-block budget (>= 1,000 blocks/s end to end); this splitter
is about ninety times faster (`benchmarks/offline_speed.py`).
"""

from __future__ import annotations

import re
from itertools import pairwise

NLI_MAX_CHARS = 500
"""Longest sentence :func:`split_for_nli` returns (before short pieces are joined)."""
NLI_MIN_CHARS = 20
"""Shorter sentences are joined to the next one by :func:`split_for_nli`."""

_ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof sr jr st mt ft rev gen col lt sgt capt cmdr gov sen rep hon pres
    vs etc al cf eg ie viz approx appx dept est ed eds
    inc ltd co corp bros assn univ intl natl
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun
    am pm a.m p.m e.g i.e u.s u.k u.n u.s.a ph.d b.a m.a b.sc m.sc
    bzw z.b usw ca evtl ggf inkl vgl d.h u.a z.t sog chr
    env p.ex cf mme mlle
    p.ej aprox sra srta dra pág
    ecc sig dott pag
    bijv o.a e.a enz blz mevr
    """.split()  # noqa: SIM905 - a word list reads better as prose
)
_MONTHS = frozenset(
    """
    january february march april may june july august september october november december
    januar februar märz mai juni juli oktober dezember
    janvier février mars avril juin juillet août septembre octobre novembre décembre
    enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre
    gennaio febbraio aprile maggio giugno luglio settembre ottobre dicembre
    janeiro fevereiro março maio junho julho setembro outubro novembro dezembro
    januari februari maart mei augustus
    """.split()  # noqa: SIM905
)
"""Month names: "bis zum 17. Mai" writes a day with a full stop, and goes on."""
_ORDINAL_OPENERS = frozenset(
    "im zum vom beim ins zur dem den der des seit ab bis frühen späten".split()  # noqa: SIM905
)
"""Words before a German ordinal: "zum 50. Jahrestag", "im 19. Jahrhundert". After any other
word a number ends its sentence ("im Jahr 2012. Die …")."""
_ORDINAL = re.compile(r"(\w+)\s+\d{1,3}$")
_NUMBER_ABBREVIATIONS = frozenset(
    {"no", "nos", "vol", "vols", "fig", "figs", "pp", "ch", "sec", "op"}
)
"""Abbreviations only before a number ("No. 5"); "said no. The" ends a sentence."""
_SENTENCE_ENDING_ABBREVIATIONS = frozenset({"etc", "inc", "ltd", "co", "corp", "al", "chr"})
"""Abbreviations that also end a sentence when a capital follows ("Apple Inc. The ...")."""

# A candidate boundary: terminal punctuation, optional closers, then whitespace.
_BOUNDARY = re.compile(r"([.!?…]+)([\"'”’)\]]*)(\s+)")
# A full-width end mark, with its closing quotes and brackets: always a boundary.
_WIDE_BOUNDARY = re.compile(r"[。！？｡]+[」』）】〕〉》”’\"')\]]*")
_QUOTE_CLOSERS = "」』"
_HIRAGANA = re.compile(r"[\u3041-\u309f]")
_WORD_BEFORE = re.compile(r"([\w.]+)$")
_WORD_AFTER = re.compile(r"\s+(\w+)")
_LOOK_BACK = 16
"""Longer than most words: the look-back a search for the word before a full stop starts with."""
# A line that opens a new unit even without a blank line before it.
_BLOCK_START = re.compile(r"\n[ \t]*(?:[-*+•][ \t]|\d{1,3}[.)][ \t]|#{1,6}[ \t]|>)")
_BLANK_LINE = re.compile(r"\n[ \t]*\n\s*")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences.

    Args:
        text: Any text; Markdown line structure is respected (blank lines and list items
            separate sentences).

    Returns:
        The sentences in order, stripped, none empty. Concatenated, they hold every
        non-whitespace character of ``text`` in its original order.
    """
    if "\n" not in text:
        # One line is one paragraph and one unit.
        unit = text.strip()
        return _split_unit(unit) if unit else []
    sentences: list[str] = []
    for paragraph in _BLANK_LINE.split(text):
        for unit in _split_lines(paragraph):
            sentences.extend(_split_unit(unit))
    return sentences


def split_for_nli(text: str) -> list[str]:
    """Split text into NLI-sized pieces.

    Sentences shorter than :data:`NLI_MIN_CHARS` are joined to the next sentence (the last one
    to the previous sentence); then sentences longer than :data:`NLI_MAX_CHARS` are cut on blank
    lines, then line breaks, then into chunks of at most that many characters (at a space where
    there is one). Short pieces left by cutting join a neighbour only within the limit, so no
    piece is ever longer than :data:`NLI_MAX_CHARS`.

    Args:
        text: Any text.

    Returns:
        The pieces in order, stripped, none empty.
    """
    pieces = [piece for s in _join_short(split_sentences(text)) for piece in _cut_long(s)]
    return _join_short(pieces, limit=NLI_MAX_CHARS)


def _split_lines(paragraph: str) -> list[str]:
    starts = [0, *(m.start() + 1 for m in _BLOCK_START.finditer(paragraph)), len(paragraph)]
    units = (paragraph[a:b].strip() for a, b in pairwise(starts))
    return [u for u in units if u]


def _split_unit(unit: str) -> list[str]:
    if "。" in unit or "！" in unit or "？" in unit or "｡" in unit:
        sentences: list[str] = []
        start = 0
        for match in _WIDE_BOUNDARY.finditer(unit):
            # 「…。」と言った: a quotation closed inside a sentence that goes on.
            if match.group()[-1] in _QUOTE_CLOSERS and _HIRAGANA.match(unit, match.end()):
                continue
            sentences.extend(_split_latin(unit[start : match.end()].strip()))
            start = match.end()
        return [*sentences, *_split_latin(unit[start:].strip())]
    return _split_latin(unit)


def _split_latin(unit: str) -> list[str]:
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(unit):
        end = match.end(2)
        if _is_boundary(unit, match.start(1), match.group(1), unit[match.end() : match.end() + 1]):
            piece = unit[start:end].strip()
            if piece:
                sentences.append(piece)
            start = match.end()
    rest = unit[start:].strip()
    if rest:
        sentences.append(rest)
    return sentences


def _is_boundary(unit: str, punct_at: int, punct: str, following: str) -> bool:
    if not following:
        return True
    if punct != "." and not punct.startswith(("...", "…")):
        return True
    lower_next = following.islower()
    if punct != ".":
        # An ellipsis followed by a lower-case word is a pause, not an end.
        return not lower_next
    match = _word_before(unit, punct_at)
    if match is None:
        return True
    word = match.group(1).lower().strip(".")
    if word.isdigit() and len(word) <= 2 and _next_word(unit, punct_at).lower() in _MONTHS:
        return False
    if word.isdigit() and (lower_next or (following.isupper() and _is_ordinal(unit, punct_at))):
        return False  # "vom 12. bis 14. Juni", "zum 50. Jahrestag"
    if word in _NUMBER_ABBREVIATIONS:
        return not following.isdigit()
    if word in _ABBREVIATIONS:
        # "Inc. The" and "etc. We" end sentences; "Dr. Smith" and "e.g. on" do not.
        return following.isupper() and word in _SENTENCE_ENDING_ABBREVIATIONS
    if len(word) == 1 and word.isalpha():
        # "J. Smith" is an initial; "16 °C. Heb je …" is a temperature that ends a sentence
        return not lower_next and unit[max(0, match.start(1) - 1) : match.start(1)] == "°"
    return not ("." in word and lower_next)


def _is_ordinal(unit: str, punct_at: int) -> bool:
    match = _ORDINAL.search(unit, max(0, punct_at - 24), punct_at)
    return match is not None and match.group(1) in _ORDINAL_OPENERS


def _next_word(unit: str, punct_at: int) -> str:
    match = _WORD_AFTER.match(unit, punct_at + 1)
    return match.group(1) if match else ""


def _word_before(unit: str, end: int) -> re.Match[str] | None:
    """``_WORD_BEFORE`` searched in ``unit[:end]``, looking back only as far as it must.

    A search from the start of the unit costs time in proportion to all the text before the
    full stop, once per full stop, which is quadratic on a long paragraph. One from a few
    characters back finds the same word, unless its match begins where the search began: the
    word may then reach further back, and the whole unit is searched.
    """
    start = max(0, end - _LOOK_BACK)
    match = _WORD_BEFORE.search(unit, start, end)
    if start and match is not None and match.start() == start:
        match = _WORD_BEFORE.search(unit, 0, end)
    return match


def _cut_long(sentence: str) -> list[str]:
    if len(sentence) <= NLI_MAX_CHARS:
        return [sentence]
    for separator in (_BLANK_LINE, re.compile(r"\n")):
        parts = [p.strip() for p in separator.split(sentence) if p.strip()]
        if len(parts) > 1:
            return [piece for part in parts for piece in _cut_long(part)]
    return _chunk(sentence)


def _chunk(text: str) -> list[str]:
    chunks: list[str] = []
    while len(text) > NLI_MAX_CHARS:
        cut = text.rfind(" ", 0, NLI_MAX_CHARS + 1)
        if cut <= 0:
            cut = NLI_MAX_CHARS
        chunks.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        chunks.append(text)
    return chunks


def _join_short(pieces: list[str], limit: int | None = None) -> list[str]:
    joined: list[str] = []
    for piece in pieces:
        if joined and len(joined[-1]) < NLI_MIN_CHARS and _fits(joined[-1], piece, limit):
            joined[-1] = f"{joined[-1]} {piece}"
        else:
            joined.append(piece)
    if len(joined) > 1 and len(joined[-1]) < NLI_MIN_CHARS and _fits(joined[-2], joined[-1], limit):
        joined[-2:] = [f"{joined[-2]} {joined[-1]}"]
    return joined


def _fits(first: str, second: str, limit: int | None) -> bool:
    return limit is None or len(first) + 1 + len(second) <= limit
