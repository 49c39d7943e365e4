"""The answer judges: relevance, faithfulness and coherence, offline or LLM-backed.

Offline, every judge leans on an :class:`~aclarai.agents.base.Evaluator` (the calibrated offline
scorer by default) or on lexical similarity, so the service works with no API key:

- faithfulness: how far the context entails the answer (the evaluator's ``entailed_score``);
- relevance: how much of the query the answer takes up, by stemmed content words and character
  4-grams (so "tallest" still meets "tall"); or, for an answer that does not restate the query
  ("Paris." to "What is the capital of France?"), how well the context sentence that holds all of
  the answer's terms matches the query: the answer supplies what that sentence says;
- coherence: one minus the strongest contradiction between two of the answer's own sentences. A
  pair is suspect when it is on the same topic (shared content words) with opposite polarity or
  different numbers ("open on Sundays" / "not open on Sundays", "330 m" / "150 m"). A suspect pair
  contradicts as far as neither sentence entails the other (by the evaluator) or as far as their
  numbers differ, scaled by how much they share a topic.

Which judges run, with which weights and prompts, is configured in YAML
(:mod:`aclarai.agents.answers.judge_specs`). LLM-backed, each judge is one structured call through
:class:`~aclarai.agents.llm.client.LLMClient` with its own prompt (``relevance_judge``,
``faithfulness_judge``, ``coherence_judge``) and the
:class:`~aclarai.agents.llm.schemas.JudgeOut` reply schema.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations

from aclarai.agents.answers.evaluator import (
    COHERENCE_JUDGE,
    FAITHFULNESS_JUDGE,
    RELEVANCE_JUDGE,
    Interaction,
    Judge,
    Judgement,
)
from aclarai.agents.base import EvalItem, Evaluator
from aclarai.agents.llm.client import LLMClient
from aclarai.agents.llm.prompts import PromptLibrary, delimit
from aclarai.agents.llm.schemas import JudgeOut
from aclarai.agents.offline.features import analyse
from aclarai.parsers import EvaluationError, split_sentences

RELEVANCE_SATURATION = 0.6
"""Query similarity at which relevance counts as full: answers rephrase, they rarely echo."""
TOPIC_FLOOR = 0.25
"""Overlap (Jaccard) of non-number content words below which two sentences are on different
topics; "330 m tall" / "its antenna adds 24 m" share a fifth of theirs."""
TOPIC_FULL = 0.75
"""Overlap at which two sentences are fully on the same topic; "born in Ulm" / "born in Munich"
share half of theirs, so they count half."""
MAX_COHERENCE_SENTENCES = 12
"""Sentences compared pairwise for coherence (the first ones; pairs grow quadratically)."""
MAX_FAITHFULNESS_SENTENCES = 40
"""Answer sentences checked for faithfulness; a longer answer is judged on this many, spread
evenly over it, and the reason says so. Aligning every answer sentence with every context
sentence would grow with the square of the text."""
SMALL_CONTEXT_SENTENCES = 64
"""A context up to this many sentences is given to the evaluator whole."""
PASSAGES_PER_SENTENCE = 4
"""Otherwise each checked answer sentence brings the context sentences sharing most words with
it, found through an index of the context: the evaluator sees a bounded source."""
MAX_SHORT_ANSWER_TERMS = 12
"""Relevance through the context is sought for answers with at most this many new terms."""
_CHARGRAM = 4
_INDEX_WORD = re.compile(r"\w{3,}")


class FaithfulnessJudge(Judge):
    """Entailment of the answer by the context, from an evaluator."""

    name = FAITHFULNESS_JUDGE

    def __init__(self, evaluator: Evaluator, *, timeout_s: float | None = None):
        self._evaluator = evaluator
        self.timeout_s = timeout_s

    def judge(self, interaction: Interaction) -> Judgement:
        if not interaction.context.strip():
            raise EvaluationError("no context to check the answer against")
        claim, source, note = bounded_pair(interaction.answer, interaction.context)
        score = self._evaluator.evaluate(EvalItem(claim=claim, source=source))
        if score.entailed_score is None:
            raise EvaluationError(f"the evaluator gave no entailment score ({score.status})")
        reason = f"entailment of the answer by the context: {score.entailed_score:.2f}"
        if score.verdict:
            reason += f" ({score.verdict})"
        return Judgement(score.entailed_score, reason + note)


def bounded_pair(answer: str, context: str) -> tuple[str, str, str]:
    """The (claim, source) the faithfulness judge scores, with work linear in the text.

    Short answers and contexts go whole. A long answer is sampled down to
    :data:`MAX_FAITHFULNESS_SENTENCES` sentences; a long context is cut down to the sentences an
    inverted index finds for those sentences, kept in their order. The third value says what was
    left out (empty when nothing was).
    """
    answer_sentences = split_sentences(answer) or [answer]
    note = ""
    if len(answer_sentences) > MAX_FAITHFULNESS_SENTENCES:
        step = len(answer_sentences) / MAX_FAITHFULNESS_SENTENCES
        picked = [answer_sentences[int(i * step)] for i in range(MAX_FAITHFULNESS_SENTENCES)]
        note = f"; judged on {len(picked)} of the answer's {len(answer_sentences)} sentences"
        answer_sentences = picked
        answer = " ".join(picked)
    context_sentences = split_sentences(context) or [context]
    if len(context_sentences) <= SMALL_CONTEXT_SENTENCES:
        return answer, context, note
    index: defaultdict[str, list[int]] = defaultdict(list)
    for number, sentence in enumerate(context_sentences):
        for word in set(_INDEX_WORD.findall(sentence.lower())):
            index[word].append(number)
    # Words found in most of the context say nothing about where an answer sentence comes from.
    common = len(context_sentences) // 4
    chosen: set[int] = set()
    for sentence in answer_sentences:
        hits: Counter[int] = Counter()
        for word in set(_INDEX_WORD.findall(sentence.lower())):
            found = index.get(word, ())
            if len(found) <= common:
                hits.update(found)
        chosen.update(n for n, _ in hits.most_common(PASSAGES_PER_SENTENCE))
    if not chosen:
        chosen = set(range(SMALL_CONTEXT_SENTENCES))
    source = " ".join(context_sentences[n] for n in sorted(chosen))
    note += f"; checked against {len(chosen)} of the context's {len(context_sentences)} sentences"
    return answer, source, note


class RelevanceJudge(Judge):
    """Query/answer similarity: stemmed content words and character 4-grams of the query."""

    name = RELEVANCE_JUDGE

    def __init__(self, *, timeout_s: float | None = None):
        self.timeout_s = timeout_s

    def judge(self, interaction: Interaction) -> Judgement:
        query = analyse(interaction.query)
        answer = analyse(interaction.answer)
        if not query.content:
            return Judgement(1.0, "the query has no content words; nothing to be off-topic from")
        words = len(query.content & answer.content) / len(query.content)
        grams = _containment(_chargrams(query.content), _chargrams(answer.content))
        similarity = max(words, grams)
        via_context = _answering_sentence_match(query.content, answer.content, interaction.context)
        if via_context > similarity:
            score = min(1.0, via_context / RELEVANCE_SATURATION)
            return Judgement(
                score,
                f"answers through the context: the sentence holding the answer matches "
                f"{via_context:.2f} of the query terms",
            )
        score = min(1.0, similarity / RELEVANCE_SATURATION)
        return Judgement(
            score, f"query similarity {similarity:.2f} (terms {words:.2f}, 4-grams {grams:.2f})"
        )


def _answering_sentence_match(query: frozenset[str], answer: frozenset[str], context: str) -> float:
    """Best share of the query's terms found in a context sentence that holds every term of the
    answer the query lacks (0 when the answer brings nothing new or no sentence holds it)."""
    new_terms = answer - query
    if not new_terms or len(new_terms) > MAX_SHORT_ANSWER_TERMS or not context.strip():
        return 0.0
    best = 0.0
    for sentence in analyse(context).sentences:
        if new_terms <= sentence.content:
            best = max(best, len(query & sentence.content) / len(query))
    return best


class CoherenceJudge(Judge):
    """One minus the strongest contradiction between two sentences of the answer."""

    name = COHERENCE_JUDGE

    def __init__(self, evaluator: Evaluator, *, timeout_s: float | None = None):
        self._evaluator = evaluator
        self.timeout_s = timeout_s

    def judge(self, interaction: Interaction) -> Judgement:
        sentences = split_sentences(interaction.answer)[:MAX_COHERENCE_SENTENCES]
        if len(sentences) < 2:
            return Judgement(1.0, "a single sentence cannot contradict itself")
        views = [_SentenceFacts.of(s) for s in sentences]
        suspects = [
            (i, j, topic)
            for i, j in combinations(range(len(sentences)), 2)
            if views[i].conflicts_with(views[j])
            and (topic := _topic_overlap(views[i].topic, views[j].topic)) > 0
        ]
        if not suspects:
            return Judgement(1.0, f"{len(sentences)} sentences, no conflicting pair")
        items = [
            EvalItem(claim=sentences[b], source=sentences[a])
            for i, j, _ in suspects
            for a, b in ((i, j), (j, i))
        ]
        scores = self._evaluator.evaluate_batch(items)
        worst, worst_pair = 0.0, (0, 1)
        for n, (i, j, topic) in enumerate(suspects):
            forward, backward = scores[2 * n], scores[2 * n + 1]
            if forward.entailed_score is None or backward.entailed_score is None:
                status = forward.status if forward.entailed_score is None else backward.status
                raise EvaluationError(f"the evaluator gave no entailment score ({status})")
            entailed = max(forward.entailed_score, backward.entailed_score)
            clash = views[i].number_clash(views[j])
            contradiction = topic * max(1.0 - entailed, clash)
            if contradiction > worst:
                worst, worst_pair = contradiction, (i, j)
        if worst == 0.0:
            return Judgement(1.0, f"{len(sentences)} sentences, no contradiction found")
        i, j = worst_pair
        return Judgement(
            1.0 - worst,
            f"contradiction {worst:.2f} between sentences {i + 1} and {j + 1}: "
            f"{_clip(sentences[i])!r} / {_clip(sentences[j])!r}",
        )


@dataclass(frozen=True, slots=True)
class _SentenceFacts:
    """What a contradiction check compares: the topic words, the numbers, negation parity."""

    topic: frozenset[str]
    numbers: frozenset[str]
    negated: bool

    @classmethod
    def of(cls, sentence: str) -> _SentenceFacts:
        view = analyse(sentence)
        negations = sum(s.negations for s in view.sentences)
        return cls(view.content - view.numbers, view.numbers, negations % 2 == 1)

    def conflicts_with(self, other: _SentenceFacts) -> bool:
        """Opposite polarity, or different numbers for what may be the same quantity."""
        return self.negated != other.negated or self.number_clash(other) > 0

    def number_clash(self, other: _SentenceFacts) -> float:
        """Share of the two sentences' numbers that only one of them has (0 if one has none)."""
        if not self.numbers or not other.numbers:
            return 0.0
        return len(self.numbers ^ other.numbers) / len(self.numbers | other.numbers)


