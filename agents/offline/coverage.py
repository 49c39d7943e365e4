"""Coverage: how many of the source's verifiable elements a claim keeps.

Verifiable elements are names and places (capitalised words and runs of them, technical tokens
such as ``v2.3`` or ``PostgreSQL``), numbers and dates (digits, number words, month and weekday
names, "yesterday"). A claim usually restates one or two sentences of a longer utterance, so
only the source sentences the claim came from count: the sentence sharing the most content words
with it, then each other sentence that gives it content words those before it lack (a claim
merging two sentences came from both). A claim that is one sentence of a three-sentence block is
not charged for the other two sentences' names and numbers. The speaker prefix of a Tier 1
utterance is who spoke, not what was said, and a label ("Action: …") names what follows: both
are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

from aclarai.agents.offline.extractor import split_speaker
from aclarai.agents.offline.features import (
    MONTHS,
    NUMBER_WORDS,
    STOPWORDS,
    WEEKDAYS,
    is_content,
    number_values,
    sentences_of,
    stem,
    word_set,
    words_of,
)
from aclarai.agents.offline.not_claims import strip_label

RELATIVE_DATES = word_set("yesterday today tomorrow tonight")
_DATE_WORDS = MONTHS | WEEKDAYS | RELATIVE_DATES
_NAME, _NUMBER_OR_DATE, _OTHER = "name", "number or date", "other"


@dataclass(frozen=True, slots=True)
class Coverage:
    """The share of verifiable elements kept, and the ones left out (as written in the source)."""

    score: float
    elements: tuple[str, ...]
    omitted: tuple[str, ...]


def verifiable_elements(sentence: str) -> list[str]:
    """Names, places, numbers and dates of one sentence, in order, each once.

    Args:
        sentence: One sentence, without a speaker prefix.

    Returns:
        The elements as written (multi-word names kept together, e.g. "New York").
    """
    return list(_elements(sentence))


def coverage(claim: str, source: str) -> Coverage:
    """Coverage of ``source``'s verifiable elements by ``claim``.

    Args:
        claim: The claim text.
        source: The utterance the claim came from (speaker prefix allowed).

    Returns:
        Score 1.0 when the drawn-on sentences hold no verifiable element (nothing to omit).
    """
    claim_words = words_of(claim)[1]
    claim_stems = set(map(stem, claim_words))
    claim_numbers = set(chain.from_iterable(map(number_values, claim_words)))
    elements: list[str] = []
    claim_content = {stem(w) for w in claim_words if is_content(w)}
    for sentence in _drawn_on(claim_content, source):
        elements.extend(e for e in _elements(sentence) if e not in elements)
    if not elements:
        return Coverage(1.0, (), ())
    omitted = tuple(e for e in elements if not _kept(e, claim_stems, claim_numbers))
    return Coverage(1 - len(omitted) / len(elements), tuple(elements), omitted)


# Every claim of a block is checked against the same source sentences, so their analysis is
# kept for the few most recent sources and sentences.
@lru_cache(maxsize=128)
def _elements(sentence: str) -> tuple[str, ...]:
    words = words_of(sentence)[0]
    # A capital that opens the sentence counts when the next word is part of a name too.
    opens_name = len(words) > 1 and _is_name_part(words[1], True) and _is_name_part(words[0], True)
    elements: list[str] = []
    run: list[str] = []
    for i, word in enumerate(words):
        kind = _NAME if i == 0 and opens_name else _kind(word, i > 0)
        if kind is _NAME:
            run.append(word)
            continue
        if run:
            elements.append(" ".join(run))
            run = []
        if kind is _NUMBER_OR_DATE:
            elements.append(word)
    if run:
        elements.append(" ".join(run))
    return tuple(dict.fromkeys(elements))


@lru_cache(maxsize=16384)
def _kind(word: str, later: bool) -> str:
    """What a word is to :func:`_elements`; ``later``: it does not open the sentence."""
    if _is_name_part(word, later):
        return _NAME
    lower = word.lower()
    return _NUMBER_OR_DATE if number_values(lower) or lower in _DATE_WORDS else _OTHER


@lru_cache(maxsize=64)
def _source_sentences(source: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """Each sentence of ``source`` without its speaker, with the stems of its content words."""
    sentences = [_without_speaker(s) for s in sentences_of(source)]
    return tuple((sentence, _content_stems(sentence)) for sentence in sentences)


def _content_stems(sentence: str) -> frozenset[str]:
    return frozenset(map(stem, filter(is_content, words_of(sentence)[1])))


def _drawn_on(claim_content: set[str], source: str) -> list[str]:
    sentences = _source_sentences(source)
    shared = [content & claim_content for _, content in sentences]
    if not any(shared):
        return [sentence for sentence, _ in sentences]
    covered: set[str] = set()
    chosen: list[int] = []
    # Most shared words first; sorted() is stable, so the earlier sentence wins a tie.
    for i in sorted(range(len(shared)), key=lambda i: -len(shared[i])):
        if shared[i] - covered:
            covered |= shared[i]
            chosen.append(i)
    return [sentences[i][0] for i in sorted(chosen)]


def _without_speaker(sentence: str) -> str:
    """The sentence without who said it or the label before it ("Action: Ana books …"): a
    claim is what follows."""
    return strip_label(split_speaker(sentence)[1])


def _is_name_part(word: str, later: bool) -> bool:
    """Whether ``word`` belongs to a name; ``later``: it does not open the sentence."""
    if any(ch.isdigit() for ch in word) and any(ch.isalpha() for ch in word):
        return True
    if any(ch.isupper() for ch in word[1:]) and word.lower() not in STOPWORDS:
        return True
    lower = word.lower()
    if not word[0].isupper() or lower in STOPWORDS or lower in MONTHS or lower in WEEKDAYS:
        return False
    if lower in NUMBER_WORDS or lower in RELATIVE_DATES:
        return False
    # A capital at the start of a sentence says nothing; elsewhere it marks a name.
    return later


def _kept(element: str, claim_stems: set[str], claim_numbers: set[str]) -> bool:
    for word in element.split():
        lower = word.lower()
        numbers = number_values(lower)
        if numbers and not set(numbers) <= claim_numbers:
            return False
        if not numbers and stem(lower) not in claim_stems:
            return False
    return True
