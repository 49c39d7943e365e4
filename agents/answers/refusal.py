"""Refusal detection: does a text decline to answer instead of answering?

Rule-based on purpose: refusals are formulaic ("I don't know", "the context does not say",
"I can't help with that"), the rules are auditable, and the check runs with no model. Only the
first sentences are looked at, because an answer that opens with a real answer and later says
"I am not sure about the date" is a hedged answer, not a refusal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

REFUSAL_SENTENCES = 3
"""How many leading sentences of a text are classified."""

_SOURCE = (
    r"(?:provided |given |above |supplied )?"
    r"(?:context|text|passage|documents?|information|sources?|article|excerpt|data)"
)
_NEGATED = r"(?:does not|doesn't|do not|don't|did not|didn't|cannot|can't|fails? to)"
_PATTERNS: tuple[str, ...] = (
    r"\bi (?:really |simply )?(?:do not|don't|dont|did not|didn't) know\b",
    r"\bi(?: am|'m) (?:not sure|unsure|uncertain|not certain|not aware)\b",
    r"\bi(?: am|'m)? ?(?:unable|not able) to "
    r"(?:answer|help|assist|provide|find|determine|say|tell)",
    r"\bi (?:cannot|can't|can not|could not|couldn't|won't|will not) "
    r"(?:help|assist|answer|provide|find|determine|say|tell|comply|do that|give)",
    rf"\b(?:the |this |that )?{_SOURCE} {_NEGATED} "
    r"(?:say|mention|state|specify|contain|provide|include|indicate|discuss|give|tell|answer)",
    r"\b(?:is|are|was|were) not (?:mentioned|specified|stated|provided|given|available|included|"
    rf"discussed|found) in the {_SOURCE}",
    r"\bthere (?:is|was|are) (?:no|not enough|insufficient) "
    r"(?:information|context|evidence|data|mention|details?)\b",
    r"\b(?:insufficient|not enough) (?:information|context|evidence|data) to\b",
    r"\b(?:cannot|can't|can not|could not) be (?:determined|answered|found|inferred|known)\b",
    r"\bas an ai\b",
    r"\bi(?:'m| am) sorry,? (?:but )?(?:i|that|this)\b",
    r"\bi have no (?:information|knowledge|idea|way of knowing)\b",
    r"\bno one knows\b",
    r"^(?:unknown|n/?a|none|no answer|unanswerable|no comment)[.!]?$",
)
_REFUSAL = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE)
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})


def is_refusal_sentence(sentence: str) -> bool:
    """Whether one sentence declines to answer.

    Args:
        sentence: a single sentence.

    Returns:
        ``True`` when the sentence matches one of the refusal patterns.
    """
    text = " ".join(sentence.translate(_APOSTROPHES).split())
    return bool(_REFUSAL.search(text))


def is_refusal(
    text: str,
    split: Callable[[str], Sequence[str]],
    *,
    first_n: int = REFUSAL_SENTENCES,
) -> bool:
    """Whether a text is a refusal: one of its first ``first_n`` sentences declines to answer.

    Args:
        text: the answer or ground truth.
        split: the sentence splitter.
        first_n: how many leading sentences are classified.

    Returns:
        ``True`` for a refusal; an empty text is not one.
    """
    return any(is_refusal_sentence(s) for s in list(split(text))[:first_n])
