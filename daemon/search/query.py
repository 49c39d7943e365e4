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
from dataclasses import dataclass
from functools import lru_cache

from aclarai.agents.offline.features import STOPWORDS
from aclarai.agents.offline.language import function_words, language_of

MAX_QUERY_CHARS = 2000
"""Longer input is cut here: a question, not a document (a 100 KB query is read as its start)."""
MAX_TERMS = 24
MAX_WORD_CHARS = 64
"""A longer run of letters is no word a note holds (a hash, a pasted blob): it is not asked."""

_WORD = re.compile(r"\w+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_PREFIX_FROM = 6


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
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words_of(text: str) -> set[str]:
    """The folded words of ``text``, as the index splits them."""
    return set(_WORD.findall(fold(text)))


def covers(words: set[str], term: str) -> bool:
    """Whether a block of these words holds ``term``, as its query expression matches."""
    if term in words:
        return True
    if len(term) < _PREFIX_FROM or term.isdigit():
        return False
    stem = _stem(term)
    return any(w.startswith(stem) for w in words)


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


@lru_cache(maxsize=16)
def _skipped(lang: str) -> frozenset[str]:
    return frozenset(fold(w) for w in STOPWORDS | function_words(lang))


def _trigrams(run: str) -> list[str]:
    if len(run) <= 3:
        # The trigram table finds nothing shorter than three characters.
        return [run] if len(run) == 3 else []
    return [run[i : i + 3] for i in range(len(run) - 2)]


def _term(word: str) -> str:
    if len(word) >= _PREFIX_FROM and not word.isdigit():
        return f"({_quote(word)} OR {_quote(_stem(word))}*)"
    return _quote(word)


def _stem(word: str) -> str:
    return word[: max(5, len(word) - 3)]


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'
