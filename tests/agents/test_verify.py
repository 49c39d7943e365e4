"""verify_claims and parse_verdict: the seed's interface, the LLM verifier and the offline one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from aclarai.agents.base import VERDICT_LABELS, EvalItem, Evaluator, Score
from aclarai.agents.llm.client import LLMClient
from aclarai.agents.verify import (
    ClaimVerdict,
    EvaluatorVerifier,
    LLMVerifier,
    parse_verdict,
    verify_claims,
)
from tests.helpers.scripted_llm import ScriptedLLMServer, status, text

DEFAULT = ("unsupported", "Could not parse verification response.")


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("LABEL: supported\nJUSTIFICATION: Stated outright.", ("supported", "Stated outright.")),
        ("LABEL: SUPPORTED\nJUSTIFICATION: Caps.", ("supported", "Caps.")),
        ("label: Weakly Supported\njustification: Partly.", ("weakly_supported", "Partly.")),
        ("**LABEL:** unsupported\n**JUSTIFICATION:** Not there.", ("unsupported", "Not there.")),
        (
            "Here is my verdict.\nLABEL: weakly-supported.\nJUSTIFICATION: Two\nlines.",
            ("weakly_supported", "Two\nlines."),
        ),
        ("LABEL: supported", ("supported", "")),
        ("LABEL: true\nJUSTIFICATION: x", DEFAULT),
        ("The claim is supported.", DEFAULT),
        ("", DEFAULT),
    ],
)
def test_parse_verdict(response: str, expected: tuple[str, str]) -> None:
    assert parse_verdict(response) == expected


@pytest.fixture
def llm_verifier(make_client: Callable[..., LLMClient]) -> LLMVerifier:
    return LLMVerifier(make_client(), model="verifier-model")


def _state(*documents: list[Any], claim: str = "The bridge opened in 1998.") -> dict[str, Any]:
    return {"evidence": [{"claim": {"text": claim}, "documents": docs} for docs in documents]}


def test_empty_documents_are_unsupported_without_a_call(
    llm_server: ScriptedLLMServer, llm_verifier: LLMVerifier
) -> None:
    state = _state([], [{"content": "   "}])

    verify_claims(state, verifier=llm_verifier)

    expected = {
        "claim": "The bridge opened in 1998.",
        "label": "unsupported",
        "justification": "No evidence documents found.",
        "status": "no_evidence",
    }
    assert state["verdicts"] == [expected, expected]
    assert llm_server.requests == []


def test_llm_verdict_sees_only_claim_and_evidence(
    llm_server: ScriptedLLMServer, llm_verifier: LLMVerifier
) -> None:
    llm_server.queue(text("LABEL: supported\nJUSTIFICATION: The note says so."))
    state = _state([{"content": "The bridge opened in 1998.", "path": "/vault/secret-note.md"}])
    state["vault"] = "/vault"

    verify_claims(state, verifier=llm_verifier)

    assert state["verdicts"][0]["label"] == "supported"
    assert state["verdicts"][0]["justification"] == "The note says so."
    assert state["verdicts"][0]["status"] == "ok"
    request = llm_server.chat_requests[0]
    assert request.body["model"] == "verifier-model"
    assert '<untrusted kind="claim">\nThe bridge opened in 1998.\n</untrusted>' in request.user_text
    assert '<untrusted kind="evidence" n="1">' in request.user_text
    assert "secret-note" not in request.user_text
    assert "/vault" not in request.user_text + request.system_text


def test_unreadable_reply_is_retried_once(
    llm_server: ScriptedLLMServer, llm_verifier: LLMVerifier
) -> None:
    llm_server.queue(text("I think it holds."), text("LABEL: weakly_supported\nJUSTIFICATION: Hm."))

    verdict = llm_verifier.verify("claim", ["evidence"])

    assert verdict == ClaimVerdict("weakly_supported", "Hm.", "ok")
    assert len(llm_server.chat_requests) == 2
    assert "did not follow the format" in llm_server.chat_requests[1].user_text


def test_unreadable_twice_falls_back_and_says_so(
    llm_server: ScriptedLLMServer, llm_verifier: LLMVerifier
) -> None:
    llm_server.queue(text("yes"), text("LABEL: maybe"))
    state = _state([{"content": "Some evidence."}])

    verify_claims(state, verifier=llm_verifier)

    verdict = state["verdicts"][0]
    assert (verdict["label"], verdict["justification"]) == DEFAULT
    assert verdict["status"] == "parse_failed"
    assert len(llm_server.chat_requests) == 2


def test_endpoint_down_gives_a_labelled_fallback(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.responder = lambda _request: status(503)
    verifier = LLMVerifier(make_client(max_attempts=2), model="m")

    verdict = verifier.verify("claim", ["evidence"])

    assert verdict.label == "unsupported"
    assert verdict.status == "unavailable"
    assert verdict.justification.startswith("Verification failed")


class _FixedEvaluator(Evaluator):
    """A stand-in at our own interface: returns the score it was built with."""

    name = "fixed"

    def __init__(self, score: Score) -> None:
        self.score = score
        self.seen: list[EvalItem] = []

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        self.seen.extend(items)
        return [self.score for _ in items]


@pytest.mark.parametrize(
    ("entailed", "label"),
    [(1.0, "supported"), (0.7, "supported"), (0.5, "weakly_supported"), (0.1, "unsupported")],
)
def test_evaluator_verifier_cuts_the_entailment_score(entailed: float, label: str) -> None:
    evaluator = _FixedEvaluator(Score(entailed, 0.5, 0.5))

    verdict = EvaluatorVerifier(evaluator).verify("claim", ["doc one", "doc two"])

    assert verdict.label == label
    assert verdict.status == "ok"
    assert evaluator.seen == [EvalItem(claim="claim", source="doc one\n\ndoc two")]


def test_evaluator_verifier_prefers_the_evaluators_own_verdict() -> None:
    evaluator = _FixedEvaluator(Score(0.0, 0.0, 0.0, verdict="weakly_supported", justification="j"))

    assert EvaluatorVerifier(evaluator).verify("c", ["d"]) == ClaimVerdict("weakly_supported", "j")


def test_evaluator_verifier_reports_a_failed_evaluation() -> None:
    evaluator = _FixedEvaluator(Score.failed("llm_unavailable: down"))

    verdict = EvaluatorVerifier(evaluator).verify("c", ["d"])

    assert verdict.label == "unsupported"
    assert verdict.status == "error"
    assert "llm_unavailable" in verdict.justification


def test_default_verifier_works_offline() -> None:
    state = _state(
        [{"content": "The bridge opened to traffic in 1998 after four years of work."}],
        [{"content": "Bananas are rich in potassium."}],
    )

    verify_claims(state)

    labels = [v["label"] for v in state["verdicts"]]
    assert all(label in VERDICT_LABELS for label in labels)
    assert labels[1] == "unsupported"
    assert [v["claim"] for v in state["verdicts"]] == ["The bridge opened in 1998."] * 2


def test_missing_state_evidence_gives_no_verdicts() -> None:
    state: dict[str, Any] = {}

    verify_claims(state, verifier=EvaluatorVerifier(_FixedEvaluator(Score(1.0, 1.0, 1.0))))

    assert state["verdicts"] == []


def test_entry_without_claim_text_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="entry 0"):
        verify_claims(
            {"evidence": [{"claim": {}, "documents": [{"content": "x"}]}]},
            verifier=EvaluatorVerifier(_FixedEvaluator(Score(1.0, 1.0, 1.0))),
        )
