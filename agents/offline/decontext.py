"""Decontextualization: can a claim be understood without the conversation it came from?

The score starts at 1 and each thing a reader would need the context for multiplies it by a
penalty: a pronoun with no antecedent in the claim (worst as the subject), a first-person
pronoun ("I" and "we" point to a note's author or team), a demonstrative ("this", "that is
why"), a place deictic ("here", "there"), a relative time ("yesterday", "this morning", a bare
weekday), a definite description that points back into the conversation ("the team", or "the
migration" when the neighbouring utterances talk about a migration), ellipsis, and a missing
subject.

A sentence addressed to the reader ("When you reach your storage limit, Sync stops") depends on
no context: "you" and "your" mean whoever reads it, in any language, and cost nothing.

The neighbouring utterances help in two ways: speaker names found in them count as antecedents
("alice said she ..."), and nouns they mention make "the <noun>" anaphoric.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass
from functools import lru_cache

from aclarai.agents.offline.coverage import RELATIVE_DATES
from aclarai.agents.offline.extractor import split_speaker
from aclarai.agents.offline.features import (
    MONTHS,
    STOPWORDS,
    WEEKDAYS,
    is_content,
    stem,
    word_set,
    words_of,
)
from aclarai.agents.offline.words import UNSPACED_CHAR, find_words

_THIRD_PERSON = word_set(
    "he she it they him her them his hers its their theirs himself herself itself themselves"
)
_FIRST_PERSON = word_set("i me my mine we us our ours i'm i've we're")
_SECOND_PERSON = word_set("you your yours yourself yourselves you're you've")
_DEMONSTRATIVES = word_set("this these those")
_BE_FORMS = word_set("is are was were 's has have had will may might seems seem appears appear")
_RELATIVE_TIME = RELATIVE_DATES | word_set("now currently recently earlier later lately ago")
_TIME_UNITS = (
    word_set("week month year morning afternoon evening night weekend quarter sprint time")
    | WEEKDAYS
)
_TIME_MODIFIERS = word_set("this last next coming past")
_RELATIONAL_NOUNS = word_set(
    """
    team project issue bug meeting plan fix change problem ticket thing same former latter above
    following other rest incident outage release deploy deployment migration client customer
    company idea proposal decision call discussion document doc report branch feature error alert
    result results numbers data patch update version rollout
    """
)
_PAST_IRREGULAR_STARTS = word_set("went made took got saw ran broke fell found gave kept left")
_AUXILIARIES = word_set("is was were are has had have will would can could should did does")
_TRIGGERS = (
    _THIRD_PERSON
    | _FIRST_PERSON
    | _DEMONSTRATIVES
    | _RELATIVE_TIME
    | _TIME_MODIFIERS
    | WEEKDAYS
    | word_set("that here there the")
)
"""Every word :func:`_word_penalty` can penalise; the others need no look at their neighbours."""

LEADING_PRONOUN = 0.4
PRONOUN = 0.7
FIRST_PERSON = 0.6
DEMONSTRATIVE = 0.7
DEICTIC_PLACE = 0.8
RELATIVE_TIME = 0.75
ANAPHORIC_DESCRIPTION = 0.85
ELLIPSIS = 0.85
MISSING_SUBJECT = 0.5
SHORT = 0.8
_OUTSIDE = "refers to something outside the claim"
_UNSPACED_CONTEXT: tuple[tuple[str, float, str], ...] = tuple(
    (word, factor, kind)
    for words, factor, kind in (
        ("彼女 彼ら 彼 他们 她们 她 它 他", PRONOUN, _OUTSIDE),
        ("私たち 私 僕 俺 我们 我", FIRST_PERSON, "is the note's author, not named in the claim"),
        (
            "これ それ あれ この その あの 这 那",
            DEMONSTRATIVE,
            "refers to something outside the claim",
        ),
        ("あそこ ここ そこ 这里 那里", DEICTIC_PLACE, "is a place the claim does not name"),
        (
            "昨日 今日 明日 先週 来週 去年 来年 最近 昨天 今天 明天",
            RELATIVE_TIME,
            "is a time the claim does not date",
        ),
    )
    for word in words.split()
)
"""Words of Japanese and Chinese that need the conversation to be understood."""


@dataclass(frozen=True, slots=True)
class Decontextualization:
    """The score and what lowered it, in words (``"'he' refers to something outside the
    claim"``)."""

    score: float
    reasons: tuple[str, ...]


def decontextualization(
    claim: str, source: str = "", context: Sequence[str] = ()
) -> Decontextualization:
    """Score how well ``claim`` stands on its own.

    Args:
        claim: The claim text.
        source: The utterance the claim came from; its speaker counts as a known name.
        context: Neighbouring utterances; their speakers are known names and their nouns make
            a definite description anaphoric.

    Returns:
        A score in 0..1 (1: fully self-contained) and the reasons for each penalty.
    """
    words, lowered = words_of(claim)
    window = tuple(context)
    known_names = _known_names(source, window)
    penalties: list[tuple[float, str]] = []
    antecedent = False
    for i, word in enumerate(words):
        if lowered[i] in _TRIGGERS:
            penalty = _word_penalty(i, words, lowered, antecedent, window)
            if penalty is not None:
                penalties.append(penalty)
        if not antecedent and _could_be_antecedent(word, lowered[i], i, words, known_names):
            antecedent = True
    if "..." in claim or "…" in claim or "etc" in lowered:
        penalties.append((ELLIPSIS, "it trails off"))
    if lowered and _missing_subject(lowered[0], known_names):
        penalties.append((MISSING_SUBJECT, "it has no subject"))
    if len(words) < 4:
        penalties.append((SHORT, "it is too short to stand alone"))
    if UNSPACED_CHAR.search(claim):
        penalties.extend(_unspaced_penalties(claim))
    score = 1.0
    for factor, _ in penalties:
        score *= factor
    return Decontextualization(score, tuple(dict.fromkeys(reason for _, reason in penalties)))


def _word_penalty(
    i: int,
    words: Sequence[str],
    lowered: Sequence[str],
    antecedent: bool,
    context: tuple[str, ...],
) -> tuple[float, str] | None:
    word, lower = words[i], lowered[i]
    following = lowered[i + 1] if i + 1 < len(lowered) else ""
    if lower in _THIRD_PERSON and not antecedent and not _dummy_it(lowered, i):
        return (LEADING_PRONOUN if i == 0 else PRONOUN, _outside(word))
    # English writes "I" upper case; a lower-case "i" is another language's ("i file").
    if lower in _FIRST_PERSON and not (lower == "i" and word == "i"):
        return (FIRST_PERSON, f"'{word}' is the note's author, not named in the claim")
    if (lower in _DEMONSTRATIVES and following not in _TIME_UNITS) or (lower == "that" and i == 0):
        return (DEMONSTRATIVE, _outside(word))
    if lower == "here" or (lower == "there" and following not in _BE_FORMS):
        return (DEICTIC_PLACE, f"'{word}' is a place the claim does not name")
    if (
        lower in _RELATIVE_TIME
        or (lower in _TIME_MODIFIERS and following in _TIME_UNITS)
        or (lower in WEEKDAYS and not _has_full_date(lowered))
    ):
        return (RELATIVE_TIME, f"'{word}' is a time the claim does not date")
    if lower == "the" and _anaphoric(following, words, i, context):
        return (ANAPHORIC_DESCRIPTION, f"'the {following}' refers to something outside the claim")
    return None


def _outside(word: str) -> str:
    return f"'{word}' {_OUTSIDE}"


def _unspaced_penalties(claim: str) -> list[tuple[float, str]]:
    """Penalties for the pronouns and deictics of Japanese and Chinese, found as substrings
    (their words are not delimited), longest first; "其他" ("other") holds no pronoun."""
    text = claim.replace("其他", "")
    penalties = []
    for word, factor, kind in _UNSPACED_CONTEXT:
        if word in text:
            penalties.append((factor, f"'{word}' {kind}"))
            # "彼女" is one pronoun, not "彼女" and "彼".
            text = text.replace(word, "")
    return penalties


def _dummy_it(lowered: Sequence[str], i: int) -> bool:
    """'it' with no referent: "it is likely that", "it takes", "it seems"."""
    if lowered[i] != "it" or i + 1 >= len(lowered):
        return False
    after = lowered[i + 1 : i + 5]
    if after[0] in {"seems", "seemed", "appears", "appeared", "takes", "took"}:
        return True
    return after[0] in {"is", "was", "'s"} and any(w in {"that", "to"} for w in after[2:])


def _could_be_antecedent(
    word: str, lower: str, index: int, words: Sequence[str], known_names: Set[str]
) -> bool:
    if lower in known_names or _has_digit(word):
        return True
    if word[0].isupper() and lower not in STOPWORDS and lower not in _FIRST_PERSON:
        return index > 0 or (len(words) > 1 and is_content(lower))
    previous = words[index - 1].lower() if index else ""
    return previous in {"the", "a", "an"} and is_content(lower)


def _anaphoric(noun: str, words: Sequence[str], index: int, context: tuple[str, ...]) -> bool:
    if not noun or not is_content(noun):
        return False
    # "the team at Acme", "the release of v2.3": a qualifier with a name resolves it.
    qualifier = words[index + 2 : index + 5]
    if any(w[0].isupper() or _has_digit(w) for w in qualifier[1:]) and (
        qualifier and qualifier[0].lower() in {"of", "at", "in", "for", "from", "on"}
    ):
        return False
    return noun in _RELATIONAL_NOUNS or stem(noun) in _context_nouns(context)


def _has_digit(word: str) -> bool:
    # No letter is also a digit, so the scan is needed only for words that are not all letters.
    return not word.isalpha() and any(ch.isdigit() for ch in word)


def _has_full_date(lowered: Sequence[str]) -> bool:
    return any(w in MONTHS for w in lowered) or any(w.isdigit() and len(w) == 4 for w in lowered)


def _missing_subject(first: str, known_names: Set[str]) -> bool:
    if first in _AUXILIARIES or first in _PAST_IRREGULAR_STARTS:
        return True
    return first.endswith("ed") and len(first) > 3 and first not in known_names


# Every claim of a block shares the block's window, and each utterance is in several windows.
@lru_cache(maxsize=64)
def _known_names(source: str, context: tuple[str, ...]) -> frozenset[str]:
    """The speaker names of the source and its context."""
    return frozenset().union(*(_speakers(text) for text in (source, *context)))


@lru_cache(maxsize=64)
def _context_nouns(context: tuple[str, ...]) -> frozenset[str]:
    """The nouns of the context, looked up only for a "the <noun>" the claim itself leaves open."""
    return frozenset().union(*(_nouns(text) for text in context))


@lru_cache(maxsize=128)
def _speakers(text: str) -> frozenset[str]:
    names = (split_speaker(line)[0] for line in text.splitlines())
    return frozenset(name.lower() for name in names if name)


@lru_cache(maxsize=128)
def _nouns(text: str) -> frozenset[str]:
    return frozenset(map(stem, filter(is_content, map(str.lower, find_words(text)))))
