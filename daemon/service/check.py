"""``aclarai check``: is an answer consistent with the vault?

The vault's blocks most relevant to the question and answer become the context of the evaluation
service's pipeline (pre-checks, judges, confidence, verdict), and the reply cites them. When no
block is relevant enough, the vault has nothing to say about the question: the reply says so
(verdict ``no_evidence``) instead of failing an answer it cannot judge.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from aclarai.daemon.reports.claims import shorten
from aclarai.daemon.search.engine import SearchHit
from aclarai.daemon.search.query import MAX_QUERY_CHARS
from aclarai.daemon.search.session import VaultSearch
from aclarai.daemon.service.core import (
    AgentInfo,
    EvaluateRequest,
    EvaluateResponse,
    InteractionIn,
    ServiceCore,
)
from aclarai.parsers import AclaraiError

NO_EVIDENCE = "nothing in the vault is relevant to this question"
MAX_TEXT_CHARS = 20_000

Verdict = Literal["pass", "review", "fail", "no_evidence"]


@dataclass(frozen=True, slots=True)
class CheckResult:
    verdict: Verdict
    confidence: float | None
    reason: str
    citations: list[SearchHit]
    evaluation: EvaluateResponse | None
    """The pipeline's full reply (stages); ``None`` when the vault had nothing to judge by."""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "confidence": self.confidence,
            "reason": self.reason,
            "citations": [_citation(hit) for hit in self.citations],
            "stages": ([s.model_dump() for s in self.evaluation.stages] if self.evaluation else []),
        }


def check_answer(vault: VaultSearch, core: ServiceCore, question: str, answer: str) -> CheckResult:
    """Judge ``answer`` to ``question`` against the vault's most relevant blocks.

    Raises:
        AclaraiError: the question or answer is empty or too long.
        EvaluatorUnavailable: a judge needs the model endpoint, which is unreachable.
    """
    for name, text in (("question", question), ("answer", answer)):
        if not text.strip():
            raise AclaraiError(f"the {name} is empty")
        if len(text) > MAX_TEXT_CHARS:
            raise AclaraiError(
                f"the {name} is too long: {len(text)} characters, at most {MAX_TEXT_CHARS}"
            )
    # Each cut to half of what a query reads, so that a long question leaves the answer its say.
    half = MAX_QUERY_CHARS // 2
    cited = relevant_blocks(vault, f"{question[:half]}\n{answer[:half]}")
    if not cited:
        return CheckResult("no_evidence", None, NO_EVIDENCE, [], None)
    request = EvaluateRequest(
        event_id="check",
        event_type="agent_response",
        agent=AgentInfo(name="aclarai-check", type="vault", version="1"),
        interaction=InteractionIn(
            user_query=question, context="\n\n".join(h.text for h in cited), answer=answer
        ),
    )
    response = core.evaluate(request)
    return CheckResult(response.verdict, response.confidence, response.reason, cited, response)


def relevant_blocks(vault: VaultSearch, text: str) -> list[SearchHit]:
    """The vault's blocks relevant enough to judge ``text`` by: at most ``search.check_blocks``,
    each of relevance ``search.relevant_above`` or more."""
    settings = vault.config.search
    hits = vault.search(text, limit=max(settings.check_blocks * 2, 10)).hits
    return [h for h in hits if h.score >= settings.relevant_above][: settings.check_blocks]


def _citation(hit: SearchHit) -> dict[str, Any]:
    return {
        "file": hit.file,
        "block_id": hit.block_id,
        "link": hit.link,
        "text": hit.text,
        "score": round(hit.score, 4),
        "claims": [{"claim": c.claim, "quality": c.quality} for c in hit.claims],
    }


def format_check(result: CheckResult) -> str:
    confidence = "—" if result.confidence is None else f"{result.confidence:.2f}"
    lines = [f"verdict: {result.verdict}  confidence {confidence}", f"reason: {result.reason}"]
    if result.citations:
        lines.append("cited:")
        for hit in result.citations:
            lines.append(f"  {hit.link}  {shorten(hit.text, 120)}")
    return "\n".join(lines)


def check_json(result: CheckResult) -> str:
    return json.dumps(result.as_dict(), ensure_ascii=False)
