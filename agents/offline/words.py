"""What the offline scorer counts as a word, in any script.

A word is a run of letters and digits (:data:`WORD_PATTERN`). Japanese and Chinese put no spaces
between words, so a run of kana and Han characters would be one "word" however long; it gives
its overlapping character pairs instead ("東京都" gives "東京" and "京都"), which match where the
words they belong to match.
"""

from __future__ import annotations

import re

WORD_PATTERN = re.compile(r"[^\W_]+(?:['’.\-][^\W_]+|(?<=\d)[:,]\d+)*")
"""A word: letters and digits, with inner apostrophes, dots and hyphens ("don't", "v2.3"), and
colons or commas between digits ("14:02", "1,200")."""
_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
UNSPACED_CHAR = re.compile(f"[{_UNSPACED}]")
"""A kana or Han character: Japanese and Chinese put no spaces between words."""
_UNSPACED_PIECE = re.compile(f"[{_UNSPACED}]+|[^{_UNSPACED}]+")
_KANA_ONLY = re.compile("[\u3040-\u309f\u30fc]+")


def find_words(text: str) -> list[str]:
    """The words of ``text``; a run of kana or Han characters gives its character pairs."""
    words = WORD_PATTERN.findall(text)
    # isascii() reads a flag CPython keeps on the string: most text needs no scan at all.
    if text.isascii() or not UNSPACED_CHAR.search(text):
        return words
    found: list[str] = []
    for word in words:
        if not UNSPACED_CHAR.search(word):
            found.append(word)
            continue
        for piece in _UNSPACED_PIECE.findall(word):
            if UNSPACED_CHAR.match(piece):
                found.extend(piece[i : i + 2] for i in range(max(len(piece) - 1, 1)))
            else:
                found.extend(WORD_PATTERN.findall(piece))
    return found


def is_kana_only(word: str) -> bool:
    """Whether ``word`` is hiragana only (with the long-vowel mark): particles and endings
    ("は", "です") carry no content of their own."""
    return word[:1] >= "\u3040" and _KANA_ONLY.fullmatch(word) is not None


def word_count(text: str) -> int:
    """How many words (:data:`WORD_PATTERN`) ``text`` holds."""
    return len(WORD_PATTERN.findall(text))
