"""LLM-backed claim extraction (Claimify) and claim evaluation.

Extraction is one call per block: the Claimify stages (select what is verifiable, resolve
references from the context, split into atomic self-contained claims) are one instruction, and
the nearest neighbouring blocks (at most :data:`CONTEXT_CHARS` of them) are context, never a
source: a claim not drawn from its block is dropped
(:func:`~aclarai.agents.llm.grounding.drawn_from`). The result is cached by the block's text and
window.

Evaluation has two modes. ``combined`` (the default) sends one call per source block that grades
the entailment of all its claims at once, one token each (``{"c1": 5, "c2": 2}``, read as the
expected grade where the server gives logprobs); coverage (names, numbers, dates kept) and
decontextualization (pronouns, vague references) are the lexical checks of the offline agents,
which a small model does no better and which would triple the tokens it writes. The entailment
score mixes in ``lexical_share`` of the offline scorer's probability, because a model and a
lexical scorer go wrong on different pairs (the measurements: docs/evaluators.md). ``per_agent``
follows the one-agent-per-score design (:mod:`aclarai.agents.llm.per_agent`).

Every prompt puts what repeats first (the instructions, the same for every block and note; for
grading, the block before its claims), so a server's prompt cache serves the repeated part.

A failed or unreadable evaluation gives ``None`` scores and a status saying why; it is never 0 and
never cached, so it is retried on the next run. Each block is extracted on its own: one that fails
(an unreadable reply, a prompt the model refuses as too long) fails alone.

Prompts fit the model's context when its size is known (``model.llm.context_tokens``, or what the
server said): the neighbouring blocks are cut first (all to half the longest one's length, again
and again), then dropped, and only then the block itself; every cut is marked with
:data:`~aclarai.agents.llm.fitting.CUT_MARKER` so the model sees it.
Extracted texts that repeat the prompt's scaffolding (``<untrusted kind=``, ``claim_1``) are
dropped: they are the model echoing its instructions, not claims.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

from aclarai.agents.base import (
    Claim,
    ClaimExtractor,
    EvalItem,
    Evaluator,
    ExtractionInput,
    Score,
    Utterance,
    as_read,
    explained,
    prose_of,
)
from aclarai.agents.base import claim_id as make_claim_id
from aclarai.agents.cache import ResultCache, cache_key
from aclarai.agents.llm.client import LLMClient
from aclarai.agents.llm.errors import failed_score
from aclarai.agents.llm.fitting import CONTEXT_CHARS, fit_prompt, nearest_context, nearest_first
from aclarai.agents.llm.grades import unit_score, weighed_grades
from aclarai.agents.llm.grounding import drawn_from
from aclarai.agents.llm.limits import run_all
from aclarai.agents.llm.per_agent import PerAgentGrader
from aclarai.agents.llm.prompts import (
    Message,
    PromptLibrary,
    delimit,
    echoes_scaffolding,
)
from aclarai.agents.llm.schemas import ExtractionOut, grades_schema
from aclarai.agents.offline.coverage import coverage
from aclarai.agents.offline.decontext import decontextualization
from aclarai.agents.offline.evaluator import OfflineEvaluator
from aclarai.agents.offline.language import language_of
from aclarai.agents.offline.not_claims import (
    is_numbered_item,
    not_a_claim,
    states_nothing,
    strip_label,
)
from aclarai.agents.tools import ToolFactory
from aclarai.parsers import EvaluationError, InputTooLong, normalize_text

logger = logging.getLogger(__name__)

R = TypeVar("R")
Mode = Literal["combined", "per_agent"]
EXTRACTION_PROMPT = "claim_extraction"
GRADING_PROMPT = "claim_grading"
TOP_LOGPROBS = 5
"""Options asked for at each reply token: the grades 1 to 5 that matter are near the top."""
SUPPORTED_FROM = 0.75
WEAKLY_SUPPORTED_FROM = 0.375
_CLAIM_ID = re.compile(r"\b(c\d+)\s*:", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class RoleModels:
    """Model name per role (``model.claimify``); ``None`` means ``default``."""

    default: str = "gpt-4o-mini"
    extraction: str | None = None
    entailment: str | None = None
    coverage: str | None = None
    decontextualization: str | None = None
    verification: str | None = None

    def for_role(self, role: str) -> str:
        """The model for ``role`` (one of the field names), falling back to ``default``."""
        return getattr(self, role) or self.default


def _nonblank(texts: Sequence[str]) -> list[str]:
    return [t.strip() for t in texts if t.strip()]


def _short_hash(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:10]


def _refitting(client: LLMClient, attempt: Callable[[], R]) -> R:
    """``attempt()``, and once more if it was refused as too long and that taught the client a
    smaller context than the prompt was fitted to (the prompts are fitted again)."""
    budget = client.prompt_budget_tokens()
    try:
        return attempt()
    except InputTooLong:
        if client.prompt_budget_tokens() in (None, budget):
            raise
        logger.info("prompt refused as too long; fitting it to %s tokens", client.context_tokens)
        return attempt()


class LLMClaimExtractor(ClaimExtractor):
    """Claimify-style extraction through the endpoint of ``client``, one call per block.

    Args:
        client: the endpoint's client.
        model: the extraction model (``RoleModels.for_role("extraction")``).
        prompts: the prompt library (shipped prompts by default).
        cache: unchanged blocks cost nothing when given.

    :meth:`extract_each` gives each block its claims or its own error; ``extract_batch`` raises
    the first error after every block was tried (the others are cached by then), so that a block
    is never recorded as having no claims because its extraction failed.
    """

    name = "llm-claimify"

    def __init__(
        self,
        client: LLMClient,
        *,
        model: str,
        prompts: PromptLibrary | None = None,
        cache: ResultCache | None = None,
    ) -> None:
        self._client = client
        self._model = model
        self._cache = cache
        self._prompt = (prompts or PromptLibrary()).get(EXTRACTION_PROMPT)
        self.version = _short_hash(self._prompt.key)

    def extract_each(
        self, inputs: Sequence[ExtractionInput]
    ) -> list[list[Claim] | EvaluationError]:
        # A list's markers go with the prose: whether a block is a numbered item is kept aside.
        read = [(prose_of(item), is_numbered_item(item.block.text)) for item in inputs]
        return run_all(self._extract, read, self._client.settings.max_concurrency)

    def extract_batch(self, inputs: Sequence[ExtractionInput]) -> list[list[Claim]]:
        outcomes = self.extract_each(inputs)
        for outcome in outcomes:
            if isinstance(outcome, EvaluationError):
                raise outcome
        return [outcome for outcome in outcomes if not isinstance(outcome, EvaluationError)]

    def _extract(self, job: tuple[ExtractionInput, bool]) -> list[Claim]:
        item, numbered = job
        block = item.block
        if not block.text.strip():
            return []
        neighbours = [u.text for u in (*item.before, *item.after)]
        lang = language_of(block.text, neighbours)
        if states_nothing(block.text, lang, numbered=numbered):
            return []  # steps, links, labels, questions: the rules every extractor keeps
        before, after = nearest_context(
            [u.text for u in item.before], [u.text for u in item.after], CONTEXT_CHARS
        )
        key = cache_key(self.name, self._model, [self._prompt.key], block.text, before, after)
        stored = self._cache.get(key) if self._cache is not None else None
        if isinstance(stored, list):
            self._client.usage.add(cache_hits=1)
            texts = [str(t) for t in stored]
        else:
            texts = _refitting(self._client, lambda: self._ask(block, before, after))
            if self._cache is not None:
                self._cache.put(key, texts)
        unique = list(dict.fromkeys(t for t in _nonblank(texts) if not echoes_scaffolding(t)))
        claims = []
        for text in unique:
            if not drawn_from(text, block.text, (*before, *after)):
                logger.info(
                    "block %s: dropped a claim not drawn from the block: %r", block.block_id, text
                )
            elif (kind := _no_claim(text, lang)) is not None:
                # A small model copies a step or an opinion of a mixed block as it stands.
                logger.info("block %s: dropped a reply read as %s: %r", block.block_id, kind, text)
            else:
                claims.append(Claim(make_claim_id(block.block_id, text), block.block_id, text))
        return claims

    def _ask(self, block: Utterance, before: list[str], after: list[str]) -> list[str]:
        def render(context: list[str], text: str) -> list[Message]:
            return self._prompt.render(
                before=_context_field(context[: len(before)]),
                after=_context_field(context[len(before) :]),
                block=delimit("target_block", text),
            )

        context, text = fit_prompt(
            render, [*before, *after], block.text, self._client.prompt_budget_tokens()
        )
        if text != block.text:
            logger.warning(
                "block %s: cut to fit the model's context of %s tokens",
                block.block_id,
                self._client.context_tokens,
            )
        reply = self._client.complete_json(self._model, render(context, text), ExtractionOut)
        return _nonblank(reply.claims)


def _no_claim(text: str, lang: str) -> str | None:
    """What a reply is when it states nothing: the offline rules' kind, or a question."""
    if text.rstrip().endswith(("?", "？")):
        return "question"
    return not_a_claim(strip_label(normalize_text(text)), lang)


