"""The ``per_agent`` evaluation mode: one agent per score.

An entailment, a coverage and a decontextualization agent, plus the verification agent, grade each
claim, each with its own prompt and its role's model; the decontextualization agent is shown the
claim's nearest utterances from the ``vector_search_utterances`` tool when its role has it. A
claim's scores are cached whole once every agent answered; an agent that failed leaves its score
``None`` and names itself in the status.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from aclarai.agents.base import EvalItem, Score, explained
from aclarai.agents.cache import ResultCache, cache_key
from aclarai.agents.llm.client import LLMClient
from aclarai.agents.llm.errors import failed_score, failure_status
from aclarai.agents.llm.limits import run_all
from aclarai.agents.llm.prompts import Prompt, PromptLibrary, delimit, delimit_all
from aclarai.agents.llm.schemas import (
    ENTAILMENT_VALUES,
    CoverageOut,
    DecontextualizationOut,
    EntailmentOut,
)
from aclarai.agents.tools import VECTOR_SEARCH, ToolFactory
from aclarai.agents.verify import LLMVerifier
from aclarai.parsers import EvaluationError, reader_text

if TYPE_CHECKING:
    from aclarai.agents.llm.agents import RoleModels

logger = logging.getLogger(__name__)

ROLES = ("entailment", "coverage", "decontextualization", "verification")
"""The agents, each its own prompt (of the same name) and its role's model."""
DECONTEXTUALIZATION_ROLE = "decontextualization_agent"
"""The role whose tools the decontextualization agent is given."""


class PerAgentGrader:
    """Grades claims one agent per score, for :class:`~aclarai.agents.llm.agents.LLMEvaluator`.

    Args:
        client: the endpoint's client.
        models: the model of each role.
        prompts: the prompt library; the agents' prompts are :data:`ROLES`.
        cache: unchanged (prompts, models, claim, source, context) cost nothing when given.
        tools: tools by role; ``vector_search_utterances`` feeds the decontextualization agent.
    """

    def __init__(
        self,
        client: LLMClient,
        *,
        models: RoleModels,
        prompts: PromptLibrary,
        cache: ResultCache | None = None,
        tools: ToolFactory | None = None,
    ) -> None:
        self._client = client
        self._models = models
        self._cache = cache
        self._search = tools.tool(DECONTEXTUALIZATION_ROLE, VECTOR_SEARCH) if tools else None
        self.prompts: Mapping[str, Prompt] = {role: prompts.get(role) for role in ROLES}
        self.role_models = [models.for_role(role) for role in ROLES]
        self._verifier = LLMVerifier(client, model=models.for_role("verification"), prompts=prompts)

    def grade(self, items: Sequence[EvalItem], *, identity: tuple[str, str]) -> list[Score]:
        """The scores of ``items`` (as read), cached under ``identity`` (the evaluator's name and
        the hash of what it asks)."""
        results: list[Score | None] = [None] * len(items)
        keys = [self._key(item, identity) for item in items]
        pending: list[int] = []
        # Equal items (two notes rendering to the same text) are asked once: a model handed
        # the same claim twice in one call tends to answer it once.
        first: dict[str, int] = {}
        copies: list[tuple[int, int]] = []
        for i, key in enumerate(keys):
            if key in first:
                copies.append((i, first[key]))
                continue
            first[key] = i
            stored = self._cache.get(key) if self._cache is not None else None
            score = _score_from_json(stored) if stored is not None else None
            if score is None:
                pending.append(i)
            else:
                results[i] = score
                self._client.usage.add(cache_hits=1)
        workers = self._client.settings.max_concurrency
        scored = run_all(self._score, [items[i] for i in pending], workers)
        for i, outcome in zip(pending, scored, strict=True):
            results[i] = outcome if isinstance(outcome, Score) else failed_score(outcome)
        for i in pending:
            score = results[i]
            if self._cache is not None and score is not None and score.status == "ok":
                self._cache.put(keys[i], dataclasses.asdict(score))
        for i, original in copies:
            results[i] = results[original]
        return [score if score is not None else failed_score(None) for score in results]

    def _key(self, item: EvalItem, identity: tuple[str, str]) -> str:
        name, asked = identity
        top_k = self._search.params.get("top_k") if self._search is not None else None
        return cache_key(
            name, asked, self.role_models, item.claim, item.source, list(item.context), top_k
        )

    def _similar(self, item: EvalItem) -> str:
        if self._search is None:
            return "(no search tool configured)"
        try:
            hits = self._search(query=item.claim)
        except EvaluationError as exc:
            logger.warning("vector search failed for a claim: %s", exc)
            return "(search unavailable)"
        texts = [text for text in (reader_text(hit.text) for hit in hits) if text != item.source]
        return delimit_all("similar_utterance", texts)

    def _score(self, item: EvalItem) -> Score:
        claim = delimit("claim", item.claim)
        source = delimit("source", item.source)
        context = delimit_all("context", list(item.context))
        plan: dict[str, tuple[dict[str, str], type[BaseModel]]] = {
            "entailment": ({"claim": claim, "source": source, "context": context}, EntailmentOut),
            "coverage": ({"claim": claim, "source": source}, CoverageOut),
            "decontextualization": (
                {"claim": claim, "source": source, "similar": self._similar(item)},
                DecontextualizationOut,
            ),
        }
        replies: dict[str, BaseModel] = {}
        problems: list[str] = []
        for role, (fields, schema) in plan.items():
            messages = self.prompts[role].render(**fields)
            try:
                replies[role] = self._client.complete_json(
                    self._models.for_role(role), messages, schema
                )
            except EvaluationError as exc:
                problems.append(f"{role}={failure_status(exc)}")
        verdict = self._verifier.verify(item.claim, [item.source, *item.context])
        if verdict.status != "ok":
            problems.append(f"verification={verdict.status}")
        entailment = replies.get("entailment")
        coverage = replies.get("coverage")
        decontext = replies.get("decontextualization")
        score = Score(
            entailed_score=ENTAILMENT_VALUES[entailment.entailment]
            if isinstance(entailment, EntailmentOut)
            else None,
            coverage_score=coverage.coverage_score if isinstance(coverage, CoverageOut) else None,
            decontextualization_score=decontext.decontextualization_score
            if isinstance(decontext, DecontextualizationOut)
            else None,
            status="; ".join(problems) if problems else "ok",
            verdict=verdict.label if verdict.status == "ok" else None,
            justification=verdict.justification if verdict.status == "ok" else None,
            omitted=tuple(t.strip() for t in coverage.omitted if t.strip())
            if isinstance(coverage, CoverageOut)
            else (),
        )
        return explained(
            score,
            entailment=verdict.justification or "the model finds the source does not support it",
        )


def _score_from_json(stored: Any) -> Score | None:
    if not isinstance(stored, dict):
        return None
    try:
        return Score(**{**stored, "omitted": tuple(stored.get("omitted") or ())})
    except TypeError:
        return None
