"""The evaluation service's core, shared by the HTTP API and the Redis Stream consumer.

The wire shapes live here, as pydantic models, because outside input is validated in one place:
``POST /api/v1/evaluate`` and a stream entry's ``payload`` field go through the same
:class:`EvaluateRequest` and come back as the same :class:`EvaluateResponse`, so both routes give
the same answer for the same payload. :class:`ServiceCore` holds the blocking evaluation objects;
the HTTP handlers and the consumer call it from worker threads.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aclarai.agents import (
    AnswerEvalSettings,
    AnswerEvaluator,
    ClaimExtractor,
    Evaluator,
    EvaluatorVerifier,
    Interaction,
    Judge,
    JudgeSpec,
    LLMPronounResolver,
    LLMVerifier,
    NLIQAPipeline,
    PairScore,
    QAItem,
    RuleBasedPronounResolver,
    UsageCounters,
    Verifier,
    llm_judges,
    load_judge_specs,
    offline_judges,
    verify_claims,
)
from aclarai.daemon.config import Config, ServiceSettings
from aclarai.daemon.factory import build_agents
from aclarai.parsers import EvaluatorUnavailable, PayloadError

logger = logging.getLogger(__name__)

MODEL_RETRY_AFTER_S = 30.0
"""What ``Retry-After`` asks of a client while the model endpoint is unreachable."""


# Not \S alone: str.strip(), which the agents use, also strips the separators U+001C to U+001F,
# which are no whitespace to Unicode, so a text of them would pass here and then be empty.
NonBlank = Annotated[str, Field(min_length=1, pattern=r"[^\s\x1c-\x1f]")]


class _Wire(BaseModel):
    # Unknown fields are ignored: existing clients may send more than this service reads.
    model_config = ConfigDict(extra="ignore", frozen=True)


class AgentInfo(_Wire):
    name: str
    type: str
    version: str


class InteractionIn(_Wire):
    user_query: str
    context: str
    answer: str


class EvaluateRequest(_Wire):
    """``POST /api/v1/evaluate``, and the ``payload`` of an ``eval-events`` stream entry."""

    event_id: NonBlank
    event_type: str
    agent: AgentInfo
    interaction: InteractionIn


class StageOut(_Wire):
    name: str
    score: float | None
    """``null`` when the stage failed; its ``reason`` then holds the error."""
    reason: str
    duration_ns: int


class EvaluateResponse(_Wire):
    id: str
    """The request's ``event_id``."""
    stages: list[StageOut]
    confidence: float | None
    """``null`` when every judge failed (verdict ``review``)."""
    verdict: Literal["pass", "review", "fail"]
    reason: str
    """Why this verdict: the confidence, an early exit, or the judges' failures."""


class NLIRequest(_Wire):
    """``POST /api/v1/nli``: one question-answering example."""

    context: str
    question: str
    ground_truth: str
    answer: str


class PairOut(_Wire):
    score: float | None
    """Mean entailment; ``null`` when nothing could be scored (``status`` says why)."""
    status: str
    statements: int


class NLIResponse(_Wire):
    answer_by_context: PairOut
    answer_by_truth: PairOut
    """The answer judged against the end of the question plus the ground truth."""
    truth_by_answer: PairOut
    """The ground truth judged against the end of the question plus the answer."""
    answer_refusal: bool
    truth_refusal: bool


class ClaimIn(_Wire):
    text: NonBlank


class DocumentIn(_Wire):
    content: str


class EvidenceIn(_Wire):
    claim: ClaimIn
    documents: list[DocumentIn]


class VerifyRequest(_Wire):
    """``POST /api/v1/verify``: claims with their evidence documents."""

    evidence: list[EvidenceIn]


class VerdictOut(_Wire):
    claim: str
    label: Literal["supported", "weakly_supported", "unsupported"]
    justification: str
    status: str
    """``ok``, or which fallback produced the label (``no_evidence``, ``parse_failed``, …)."""


class VerifyResponse(_Wire):
    verdicts: list[VerdictOut]


class _Closeable(Protocol):
    def close(self) -> None: ...


