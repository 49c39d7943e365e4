"""Offline judges of what the query demands: completeness and instruction-following.

- completeness: a query asking several things ("Who designed the tower and when was it
  completed?") is split into its parts (questions, then clauses joined by commas, ``and``, ``or``
  or semicolons); a part is addressed when the answer holds at least half of its terms, and a
  ``when`` / ``how many`` / ``how much`` part also needs a number in the answer. The score is the
  share of parts addressed. A query asking one thing scores 1.0: whether that one thing is
  answered is the relevance judge's question.
- instruction-following: the format, count and style instructions found in the query (a word
  limit, a sentence count, a list and its length, yes-or-no, JSON, brief, in detail) each checked
  on the answer; the score is the share obeyed, 1.0 when the query gives none.

Both are linear in the text and never call a model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from aclarai.agents.answers.evaluator import Interaction, Judge, Judgement
from aclarai.agents.offline.features import analyse
from aclarai.parsers import split_sentences

COMPLETENESS_JUDGE = "completeness-judge"
INSTRUCTION_JUDGE = "instruction-following-judge"

PART_COVERAGE = 0.5
"""Share of a part's terms the answer must hold for the part to count as addressed."""
BRIEF_WORDS = 60
DETAILED_WORDS = 40

# Words that ask for an answer without saying what about; a part made only of these is no part.
_REQUEST_WORDS = frozenset(
    {
        "explain", "describe", "tell", "give", "list", "name", "say", "detail", "please",
        "briefly", "write", "summarise", "summarize", "answer", "mention", "provide", "show",
        "sentence", "word", "bullet", "point", "format", "reply", "respond",
    }
)  # fmt: skip
_NUMBER_WORDS = {
    "one": 1, "a": 1, "a single": 1, "single": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}  # fmt: skip
