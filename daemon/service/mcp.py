"""``aclarai mcp``: the evaluation service for AI assistants, as an MCP server over stdio.

Seven tools, on the same evaluation core as the HTTP API (so an assistant and ``curl`` get the same
verdict for the same answer):

- ``evaluate_answer``: pre-checks, judges, confidence and verdict for an answer to a query;
- ``verify_claims``: ``supported`` / ``weakly_supported`` / ``unsupported`` with a one-sentence
  justification for each claim against its documents, or, for a claim given none, against the
  vault's blocks most relevant to it (cited);
- ``grade_text``: the claims of a passage, extracted and scored against a source;
- ``weak_claims``: the vault's claims below the quality threshold (read-only, from the graph);
- ``search_claims``: the vault's graded blocks that answer a query, as ``aclarai search --json``;
- ``get_block``: one block of the vault by its link (``[[Note#^blk-id]]``), with its claims;
- ``check_answer``: is an answer consistent with the vault, as ``aclarai check --json``.

The vault tools take a ``vault`` folder, else ``vault.path``; each vault is opened on first use
and kept open for the server's life (its vectors stay in memory), read-only.

Standard output is the protocol's: logs go to standard error.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from aclarai.agents import EvalItem, ExtractionInput, Utterance
from aclarai.daemon.config import Config
from aclarai.daemon.reports.claims import list_claims
from aclarai.daemon.search.engine import SearchFilter, SearchHit
from aclarai.daemon.search.session import VaultSearch
from aclarai.daemon.service.check import check_answer, relevant_blocks
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
from aclarai.graph import StoredClaim, block_key, claim_quality
from aclarai.parsers import SCORE_NAMES, AclaraiError, named_scores, wikilink_target

SERVER_NAME = "aclarai"
MAX_PASSAGE_CHARS = 200_000
"""A longer passage is refused: ``grade_text`` is for a passage, not a book."""
NO_VAULT = "no vault given: pass vault or set vault.path in the config"
NO_VAULT_EVIDENCE = (
    "no vault (pass vault or set vault.path): the claims given no documents were checked "
    "against nothing (status no_evidence)"
)


class ClaimEvidence(BaseModel):
    """A claim and the documents to check it against."""

    claim: str = Field(min_length=1)
    documents: list[str] = Field(default_factory=list)
    """None given: the vault's blocks most relevant to the claim are its documents."""


def vault_root(config: Config, vault: str | None) -> Path | None:
    """The vault a tool works on: ``vault``, else ``vault.path``; ``None`` when neither is set."""
    root = vault or config.vault.path
    return Path(root).expanduser() if root else None


class VaultSearches:
    """The vaults the tools have searched, each opened on first use and kept until
    :meth:`close` (the server's life), so their vectors stay in memory. Thread-safe: the SDK
    runs each tool call in a worker thread."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._open: dict[str, VaultSearch] = {}
        self._lock = threading.Lock()

    def get(self, vault: str | None) -> VaultSearch:
        """The search of ``vault`` (else ``vault.path``).

        Raises:
            AclaraiError: no vault given or configured, or the vault was never synced.
        """
        root = vault_root(self.config, vault)
        if root is None:
            raise AclaraiError(NO_VAULT)
        key = os.path.realpath(root)
        with self._lock:
            found = self._open.get(key)
            if found is None:
                found = self._open[key] = VaultSearch(self.config, root)
            return found

    def close(self) -> None:
        with self._lock:
            opened, self._open = list(self._open.values()), {}
        for search in opened:
            search.close()


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


def verify(
    core: ServiceCore,
    claims: list[ClaimEvidence],
    vaults: VaultSearches | None = None,
    vault: str | None = None,
) -> dict[str, Any]:
    """A verdict per claim. A claim given no documents is checked against the vault's blocks
    most relevant to it (at most ``search.check_blocks``, relevance ``search.relevant_above``
    or more), and its verdict cites them; with no vault at all, such a claim gets the
    verifier's ``no_evidence`` verdict and the reply a ``note`` saying why."""
    bare = [i for i, item in enumerate(claims) if not any(d.strip() for d in item.documents)]
    found: dict[int, list[SearchHit]] = {}
    note = ""
    if bare and (vaults is None or vault_root(vaults.config, vault) is None):
        note = NO_VAULT_EVIDENCE
    elif bare and vaults is not None:
        search = vaults.get(vault)
        found = {i: relevant_blocks(search, claims[i].claim) for i in bare}
    request = VerifyRequest(
        evidence=[
            EvidenceIn(
                claim=ClaimIn(text=item.claim),
                documents=[
                    DocumentIn(content=d)
                    for d in ([hit.text for hit in found[i]] if i in found else item.documents)
                ],
            )
            for i, item in enumerate(claims)
        ]
    )
    result = core.verify(request).model_dump()
    for i in bare:
        result["verdicts"][i]["citations"] = [_cited(hit) for hit in found.get(i, [])]
    if note:
        result["note"] = note
    return result