class LLMJudge(Judge):
    """One structured LLM call with the judge's own prompt."""

    def __init__(
        self,
        name: str,
        prompt: str,
        client: LLMClient,
        prompts: PromptLibrary,
        model: str,
        *,
        timeout_s: float | None = None,
    ):
        self.name = name
        self.timeout_s = timeout_s
        self._prompt = prompt
        self._client = client
        self._prompts = prompts
        self._model = model

    def judge(self, interaction: Interaction) -> Judgement:
        messages = self._prompts.get(self._prompt).render(
            query=delimit("query", interaction.query),
            context=delimit("context", interaction.context),
            answer=delimit("answer", interaction.answer),
        )
        reply = self._client.complete_json(
            self._model, messages, JudgeOut, timeout_s=self.timeout_s
        )
        return Judgement(reply.score, reply.reason or "(the model gave no reason)")


def _topic_overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    jaccard = len(a & b) / len(a | b)
    return min(1.0, max(0.0, (jaccard - TOPIC_FLOOR) / (TOPIC_FULL - TOPIC_FLOOR)))


def _chargrams(words: frozenset[str]) -> frozenset[str]:
    grams: set[str] = set()
    for word in words:
        padded = f" {word} "
        grams.update(padded[i : i + _CHARGRAM] for i in range(len(padded) - _CHARGRAM + 1))
    return frozenset(grams)


def _containment(part: frozenset[str], whole: frozenset[str]) -> float:
    return len(part & whole) / len(part) if part else 0.0


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
