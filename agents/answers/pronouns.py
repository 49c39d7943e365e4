"""Pronoun replacement, so that every sentence of an answer can be judged on its own.

"He was born in Ulm." says nothing checkable until "he" is Einstein. The LLM backend asks the
model; offline, :func:`replace_pronouns` applies conservative rules: third-person singular pronouns
are replaced by the most recent named entity of a fitting kind (a bare proper name for *he/she*, a
name introduced with *the* for *it*), expletive *it* ("it is likely that…") and plural *they* are
left alone, because a wrong replacement hurts the entailment check more than a kept pronoun.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Annotated, Protocol

from pydantic import BaseModel, ConfigDict, StringConstraints

from aclarai.agents.llm.client import LLMClient
from aclarai.agents.llm.prompts import PromptLibrary, delimit
from aclarai.agents.offline.features import MONTHS, NEGATIONS, NUMBER_WORDS, STOPWORDS, WEEKDAYS
from aclarai.parsers import EvaluationError

logger = logging.getLogger(__name__)

_TOKEN = re.compile(r"\s+|\w[\w'’-]*|[^\w\s]")
_SENTENCE_END = frozenset({".", "!", "?", "\n"})
_PERSON = {"he": "subject", "him": "object", "his": "possessive", "she": "subject"}
_THING = {"it": "subject", "its": "possessive"}
_CONNECTORS = frozenset({"of", "de", "van", "von", "da", "del", "la", "le"})
_EXPLETIVE_VERBS = frozenset({"seems", "seemed", "appears", "appeared", "turns", "turned", "rains"})
_COPULAS = frozenset({"is", "was", "'s", "would", "will", "may", "might", "could", "has", "had"})
_AUXILIARIES = frozenset({"were", "are", "did", "does", "can", "should", "became", "said", "won"})
_NOT_NAMES = (
    STOPWORDS
    | NEGATIONS
    | MONTHS
    | WEEKDAYS
    | {"according", "after", "although", "because", "before", "during", "finally", "first"}
    | {"given", "however", "second", "since", "therefore", "though", "thus", "today", "until"}
    | {"while", "yesterday", "tomorrow", "yet", "every", "mr", "mrs", "ms", "dr"}
)
_NOT_PERSON_BEFORE = (
    {"in", "at", "from", "to", "near", "into", "across", "of", "on", "through"}
    | {"towards", "toward", "around", "outside", "inside", "within", "via", "a", "an", "several"}
    | {"many", "few", *NUMBER_WORDS}
)
_NON_POSSESSED = frozenset(
    {"the", "a", "an", "to", "and", "or", "that", "this", "in", "on", "at", "for", "with", "from"}
)


class PronounResolver(Protocol):
    """Anything that rewrites a text with its pronouns replaced by what they refer to."""

    def resolve(self, text: str, antecedents: str = "") -> str:
        """``text`` with pronouns replaced; ``antecedents`` (e.g. the question) may name them."""
        ...


@dataclass(frozen=True, slots=True)
class _Entity:
    text: str
    has_article: bool


class RuleBasedPronounResolver:
    """The offline resolver: :func:`replace_pronouns`."""

    def resolve(self, text: str, antecedents: str = "") -> str:
        return replace_pronouns(text, antecedents)


class LLMPronounResolver:
    """Asks the model to rewrite the text; falls back to the rules when the call fails.

    Args:
        client: the endpoint's client.
        model: the model name on the endpoint.
        prompts: where the ``pronoun_replacement`` prompt comes from.
    """

    prompt = "pronoun_replacement"

    def __init__(self, client: LLMClient, *, model: str, prompts: PromptLibrary):
        self._client = client
        self._model = model
        self._prompts = prompts
        self._fallback = RuleBasedPronounResolver()

    def resolve(self, text: str, antecedents: str = "") -> str:
        if not text.strip():
            return text
        messages = self._prompts.get(self.prompt).render(
            text=delimit("text", text), context=delimit("context", antecedents)
        )
        try:
            reply = self._client.complete_json(self._model, messages, _RewriteOut)
        except EvaluationError as exc:
            logger.warning("pronoun replacement by the model failed, using the rules: %s", exc)
            return self._fallback.resolve(text, antecedents)
        return reply.text


class _RewriteOut(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    text: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


def replace_pronouns(text: str, antecedents: str = "") -> str:
    """Replace third-person singular pronouns of ``text`` by the entity they most likely name.

    Args:
        text: the text to rewrite.
        antecedents: text read before ``text`` (the question), whose entities may be referred to.

    Returns:
        The rewritten text; unchanged where no fitting entity is known.
    """
    tracker = _Tracker()
    tracker.feed(_TOKEN.findall(antecedents), rewrite=False)
    return "".join(tracker.feed(_TOKEN.findall(text), rewrite=True))


class _Tracker:
    """Walks tokens, remembering the latest person-like and thing-like named entities."""

    def __init__(self) -> None:
        self.person: _Entity | None = None
        self.thing: _Entity | None = None
        self.known: set[str] = set()
        self.not_persons: set[str] = set()

    def feed(self, tokens: list[str], *, rewrite: bool) -> list[str]:
        words = [i for i, t in enumerate(tokens) if not t.isspace()]
        out = list(tokens)
        k = 0
        while k < len(words):
            i = words[k]
            start = k == 0 or tokens[words[k - 1]] in _SENTENCE_END or "\n" in tokens[i - 1]
            after = self._entity_run([tokens[w] for w in words], k, start)
            if after:
                k = after
                continue
            if rewrite:
                out[i] = self._replacement(tokens, words, k, start) or tokens[i]
            k += 1
        return out

    def _entity_run(self, words: list[str], k: int, start: bool) -> int:
        """Record the named entity starting at word ``k``; return the index after it, or 0."""
        has_article = words[k].lower() == "the"
        first = k + 1 if has_article else k
        end = first
        while end < len(words) and _is_name(words[end]):
            end += 1
            if end + 1 < len(words) and words[end] in _CONNECTORS and _is_name(words[end + 1]):
                end += 1
        if end == first:
            return 0
        names = words[first:end]
        if start and not has_article and len(names) == 1 and not self._subject_like(words, end):
            # A capitalised word opening a sentence is usually an ordinary word ("Born in Ulm").
            return 0
        phrase = " ".join(names)
        prev = words[k - 1].lower() if k > 0 else ""
        if prev in _NOT_PERSON_BEFORE or prev.isdigit():
            # "in Ulm", "two Nobel prizes": a place or a modifier, never the "he" of a sentence.
            self.not_persons.add(phrase)
        if has_article:
            self.thing = _Entity("the " + phrase, True)
        elif len(names) <= 3 and phrase not in self.not_persons:
            self.person = _Entity(phrase, False)
        self.known.add(phrase)
        return end

    def _subject_like(self, words: list[str], end: int) -> bool:
        """Whether a lone sentence-opening capitalised word reads as a name."""
        if words[end - 1] in self.known:
            return True
        nxt = words[end].lower() if end < len(words) else ""
        return nxt in _COPULAS or nxt in _AUXILIARIES or (len(nxt) > 3 and nxt.endswith("ed"))

    def _replacement(self, tokens: list[str], words: list[int], k: int, start: bool) -> str | None:
        word = tokens[words[k]]
        lower = word.lower()
        following = [tokens[w].lower() for w in words[k + 1 : k + 6]]
        if lower in _THING:
            role, entity = _THING[lower], self.thing
            if lower == "it" and _is_expletive(following):
                return None
        elif lower == "her":
            nxt = following[0] if following else "."
            possessive = nxt[:1].isalnum() and nxt not in _NON_POSSESSED
            role, entity = ("possessive" if possessive else "object"), self.person
        elif lower in _PERSON:
            role, entity = _PERSON[lower], self.person
        else:
            return None
        if entity is None:
            return None
        name = entity.text
        if start or word[0].isupper():
            name = name[0].upper() + name[1:]
        return name + "'s" if role == "possessive" else name


def _is_name(token: str) -> bool:
    return token[:1].isupper() and token[:1].isalpha() and token.lower() not in _NOT_NAMES


def _is_expletive(following: list[str]) -> bool:
    if not following:
        return False
    if following[0] in _EXPLETIVE_VERBS:
        return True
    return following[0] in _COPULAS and any(w in {"that", "to"} for w in following[1:])