_COUNT = r"(\d+|one|a single|single|a|two|three|four|five|six|seven|eight|nine|ten)"
_PART_SPLIT = re.compile(r"\s*(?:[,;]|\band\b|\bor\b|&)\s*", re.IGNORECASE)
_NEEDS_NUMBER = re.compile(r"\b(?:when|what year|how (?:many|much|long|old|tall|far))\b", re.I)
_HAS_NUMBER = re.compile(r"\d")
_WORD = re.compile(r"\w+(?:['’]\w+)*")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+\S", re.MULTILINE)
_WORD_LIMIT = re.compile(
    rf"\b(?:in|within|under|at most|no more than|fewer than|less than|maximum of)\s+"
    rf"{_COUNT}\s+words?\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(rf"\b(?:in|with|using)\s+{_COUNT}\s+sentences?\b", re.IGNORECASE)
_LIST_COUNT = re.compile(
    rf"\b(?:list|name|give(?: me)?|provide|enumerate)\s+{_COUNT}\b|\b{_COUNT}\s+bullet",
    re.IGNORECASE,
)
_LIST = re.compile(
    r"\b(?:bullet(?:ed)? (?:points?|list)|as a list|in a list|numbered list)\b", re.I
)
_YES_NO = re.compile(r"\b(?:yes or no|yes/no)\b", re.IGNORECASE)
_JSON = re.compile(r"\b(?:in|as) json\b", re.IGNORECASE)
_BRIEF = re.compile(r"\b(?:briefly|in brief|in short|short answer|be brief|concise(?:ly)?)\b", re.I)
_DETAIL = re.compile(r"\bin (?:great |full )?detail\b|\bthoroughly\b", re.IGNORECASE)


_INSTRUCTIONS = (_WORD_LIMIT, _SENTENCES, _LIST, _YES_NO, _JSON, _BRIEF, _DETAIL)
"""Patterns of format instructions: a chunk holding one is an instruction, not a question."""


def _count(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else _NUMBER_WORDS[word]


def query_parts(query: str) -> list[tuple[str, frozenset[str]]]:
    """Each thing the query asks, with its content terms, in order."""
    parts: list[tuple[str, frozenset[str]]] = []
    for sentence in split_sentences(query) or [query]:
        for chunk in _PART_SPLIT.split(sentence):
            if not chunk.strip() or any(p.search(chunk) for p in _INSTRUCTIONS):
                continue
            terms = analyse(chunk).content - _REQUEST_WORDS
            if terms:
                parts.append((chunk.strip(), terms))
    return parts


class CompletenessJudge(Judge):
    """Share of the query's parts that the answer addresses."""

    name = COMPLETENESS_JUDGE

    def __init__(self, *, timeout_s: float | None = None):
        self.timeout_s = timeout_s

    def judge(self, interaction: Interaction) -> Judgement:
        parts = query_parts(interaction.query)
        if len(parts) < 2:
            return Judgement(1.0, "the query asks one thing")
        answer = analyse(interaction.answer).content
        has_number = bool(_HAS_NUMBER.search(interaction.answer))
        missed = [
            chunk
            for chunk, terms in parts
            if len(terms & answer) < PART_COVERAGE * len(terms)
            or (_NEEDS_NUMBER.search(chunk) and not has_number)
        ]
        score = 1.0 - len(missed) / len(parts)
        reason = f"{len(parts) - len(missed)} of the query's {len(parts)} parts addressed"
        if missed:
            reason += "; missing: " + "; ".join(repr(m[:40]) for m in missed[:4])
        return Judgement(score, reason)


@dataclass(frozen=True, slots=True)
class _Instruction:
    what: str
    obeyed: Callable[[str], bool]


def instructions(query: str) -> list[_Instruction]:
    """The format, count and style instructions the query gives."""
    found: list[_Instruction] = []
    if match := _WORD_LIMIT.search(query):
        limit = _count(match.group(1))
        found.append(_Instruction(f"at most {limit} words", lambda a: _words(a) <= limit))
    if match := _SENTENCES.search(query):
        wanted = _count(match.group(1))
        found.append(
            _Instruction(f"{wanted} sentence(s)", lambda a: len(split_sentences(a)) <= wanted)
        )
    list_count = _LIST_COUNT.search(query)
    if list_count and (list_count.group(1) or list_count.group(2)):
        wanted = _count(list_count.group(1) or list_count.group(2))
        if wanted > 1:
            found.append(_Instruction(f"{wanted} items", lambda a: _items(a) == wanted))
    if _LIST.search(query):
        found.append(_Instruction("a list", lambda a: len(_LIST_ITEM.findall(a)) >= 2))
    if _YES_NO.search(query):
        found.append(
            _Instruction("yes or no first", lambda a: a.strip().lower().startswith(("yes", "no")))
        )
    if _JSON.search(query):
        found.append(_Instruction("JSON", _is_json))
    if _BRIEF.search(query):
        found.append(
            _Instruction(f"brief (≤ {BRIEF_WORDS} words)", lambda a: _words(a) <= BRIEF_WORDS)
        )
    if _DETAIL.search(query):
        found.append(
            _Instruction(
                f"in detail (≥ {DETAILED_WORDS} words)", lambda a: _words(a) >= DETAILED_WORDS
            )
        )
    return found


class InstructionJudge(Judge):
    """Share of the query's format, count and style instructions that the answer obeys."""

    name = INSTRUCTION_JUDGE

    def __init__(self, *, timeout_s: float | None = None):
        self.timeout_s = timeout_s

    def judge(self, interaction: Interaction) -> Judgement:
        found = instructions(interaction.query)
        if not found:
            return Judgement(1.0, "the query gives no format instruction")
        broken = [i.what for i in found if not i.obeyed(interaction.answer)]
        score = 1.0 - len(broken) / len(found)
        reason = f"{len(found) - len(broken)} of {len(found)} instructions followed"
        if broken:
            reason += "; not followed: " + ", ".join(broken)
        return Judgement(score, reason)


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def _items(answer: str) -> int:
    listed = len(_LIST_ITEM.findall(answer))
    if listed:
        return listed
    # An inline enumeration: "Paris, Lyon and Nice".
    return len([p for p in _PART_SPLIT.split(answer.strip().rstrip(".")) if p.strip()])


def _is_json(answer: str) -> bool:
    text = answer.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