def _context_field(texts: Sequence[str]) -> str:
    return delimit("context", "\n\n".join(texts)) if texts else "(none)"


class LLMEvaluator(Evaluator):
    """Scores claims with a model; see the module docstring for the two modes.

    Args:
        client: the endpoint's client.
        models: the model of each role; ``combined`` mode uses ``default``.
        prompts: the prompt library (shipped prompts by default).
        cache: unchanged (model, prompts, claim, source, context) cost nothing when given.
        mode: ``combined`` (one call per block's claims) or ``per_agent``.
        tools: tools by role; ``vector_search_utterances`` feeds the decontextualization agent.
        claims_per_call: in combined mode, the most claims of one block graded by one call.
        lexical_share: in combined mode, the share of the entailment score taken from the
            offline scorer's probability, the rest from the model's grade (0: the model alone;
            the daemon passes ``model.llm.lexical_share``).
    """

    name = "llm"

    def __init__(
        self,
        client: LLMClient,
        *,
        models: RoleModels,
        prompts: PromptLibrary | None = None,
        cache: ResultCache | None = None,
        mode: Mode = "combined",
        tools: ToolFactory | None = None,
        claims_per_call: int = 20,
        lexical_share: float = 0.0,
    ) -> None:
        if mode not in ("combined", "per_agent"):
            raise ValueError(f"unknown evaluation mode {mode!r}")
        if not 0.0 <= lexical_share < 1.0:
            raise ValueError(f"lexical_share must be at least 0 and below 1, not {lexical_share}")
        library = prompts or PromptLibrary()
        self._client = client
        self._models = models
        self._cache = cache
        self._mode = mode
        self._claims_per_call = max(1, claims_per_call)
        self._per_agent = (
            PerAgentGrader(client, models=models, prompts=library, cache=cache, tools=tools)
            if mode == "per_agent"
            else None
        )
        if self._per_agent is None:
            self._prompts = {GRADING_PROMPT: library.get(GRADING_PROMPT)}
            self._role_models = [models.default]
        else:
            self._prompts = dict(self._per_agent.prompts)
            self._role_models = self._per_agent.role_models
        self._lexical = OfflineEvaluator() if mode == "combined" and lexical_share > 0 else None
        self._lexical_share = lexical_share if self._lexical is not None else 0.0
        # The cache holds what the model said, which the share does not change; the identity of
        # the scores (``model_id``) does include it.
        self._asked = _short_hash(mode, *(p.key for p in self._prompts.values()))
        self.version = (
            f"{self._asked}+lex{self._lexical_share!r}.{self._lexical.version}"
            if self._lexical is not None
            else self._asked
        )

    @property
    def model_id(self) -> str:
        models = "+".join(dict.fromkeys(self._role_models))
        return f"{self.name}-{self._mode}:{models}@{self.version}"

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        given = items
        items = as_read(items)
        if self._per_agent is not None:
            return self._per_agent.grade(items, identity=(self.name, self._asked))
        return self._evaluate_combined(items, given)

    def _evaluate_combined(
        self, items: Sequence[EvalItem], given: Sequence[EvalItem]
    ) -> list[Score]:
        """One call per block's claims; only the model's grade is cached, under the context the
        prompt showed, so the lexical scores follow their rules and a far neighbour's edit costs
        no call. ``items`` are ``given`` as read; the offline scorer reads ``given`` itself, so it
        scores the text the model saw (reading is not idempotent)."""
        shown = [
            replace(item, context=tuple(t for t in nearest_first(item.context, CONTEXT_CHARS) if t))
            for item in items
        ]
        keys = [
            cache_key(self.name, self._asked, self._role_models, i.claim, i.source, list(i.context))
            for i in shown
        ]
        grades: dict[str, float | EvaluationError] = {}
        pending: dict[str, int] = {}
        for i, key in enumerate(keys):
            if key in grades or key in pending:
                continue  # equal items are asked once: a model given one claim twice answers once
            stored = self._cache.get(key) if self._cache is not None else None
            if isinstance(stored, dict) and isinstance(stored.get("grade"), int | float):
                grades[key] = float(stored["grade"])
                self._client.usage.add(cache_hits=1)
            else:
                pending[key] = i
        groups = self._groups([(i, shown[i]) for i in pending.values()])
        workers = self._client.settings.max_concurrency
        for group, outcome in zip(groups, run_all(self._score_group, groups, workers), strict=True):
            for n, (i, _) in enumerate(group, 1):
                grade = outcome if isinstance(outcome, EvaluationError) else outcome[f"c{n}"]
                grades[keys[i]] = grade
                if self._cache is not None and isinstance(grade, float):
                    self._cache.put(keys[i], {"grade": grade})
        lexical: dict[int, Score] = {}
        if self._lexical is not None:
            graded = [i for i, key in enumerate(keys) if isinstance(grades[key], float)]
            scored = self._lexical.evaluate_batch([given[i] for i in graded])
            lexical = dict(zip(graded, scored, strict=True))
        return [
            _graded(item, grades[key], lexical=lexical.get(i), share=self._lexical_share)
            for i, (item, key) in enumerate(zip(items, keys, strict=True))
        ]

    def _groups(self, pending: list[tuple[int, EvalItem]]) -> list[list[tuple[int, EvalItem]]]:
        by_block: dict[tuple[str, tuple[str, ...]], list[tuple[int, EvalItem]]] = {}
        for i, item in pending:
            by_block.setdefault((item.source, item.context), []).append((i, item))
        size = self._claims_per_call
        return [
            members[start : start + size]
            for members in by_block.values()
            for start in range(0, len(members), size)
        ]

    def _score_group(self, group: list[tuple[int, EvalItem]]) -> dict[str, float]:
        return _refitting(self._client, lambda: self._score_group_once(group))

    def _score_group_once(self, group: list[tuple[int, EvalItem]]) -> dict[str, float]:
        source = group[0][1]
        claims = delimit(
            "claims",
            "\n".join(f"c{n}: {_claim_line(item.claim)}" for n, (_, item) in enumerate(group, 1)),
        )

        def render(context: list[str], text: str) -> list[Message]:
            # A claim pair has no context: its heading would be tokens read for nothing.
            around = f"\nContext around the source:\n{_context_field(context)}\n" if context else ""
            return self._prompts[GRADING_PROMPT].render(
                context=around, source=delimit("source", text), claims=claims
            )

        context, text = fit_prompt(
            render, list(source.context), source.source, self._client.prompt_budget_tokens()
        )
        reply, tokens = self._client.complete_json_weighed(
            self._models.default,
            render(context, text),
            grades_schema(len(group)),
            top_logprobs=TOP_LOGPROBS,
        )
        return weighed_grades(tokens, reply.model_dump())


