"""``aclarai mcp``: the evaluation service for AI assistants, as an MCP server over stdio.

Four tools, on the same evaluation core as the HTTP API (so an assistant and ``curl`` get the same
verdict for the same answer):

- ``evaluate_answer``: pre-checks, judges, confidence and verdict for an answer to a query;
- ``verify_claims``: ``supported`` / ``weakly_supported`` / ``unsupported`` with a one-sentence
  justification for each claim against its documents;
- ``grade_text``: the claims of a passage, extracted and scored against a source;
- ``weak_claims``: the vault's claims below the quality threshold (read-only, from the graph).

Standard output is the protocol's: logs go to standard error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from aclarai.agents import EvalItem, ExtractionInput, Utterance
from aclarai.daemon.config import Config
from aclarai.daemon.reports.claims import list_claims
from aclarai.daemon.service.core import (
    ClaimIn,
    DocumentIn,
    EvaluateRequest,
    EvidenceIn,
    InteractionIn,
    ServiceCore,
    VerifyRequest,
    build_service_core,
)
from aclarai.parsers import AclaraiError, named_scores

SERVER_NAME = "aclarai"
MAX_PASSAGE_CHARS = 200_000
"""A longer passage is refused: ``grade_text`` is for a passage, not a book."""


class ClaimEvidence(BaseModel):
    """A claim and the documents to check it against."""

    claim: str = Field(min_length=1)
    documents: list[str]


def _agent() -> dict[str, str]:
    return {"name": "mcp-client", "type": "assistant", "version": "1"}


def evaluate_answer(core: ServiceCore, query: str, context: str, answer: str) -> dict[str, Any]:
    request = EvaluateRequest(
        event_id="mcp",
        event_type="agent_response",
        agent=_agent(),  # type: ignore[arg-type]
        interaction=InteractionIn(user_query=query, context=context, answer=answer),
    )
    return core.evaluate(request).model_dump(exclude={"id"})


def verify(core: ServiceCore, claims: list[ClaimEvidence]) -> dict[str, Any]:
    request = VerifyRequest(
        evidence=[
            EvidenceIn(
                claim=ClaimIn(text=item.claim),
                documents=[DocumentIn(content=d) for d in item.documents],
            )
            for item in claims
        ]
    )
    return core.verify(request).model_dump()


def grade_text(core: ServiceCore, passage: str, source: str) -> dict[str, Any]:
    """Extract the claims of ``passage`` (one utterance per paragraph) and score each against
    ``source`` (the passage itself when empty)."""
    if len(passage) > MAX_PASSAGE_CHARS:
        raise AclaraiError(
            f"passage too long: {len(passage)} characters, at most {MAX_PASSAGE_CHARS}"
        )
    paragraphs = [p.strip() for p in passage.split("\n\n") if p.strip()]
    if not paragraphs:
        raise AclaraiError("passage is empty")
    utterances = [Utterance(f"p{n}", text) for n, text in enumerate(paragraphs, 1)]
    inputs = [
        ExtractionInput(u, tuple(utterances[max(0, i - 1) : i]), tuple(utterances[i + 1 : i + 2]))
        for i, u in enumerate(utterances)
    ]
    if core.extractor is None:
        raise AclaraiError("this evaluation core has no claim extractor")
    extracted = core.extractor.extract_batch(inputs)
    claims = [(u, c) for u, found in zip(utterances, extracted, strict=True) for c in found]
    items = [
        EvalItem(claim=c.text, source=source.strip() or u.text, context=(passage,))
        for u, c in claims
    ]
    scores = core.evaluator.evaluate_batch(items) if items else []
    return {
        "claims": [
            {
                "claim": claim.text,
                "paragraph": int(utterance.block_id[1:]),
                **named_scores(score),
                "verdict": score.verdict,
                "justification": score.justification,
                "status": score.status,
            }
            for (utterance, claim), score in zip(claims, scores, strict=True)
        ]
    }


def weak_claims(
    config: Config, vault: str | None, below: float | None, limit: int
) -> dict[str, Any]:
    root = vault or config.vault.path
    if not root:
        raise AclaraiError("no vault given: pass vault or set vault.path in the config")
    refs = list_claims(config, Path(root).expanduser(), below=below)
    return {"claims": [asdict(ref) for ref in refs[: max(0, limit)]], "total": len(refs)}


T = TypeVar("T")


def _guarded(call: Callable[[], T]) -> T:
    """``call()``; an error the user can act on reaches the assistant as the tool's message."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return call()
    except AclaraiError as exc:
        raise ToolError(str(exc)) from exc


def build_server(config: Config, core: ServiceCore) -> Any:
    """The MCP server with its four tools on ``core``."""
    from mcp.server import MCPServer

    server = MCPServer(
        SERVER_NAME,
        instructions=(
            "Grades answers and claims: evaluate_answer for an AI answer to a query, "
            "verify_claims for claims against documents, grade_text for every claim of a "
            "passage, weak_claims for the weakest claims of the user's notes."
        ),
    )

    @server.tool(name="evaluate_answer")
    def _evaluate_answer(query: str, answer: str, context: str = "") -> dict[str, Any]:
        """Grade an AI answer to a query, given the context it had: pre-checks, relevance,
        faithfulness and coherence judges, a confidence and a pass / review / fail verdict."""
        return _guarded(lambda: evaluate_answer(core, query, context, answer))

    @server.tool(name="verify_claims")
    def _verify_claims(claims: list[ClaimEvidence]) -> dict[str, Any]:
        """Check each claim against its documents: supported, weakly_supported or unsupported,
        with a one-sentence justification."""
        return _guarded(lambda: verify(core, claims))

    @server.tool(name="grade_text")
    def _grade_text(passage: str, source: str = "") -> dict[str, Any]:
        """Extract the claims of a passage and score each against a source (the passage itself
        when no source is given): entailment, coverage and decontextualization, 0 to 1, null
        when evaluation failed."""
        return _guarded(lambda: grade_text(core, passage, source))

    @server.tool(name="weak_claims")
    def _weak_claims(
        vault: str | None = None, below: float | None = None, limit: int = 50
    ) -> dict[str, Any]:
        """The claims of the vault's notes scoring below a quality (default the configured
        threshold), worst first, with their scores and where they are. Read-only."""
        return _guarded(lambda: weak_claims(config, vault, below, limit))

    return server


def run_mcp(config: Config) -> int:
    """Serve over stdio until the client closes the connection."""
    core = build_service_core(config)
    try:
        build_server(config, core).run("stdio")
    finally:
        core.close()
    return 0