def describe_validation_error(exc: ValidationError, *, prefix: Sequence[str | int] = ()) -> str:
    """One line naming each bad field: ``interaction.answer: Field required``."""
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in (*prefix, *error["loc"])) or "(root)"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def parse_evaluate_payload(raw: bytes | str) -> EvaluateRequest:
    """Read a stream entry's payload.

    Raises:
        PayloadError: not UTF-8, not JSON, or not the shape of :class:`EvaluateRequest`.
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text)
    except UnicodeDecodeError as exc:
        raise PayloadError(f"payload: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise PayloadError(f"payload: invalid JSON ({exc.msg} at position {exc.pos})") from exc
    try:
        return EvaluateRequest.model_validate(data)
    except ValidationError as exc:
        raise PayloadError(describe_validation_error(exc)) from exc


@dataclass
class ServiceCore:
    """The blocking evaluation objects behind every route."""

    answers: AnswerEvaluator
    nli: NLIQAPipeline
    verifier: Verifier
    evaluator: Evaluator
    owned: tuple[_Closeable, ...] = ()
    """Other things to close with the core (the LLM client)."""
    model_unreachable: Callable[[], str | None] | None = None
    """Why the model endpoint cannot be reached now (``None`` while it answers)."""
    extractor: ClaimExtractor | None = None
    """The claim extractor of the same backend, for callers that grade passages (MCP)."""
    usage: UsageCounters | None = None
    """What the model endpoint has cost so far (every route shares one client); ``None``
    offline."""
    requests_at_once: Callable[[], int] | None = None
    """How many calls the model endpoint takes at once; ``None`` offline (no limit)."""

    def evaluate(self, request: EvaluateRequest) -> EvaluateResponse:
        """Verdict on one agent answer.

        Raises:
            EvaluatorUnavailable: a judge failed because the model endpoint is unreachable:
                no verdict rather than one made without the model (the API answers 503, the
                stream consumer leaves the event pending).
        """
        i = request.interaction
        result = self.answers.evaluate(Interaction(i.user_query, i.context, i.answer))
        if self.model_unreachable is not None and any(s.score is None for s in result.stages):
            why = self.model_unreachable()
            if why is not None:
                raise EvaluatorUnavailable(
                    f"model endpoint unreachable: {why}", retry_after=MODEL_RETRY_AFTER_S
                )
        return EvaluateResponse(
            id=request.event_id,
            stages=[
                StageOut(name=s.name, score=s.score, reason=s.reason, duration_ns=s.duration_ns)
                for s in result.stages
            ],
            confidence=result.confidence,
            verdict=result.verdict,
            reason=result.reason,
        )

    def check_qa(self, request: NLIRequest) -> NLIResponse:
        """The NLI QA pipeline on one example."""
        result = self.nli.run(
            QAItem(request.context, request.question, request.ground_truth, request.answer)
        )
        return NLIResponse(
            answer_by_context=_pair(result.answer_by_context),
            answer_by_truth=_pair(result.answer_by_truth),
            truth_by_answer=_pair(result.truth_by_answer),
            answer_refusal=result.answer_refusal,
            truth_refusal=result.truth_refusal,
        )

    def verify(self, request: VerifyRequest) -> VerifyResponse:
        """``verify_claims`` on the request's evidence."""
        state: dict[str, Any] = {"evidence": [e.model_dump() for e in request.evidence]}
        verify_claims(state, verifier=self.verifier)
        return VerifyResponse.model_validate({"verdicts": state["verdicts"]})

    def close(self) -> None:
        """Stop the worker pools and release the evaluator."""
        self.answers.close()
        self.evaluator.close()
        for thing in self.owned:
            thing.close()


def answer_settings(service: ServiceSettings) -> AnswerEvalSettings:
    """The answer evaluator's settings from the ``service`` configuration section."""
    return AnswerEvalSettings(
        early_exit_threshold=service.early_exit_threshold,
        min_words=service.pre_checks.min_words,
        too_short_ratio=service.pre_checks.too_short_ratio,
        too_long_ratio=service.pre_checks.too_long_ratio,
        judge_timeout_s=service.judge_timeout_s,
        pre_check_weight=service.weights.pre_checks,
        judge_weight=service.weights.judges,
        pass_above=service.thresholds.pass_above,
        review_above=service.thresholds.review_above,
        judge_floor=service.thresholds.judge_floor,
    )


def judge_specs(service: ServiceSettings) -> list[JudgeSpec]:
    """The judges of ``service.judges_file``, or the shipped ones."""
    return load_judge_specs(None if service.judges_file is None else Path(service.judges_file))


def assemble_core(
    service: ServiceSettings,
    evaluator: Evaluator,
    *,
    judges: Sequence[Judge] | None = None,
    nli: NLIQAPipeline | None = None,
    verifier: Verifier | None = None,
) -> ServiceCore:
    """A core from ready-made parts; what is not given is the offline default on ``evaluator``.

    Args:
        service: thresholds, weights and timeouts.
        evaluator: the entailment scorer (offline or LLM-backed).
        judges: the answer judges; the offline ones on ``evaluator`` by default.
        nli: the NLI QA pipeline; ``evaluator`` with rule-based pronouns by default.
        verifier: the claim verifier; verdicts from ``evaluator`` by default.
    """
    return ServiceCore(
        answers=AnswerEvaluator(
            offline_judges(evaluator, judge_specs(service)) if judges is None else judges,
            answer_settings(service),
        ),
        nli=nli or NLIQAPipeline(evaluator, RuleBasedPronounResolver()),
        verifier=verifier or EvaluatorVerifier(evaluator),
        evaluator=evaluator,
    )


def build_service_core(config: Config) -> ServiceCore:
    """The evaluation service's core: offline judges, or LLM-backed ones sharing the evaluator's
    client (one rate limit, one usage count) when ``model.backend=llm``. The evaluator's cache
    lives in the state folder of the configured vault (``vault.path``, else the current folder).
    """
    state_dir = config.state_dir_for(Path(config.vault.path or "."))
    agents = build_agents(config, state_dir)
    if agents.client is None or agents.prompts is None:
        core = assemble_core(config.service, agents.evaluator)
    else:
        claimify = config.model.claimify
        model = claimify.verification or claimify.default
        client, prompts = agents.client, agents.prompts
        core = assemble_core(
            config.service,
            agents.evaluator,
            # Each attempt of a judge's call gets only as long as the evaluation waits for it, not
            # the longer time a model call may take to write a reply.
            judges=llm_judges(
                client,
                prompts,
                model,
                judge_specs(config.service),
                timeout_s=config.service.judge_timeout_s,
            ),
            nli=NLIQAPipeline(
                agents.evaluator, LLMPronounResolver(client, model=model, prompts=prompts)
            ),
            verifier=LLMVerifier(client, model=model, prompts=prompts),
        )
    core.owned = (agents,)
    core.extractor = agents.extractor
    core.usage = agents.usage
    if agents.client is not None:
        core.requests_at_once = agents.client.requests_at_once
        health = agents.client.health
        core.model_unreachable = lambda: (health.last_error or "no answer") if health.down else None
    return core


def _pair(score: PairScore) -> PairOut:
    return PairOut(score=score.score, status=score.status, statements=score.statements)