def _graded(
    item: EvalItem, grade: float | EvaluationError, *, lexical: Score | None, share: float
) -> Score:
    """The claim's scores from the model's entailment grade and the lexical agents: entailment is
    the grade with ``share`` of the offline scorer's probability (``lexical``) mixed in; the grade
    alone where no offline score is asked for (``None``) or it could not be had."""
    if isinstance(grade, EvaluationError):
        return failed_score(grade)
    entailed = unit_score(grade)
    lexically = ""
    if lexical is not None and lexical.entailed_score is not None:
        entailed = round((1 - share) * entailed + share * lexical.entailed_score, 3)
        lexically = f"; the offline scorer gives it {lexical.entailed_score:.2f}"
    elif lexical is not None:
        lexically = f"; the offline scorer could not score it ({lexical.status})"
    covered = coverage(item.claim, item.source)
    standalone = decontextualization(item.claim, item.source, item.context)
    verdict = grade_verdict(entailed)
    label = verdict.replace("_", " ").capitalize()
    why = f"the model grades the source's support for the claim {grade:.1f} of 5{lexically}"
    score = Score(
        entailed_score=entailed,
        coverage_score=covered.score,
        decontextualization_score=standalone.score,
        verdict=verdict,
        justification=f"{label}: {why}.",
        omitted=covered.omitted,
    )
    return explained(score, entailment=why, decontextualization="; ".join(standalone.reasons[:2]))


def _claim_line(claim: str) -> str:
    """A claim on one line of the claims section, with no ``c2:`` of its own that could pose as
    another claim's id."""
    return _CLAIM_ID.sub(r"\1 -", " ".join(claim.split()))


def grade_verdict(entailed: float) -> str:
    """The verdict a graded claim's entailment score gives: from 0.75 (a grade of 4 of 5 with no
    offline share) supported, from 0.375 weakly supported."""
    if entailed >= SUPPORTED_FROM:
        return "supported"
    if entailed >= WEAKLY_SUPPORTED_FROM:
        return "weakly_supported"
    return "unsupported"
