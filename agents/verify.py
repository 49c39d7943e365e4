"""Claim verification against evidence documents: the seed's ``verify_claims`` interface.

``verify_claims(state)`` reads ``state["evidence"]`` (``[{"claim": {"text"}, "documents":
[{"content"}]}]``) and writes ``state["verdicts"]`` (``[{"claim", "label", "justification",
"status"}]``). The label is always one of ``supported``, ``weakly_supported``, ``unsupported``;
``status`` tells a real verdict (``ok``) from the fallbacks: ``no_evidence`` (no documents, no call
made), ``parse_failed`` (the model's reply could not be read, twice), ``unavailable`` /
``error`` (the verifier failed). The verifier sees only the claim and the evidence text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aclarai.agents.base import VERDICT_LABELS, EvalItem, Evaluator
from aclarai.agents.llm.client import LLMClient
from aclarai.agents.llm.prompts import Message, PromptLibrary, delimit, delimit_all
from aclarai.parsers import EvaluationError, EvaluatorUnavailable

logger = logging.getLogger(__name__)

PARSE_FAILURE: tuple[str, str] = ("unsupported", "Could not parse verification response.")
NO_EVIDENCE = "No evidence documents found."

_LABEL = re.compile(r"^\s*LABEL\s*:\s*(?P<label>[^\n]+)", re.IGNORECASE | re.MULTILINE)
_JUSTIFICATION = re.compile(
    r"^\s*JUSTIFICATION\s*:\s*(?P<text>.*)", re.IGNORECASE | re.DOTALL | re.M
)
_FORMAT_REMINDER = (
    "Your reply did not follow the format. Answer again with exactly two lines:\n"
    "LABEL: supported | weakly_supported | unsupported\nJUSTIFICATION: one or two sentences"
)


@dataclass(frozen=True, slots=True)
class ClaimVerdict:
    label: str
    justification: str
    status: str = "ok"
    """``ok``, ``no_evidence``, ``parse_failed``, ``unavailable`` or ``error``."""


class Verifier(Protocol):
    """Anything that judges a claim against evidence texts."""

    def verify(self, claim: str, documents: Sequence[str]) -> ClaimVerdict: ...


def parse_verdict(response: str) -> tuple[str, str]:
    """Read ``LABEL: …`` and ``JUSTIFICATION: …`` from a verifier's reply.

    Args:
        response: the model's reply.

    Returns:
        ``(label, justification)`` with the label lower-cased, or
        ``("unsupported", "Could not parse verification response.")`` when no valid label is found.
    """
    return _parse_strict(response) or PARSE_FAILURE


def _parse_strict(response: str) -> tuple[str, str] | None:
    cleaned = response.replace("**", "")
    label_match = _LABEL.search(cleaned)
    if label_match is None:
        return None
    label = label_match.group("label").strip().strip(".'\"`").lower()
    label = re.sub(r"[\s-]+", "_", label)
    if label not in VERDICT_LABELS:
        return None
    justification_match = _JUSTIFICATION.search(cleaned)
    justification = justification_match.group("text").strip() if justification_match else ""
    return label, justification


class LLMVerifier:
    """Asks the model for a verdict; one retry on an unreadable reply, then the parse fallback.

    Args:
        client: the endpoint's client.
        model: the verification model (``model.claimify.verification`` or the default).
        prompts: where the ``verification`` prompt comes from.
    """

    def __init__(
        self, client: LLMClient, *, model: str, prompts: PromptLibrary | None = None
    ) -> None:
        self._client = client
        self._model = model
        self.prompt = (prompts or PromptLibrary()).get("verification")

    def verify(self, claim: str, documents: Sequence[str]) -> ClaimVerdict:
        messages = self.prompt.render(
            claim=delimit("claim", claim), evidence=delimit_all("evidence", list(documents))
        )
        for attempt in (1, 2):
            try:
                response = self._client.complete_text(self._model, messages)
            except EvaluatorUnavailable as exc:
                return ClaimVerdict("unsupported", f"Verification failed: {exc}", "unavailable")
            except EvaluationError as exc:
                return ClaimVerdict("unsupported", f"Verification failed: {exc}", "error")
            parsed = _parse_strict(response)
            if parsed is not None:
                return ClaimVerdict(*parsed)
            logger.info("unreadable verification reply (attempt %d): %.80r", attempt, response)
            messages = [
                *messages,
                Message("assistant", response),
                Message("user", _FORMAT_REMINDER),
            ]
        return ClaimVerdict(*PARSE_FAILURE, status="parse_failed")


class EvaluatorVerifier:
    """Derives a verdict from any :class:`Evaluator` (the offline one needs no endpoint).

    The evaluator's own verdict is used when it gives one; otherwise the entailment score is cut
    at ``supported_at`` and ``weak_at``.
    """

    def __init__(
        self, evaluator: Evaluator, *, supported_at: float = 0.7, weak_at: float = 0.4
    ) -> None:
        self._evaluator = evaluator
        self._supported_at = supported_at
        self._weak_at = weak_at

    def verify(self, claim: str, documents: Sequence[str]) -> ClaimVerdict:
        score = self._evaluator.evaluate(EvalItem(claim=claim, source="\n\n".join(documents)))
        if score.verdict in VERDICT_LABELS:
            return ClaimVerdict(score.verdict, score.justification or "", "ok")
        entailed = score.entailed_score
        if entailed is None:
            return ClaimVerdict("unsupported", f"Evaluation failed: {score.status}", "error")
        if entailed >= self._supported_at:
            label = "supported"
        elif entailed >= self._weak_at:
            label = "weakly_supported"
        else:
            label = "unsupported"
        model = self._evaluator.model_id
        return ClaimVerdict(label, f"Entailment score {entailed:.2f} by {model}.", "ok")


def verify_claims(state: dict[str, Any], *, verifier: Verifier | None = None) -> None:
    """Write ``state["verdicts"]``: one verdict per ``state["evidence"]`` entry, in order.

    Args:
        state: holds ``evidence``; gains ``verdicts``.
        verifier: who judges; by default the offline evaluator, which needs no endpoint.

    Raises:
        ValueError: an evidence entry has no claim text.
    """
    entries = state.get("evidence") or []
    judge = verifier if verifier is not None else _offline_verifier()
    verdicts: list[dict[str, str]] = []
    for position, entry in enumerate(entries):
        claim = _claim_text(entry, position)
        documents = [
            str(doc.get("content") or "") if isinstance(doc, Mapping) else str(doc)
            for doc in entry.get("documents") or []
        ]
        documents = [doc for doc in documents if doc.strip()]
        if documents:
            verdict = judge.verify(claim, documents)
        else:
            verdict = ClaimVerdict("unsupported", NO_EVIDENCE, "no_evidence")
        verdicts.append(
            {
                "claim": claim,
                "label": verdict.label,
                "justification": verdict.justification,
                "status": verdict.status,
            }
        )
    state["verdicts"] = verdicts


def _claim_text(entry: Any, position: int) -> str:
    claim = entry.get("claim") if isinstance(entry, Mapping) else None
    text = claim.get("text") if isinstance(claim, Mapping) else claim
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"evidence entry {position} has no claim text")
    return text


def _offline_verifier() -> Verifier:
    # Imported here so the learned parameters load only when no verifier was given.
    from aclarai.agents.offline.evaluator import OfflineEvaluator

    return EvaluatorVerifier(OfflineEvaluator())