def _cited(hit: SearchHit) -> dict[str, str]:
    return {"file": hit.file, "block_id": hit.block_id, "link": hit.link}


def search_claims(
    vaults: VaultSearches,
    query: str,
    vault: str | None,
    limit: int | None,
    min_quality: float | None,
) -> dict[str, Any]:
    if not query.strip():
        raise AclaraiError("the query is empty")
    result = vaults.get(vault).search(
        query, limit=limit, where=SearchFilter(min_quality=min_quality)
    )
    return {
        "hits": [hit.as_dict() for hit in result.hits],
        "blocks": result.blocks,
        "unembedded": result.unembedded,
        "note": result.note,
    }


def parse_block_link(link: str) -> tuple[str, str]:
    """The note (``folder/Note.md``) and block id a link names: ``[[folder/Note#^blk-id]]``,
    ``folder/Note#^blk-id``, with or without ``.md``, ``^`` or a display text (``|…``).

    Raises:
        AclaraiError: no ``#`` between a note and a block id.
    """
    text = link.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2]
    text = text.partition("|")[0].rstrip("\\")
    note, _, block_id = text.partition("#")
    note, block_id = note.strip(), block_id.strip().removeprefix("^").strip()
    if not note or not block_id:
        raise AclaraiError(
            f"not a block link: {link.strip()[:200]!r}; expected [[folder/Note#^blk-id]]"
        )
    return (note if note.endswith(".md") else f"{note}.md"), block_id


def get_block(vaults: VaultSearches, link: str, vault: str | None) -> dict[str, Any]:
    """The block a link names, as the reader sees it, with its claims and their grades."""
    file, block_id = parse_block_link(link)
    search = vaults.get(vault)
    key = block_key(file, block_id)
    stored = search.store.get_blocks([key]).get(key)
    if stored is None or stored.deleted_at is not None:
        raise AclaraiError(
            f"no block ^{block_id} in {file}: check the link (search_claims gives them), or "
            "run `aclarai resync` if the note changed"
        )
    indexed = search.store.search.blocks([key]).get(key)
    claims = search.store.claims_of_blocks([key]).get(key, [])
    return {
        "file": stored.file,
        "block_id": stored.block_id,
        "link": f"[[{wikilink_target(stored.file)}#^{stored.block_id}]]",
        "text": indexed.body if indexed is not None else stored.text,
        "about": indexed.about if indexed is not None else "",
        "claims": [_graded(claim) for claim in claims],
    }


def _graded(claim: StoredClaim) -> dict[str, Any]:
    if claim.score is None:
        scores: dict[str, float | None] = dict.fromkeys(SCORE_NAMES)
        return {
            "claim_id": claim.id,
            "claim": claim.text,
            **scores,
            "quality": None,
            "status": None,
        }
    scores = named_scores(claim.score)
    return {
        "claim_id": claim.id,
        "claim": claim.text,
        **scores,
        "quality": claim_quality(*scores.values()),
        "status": claim.score.status,
    }


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
    root = vault_root(config, vault)
    if root is None:
        raise AclaraiError(NO_VAULT)
    refs = list_claims(config, root, below=below)
    return {"claims": [asdict(ref) for ref in refs[: max(0, limit)]], "total": len(refs)}


