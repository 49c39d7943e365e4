"""A question as the index reads it: FTS5 expressions of its words, built so that no input can
be a syntax error.

Every term is quoted (FTS5 reads a quoted string as words, whatever its characters), function
words are left out (they match most blocks and say little about any), and a word of six letters
or more also matches its first letters as a prefix, so "charities" finds "charity" and
"discounted" finds "discount" without a stemmer for each language. Chinese, Japanese and Korean
runs become their overlapping three-character pieces for the trigram table.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from aclarai.agents import function_words, language_of

MAX_QUERY_CHARS = 2000
"""Longer input is cut here: a question, not a document (a 100 KB query is read as its start)."""
MAX_TERMS = 24
MAX_WORD_CHARS = 64
"""A longer run of letters is no word a note holds (a hash, a pasted blob): it is not asked."""

_WORD = re.compile(r"\w+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_PREFIX_FROM = 6
_COMBINING = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
"""The combining marks NFKD splits accents into (Latin, Greek, Cyrillic …)."""


@dataclass(frozen=True, slots=True)
class IndexQuery:
    """What to ask the two word tables; an empty expression asks nothing."""

    words: str
    grams: str
    word_terms: tuple[str, ...]
    """The query's content words, folded as the index folds them."""
    gram_terms: tuple[str, ...]
    """The trigrams of its CJK runs."""

    @property
    def empty(self) -> bool:
        return not self.words and not self.grams


def fold(text: str) -> str:
    """Lowercased, accents dropped: what ``unicode61 remove_diacritics 2`` makes of words."""
    if text.isascii():
        return text.lower()
    # Accents off a decomposed text (compatibility forms too: "ﬁ", "²"), then composed again:
    # Hangul syllables and kana with their voicing marks (が) come back whole, as the index and
    # the question's trigrams hold them.
    bare = _COMBINING.sub("", unicodedata.normalize("NFKD", text.lower()))
    return unicodedata.normalize("NFC", bare)


def words_of(text: str) -> set[str]:
    """The folded words of ``text``, as the index splits them."""
    return set(_WORD.findall(fold(text)))


def covers(words: set[str], term: str) -> bool:
    """Whether a block of these words holds ``term``, as its query expression matches."""
    if term in words:
        return True
    if not has_prefix(term):
        return False
    start = stem(term)
    return any(w.startswith(start) for w in words)


def index_query(text: str) -> IndexQuery:
    """The FTS5 expressions for ``text`` (any string: never raises)."""
    text = text[:MAX_QUERY_CHARS]
    cjk = _CJK_RUN.findall(text)
    rest = fold(_CJK_RUN.sub(" ", text))
    words = [w for w in _WORD.findall(rest) if len(w) <= MAX_WORD_CHARS]
    skip = _skipped(language_of(rest)) if words else frozenset()
    terms = list(dict.fromkeys(w for w in words if w not in skip and (len(w) > 1 or w.isdigit())))
    if not terms:
        # A question of function words only ("what is it?") still asks its words.
        terms = list(dict.fromkeys(w for w in words if len(w) > 1))
    terms = terms[:MAX_TERMS]
    grams = list(dict.fromkeys(g for run in cjk for g in _trigrams(run)))[: MAX_TERMS * 2]
    return IndexQuery(
        words=" OR ".join(_term(t) for t in terms),
        grams=" OR ".join(_quote(g) for g in grams),
        word_terms=tuple(terms),
        gram_terms=tuple(grams),
    )


def word_expression(terms: Sequence[str], frequencies: Mapping[str, int], most: int) -> str:
    """The FTS5 expression that finds a question's candidates without ranking every block that
    holds one of its commonest words (on a large vault, most of a search's time).

    Args:
        terms: The question's words (:attr:`IndexQuery.word_terms`).
        frequencies: Blocks holding each word, and each stem's ``stem*`` (all words it starts).
        most: A word held by more blocks is common.

    Returns:
        The words held by at most ``most`` blocks, each with its stem unless the stem is common,
        OR'd; when every word is common, the three rarest AND'd (they still rank the blocks that
        hold them all); empty for no terms.
    """
    parts = []
    for term in terms:
        if frequencies.get(term, 0) > most:
            continue
        if has_prefix(term) and frequencies.get(stem(term) + "*", 0) <= most:
            parts.append(f"({_quote(term)} OR {_quote(stem(term))}*)")
        else:
            parts.append(_quote(term))
    if parts:
        return " OR ".join(parts)
    rarest = sorted(terms, key=lambda t: frequencies.get(t, 0))[:3]
    return " AND ".join(_quote(t) for t in rarest)


def has_prefix(word: str) -> bool:
    """Whether a query word also matches the words its stem starts (long words, not numbers)."""
    return len(word) >= _PREFIX_FROM and not word.isdigit()


@lru_cache(maxsize=16)
def _skipped(lang: str) -> frozenset[str]:
    return frozenset(fold(w) for w in function_words("en") | function_words(lang))


def _trigrams(run: str) -> list[str]:
    if len(run) <= 3:
        # The trigram table finds nothing shorter than three characters.
        return [run] if len(run) == 3 else []
    return [run[i : i + 3] for i in range(len(run) - 2)]


def _term(word: str) -> str:
    if has_prefix(word):
        return f"({_quote(word)} OR {_quote(stem(word))}*)"
    return _quote(word)


def stem(word: str) -> str:
    """The first letters a long query word also matches as a prefix."""
    return word[: max(5, len(word) - 3)]


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'