T = TypeVar("T")


def _guarded(call: Callable[[], T]) -> T:
    """``call()``; an error the user can act on reaches the assistant as the tool's message."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        return call()
    except AclaraiError as exc:
        raise ToolError(str(exc)) from exc


def build_server(config: Config, core: ServiceCore, vaults: VaultSearches) -> Any:
    """The MCP server with its seven tools on ``core``; ``vaults`` opens the vaults they search
    (the caller closes it)."""
    from mcp.server import MCPServer

    server = MCPServer(
        SERVER_NAME,
        instructions=(
            "Grades answers and claims, and searches the user's graded notes. "
            "evaluate_answer for an AI answer to a query, verify_claims for claims against "
            "documents (or, given none, against the notes), grade_text for every claim of a "
            "passage, weak_claims for the weakest claims of the notes; search_claims for the "
            "notes' blocks that answer a query, best and best-supported first, get_block for one "
            "of them by its [[Note#^blk-id]] link, check_answer for whether an answer agrees "
            "with the notes (no_evidence when they say nothing on it)."
        ),
    )

    @server.tool(name="evaluate_answer")
    def _evaluate_answer(query: str, answer: str, context: str = "") -> dict[str, Any]:
        """Grade an AI answer to a query, given the context it had: pre-checks, relevance,
        faithfulness and coherence judges, a confidence and a pass / review / fail verdict."""
        return _guarded(lambda: evaluate_answer(core, query, context, answer))

    @server.tool(name="verify_claims")
    def _verify_claims(claims: list[ClaimEvidence], vault: str | None = None) -> dict[str, Any]:
        """Check each claim against its documents: supported, weakly_supported or unsupported,
        with a one-sentence justification. A claim given no documents is checked against the
        vault's blocks most relevant to it (vault, else the configured one), and its verdict
        cites them (file, block_id, link)."""
        return _guarded(lambda: verify(core, claims, vaults, vault))

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

    @server.tool(name="search_claims")
    def _search_claims(
        query: str,
        vault: str | None = None,
        limit: int | None = None,
        min_quality: float | None = None,
    ) -> dict[str, Any]:
        """The vault's blocks that answer a query, by words and meaning, better-supported
        claims first: each with its note, [[link]], text, the claim closest to the query and
        its scores and quality (0 to 1). limit: 1 to 100 (default search.limit); min_quality:
        only claims at or above it. Read-only."""
        return _guarded(lambda: search_claims(vaults, query, vault, limit, min_quality))

    @server.tool(name="get_block")
    def _get_block(link_or_id: str, vault: str | None = None) -> dict[str, Any]:
        """One block of the vault by its link, [[folder/Note#^blk-id]] or folder/Note#^blk-id
        (as search_claims gives it): its note, text, and each claim with its scores and
        quality. Read-only."""
        return _guarded(lambda: get_block(vaults, link_or_id, vault))

    @server.tool(name="check_answer")
    def _check_answer(question: str, answer: str, vault: str | None = None) -> dict[str, Any]:
        """Is an answer to a question consistent with the vault? Its most relevant blocks are
        the context of the evaluation: pass / review / fail with a confidence and the blocks
        cited, or no_evidence when the vault says nothing on the question."""
        return _guarded(lambda: check_answer(vaults.get(vault), core, question, answer).as_dict())

    return server


def run_mcp(config: Config) -> int:
    """Serve over stdio until the client closes the connection."""
    core = build_service_core(config)
    vaults = VaultSearches(config)
    try:
        build_server(config, core, vaults).run("stdio")
    finally:
        vaults.close()
        core.close()
    return 0
