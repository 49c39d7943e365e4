"""The grading jobs and results as they travel through Redis: pure encoding, no I/O.

A job is one block's extraction (its text and window) or one block's claims to score (their
source, window and ids), with the identity of the grader that must do it and the stream its
result goes to. Its key is a digest of all of that: the same work asked again (a daemon started
again over the same queue) has the same key, so it is done once. A result carries its job's
key; scores are JSON floats, which read back exactly, so a note graded by a worker is written
byte for byte as one graded at home.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from aclarai.agents import (
    Claim,
    ClaimExtractor,
    EvalItem,
    Evaluator,
    ExtractionInput,
    Score,
    Utterance,
)
from aclarai.parsers import SCORE_NAMES, PayloadError

WIRE_VERSION = 1
Kind = Literal["extract", "evaluate"]


def work_stream(prefix: str, grader: str) -> str:
    """The stream of jobs for one grader identity: a worker reads only the work it can do."""
    return f"{prefix}:work:{hashlib.sha256(grader.encode()).hexdigest()[:16]}"


def results_stream(prefix: str, vault_id: str) -> str:
    return f"{prefix}:results:{vault_id}"


def dead_letter_stream(prefix: str) -> str:
    return f"{prefix}:dead"


def roster_key(prefix: str) -> str:
    """The hash of the workers' heartbeats, by worker name."""
    return f"{prefix}:workers"


def job_key(prefix: str, key: str) -> str:
    """Present while the job is published and its result not written yet."""
    return f"{prefix}:job:{key}"


@dataclass(frozen=True)
class Job:
    kind: Kind
    grader: str
    """The identity of extractor and evaluator that must grade it (see :func:`grader_identity`)."""
    reply_to: str
    fresh: bool = False
    """Bypass the worker's result cache (``resync --reevaluate``)."""
    inputs: tuple[ExtractionInput, ...] = ()
    items: tuple[EvalItem, ...] = ()
    nearby: tuple[Utterance, ...] = ()
    """The utterances of the daemon's index nearest each claim (what the per-agent
    decontextualization agent's vector search finds), so a worker's search finds the same."""

    @property
    def key(self) -> str:
        return key_of(encode_job(self))


@dataclass(frozen=True)
class Outcome:
    """A job's result: per input its claims or its error, or per item its score."""

    key: str
    worker: str = ""
    claims: tuple[tuple[Claim, ...] | str, ...] = ()
    scores: tuple[Score, ...] = ()
    error: str | None = None
    """Why no worker could grade it (it went to the dead-letter stream)."""
    model: str = ""


RESULTS_MAXLEN = 100_000
"""About how many results a vault's results stream keeps (its daemon reads them at once)."""


def key_of(raw: bytes) -> str:
    """A job's key from its payload as published: a worker can answer a job it cannot read."""
    return hashlib.sha256(raw).hexdigest()[:32]


def reply_to_of(raw: bytes) -> str | None:
    """Where a payload that is not a readable job asks its result to go, if it says."""
    try:
        body = json.loads(raw)
    except (ValueError, TypeError):
        return None
    reply_to = body.get("reply_to") if isinstance(body, dict) else None
    return reply_to if isinstance(reply_to, str) and reply_to else None


def grader_identity(extractor: ClaimExtractor, evaluator: Evaluator) -> str:
    """What grades with these agents: a job asks for it, and a worker serves it."""
    return f"{extractor.name}@{extractor.version}+{evaluator.model_id}"


def _utterance(u: Utterance) -> list[str]:
    return [u.block_id, u.text]


def encode_job(job: Job) -> bytes:
    body: dict[str, Any] = {
        "v": WIRE_VERSION,
        "kind": job.kind,
        "grader": job.grader,
        "reply_to": job.reply_to,
        "fresh": job.fresh,
    }
    if job.kind == "extract":
        body["inputs"] = [
            {
                "block": _utterance(i.block),
                "before": [_utterance(u) for u in i.before],
                "after": [_utterance(u) for u in i.after],
                "conversation": i.conversation,
            }
            for i in job.inputs
        ]
    else:
        body["items"] = [[i.claim, i.source, list(i.context), i.claim_id] for i in job.items]
        if job.nearby:
            body["nearby"] = [_utterance(u) for u in job.nearby]
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def decode_job(raw: bytes) -> Job:
    """Raises:
    PayloadError: ``raw`` is not a job of this version."""
    body = _body(raw, "job")
    kind = body.get("kind")
    grader, reply_to = _text(body.get("grader"), "grader"), _text(body.get("reply_to"), "reply_to")
    fresh = _flag(body.get("fresh"), "fresh")
    if kind == "extract":
        inputs = []
        for row in _list(body.get("inputs"), "inputs"):
            i = _object(row, "input")
            inputs.append(
                ExtractionInput(
                    _utterance_of(i.get("block"), "block"),
                    tuple(_utterance_of(u, "before") for u in _list(i.get("before"), "before")),
                    tuple(_utterance_of(u, "after") for u in _list(i.get("after"), "after")),
                    _flag(i.get("conversation", True), "conversation"),
                )
            )
        return Job("extract", grader, reply_to, fresh, inputs=tuple(inputs))
    if kind == "evaluate":
        items = []
        for row in _list(body.get("items"), "items"):
            fields = _list(row, "item")
            if len(fields) != 4:
                raise PayloadError("item: expected [claim, source, context, claim_id]")
            claim, source, context, claim_id = fields
            items.append(
                EvalItem(
                    _text(claim, "claim"),
                    _text(source, "source"),
                    tuple(_text(t, "context") for t in _list(context, "context")),
                    None if claim_id is None else _text(claim_id, "claim_id"),
                )
            )
        nearby = tuple(_utterance_of(u, "nearby") for u in _list(body.get("nearby", []), "nearby"))
        return Job("evaluate", grader, reply_to, fresh, items=tuple(items), nearby=nearby)
    raise PayloadError(f"unknown job kind {kind!r}")


def encode_outcome(outcome: Outcome) -> bytes:
    body: dict[str, Any] = {"v": WIRE_VERSION, "key": outcome.key, "worker": outcome.worker}
    if outcome.error is not None:
        body["error"] = outcome.error
    body["model"] = outcome.model
    body["claims"] = [
        {"error": c} if isinstance(c, str) else [[x.id, x.block_id, x.text] for x in c]
        for c in outcome.claims
    ]
    body["scores"] = [asdict(s) for s in outcome.scores]
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def decode_outcome(raw: bytes) -> Outcome:
    """Raises:
    PayloadError: ``raw`` is not a result of this version."""
    body = _body(raw, "result")
    claims: list[tuple[Claim, ...] | str] = []
    for found in _list(body.get("claims"), "claims"):
        if isinstance(found, dict):
            claims.append(_text(found.get("error"), "error"))
            continue
        block_claims = []
        for row in _list(found, "claims"):
            fields = _list(row, "claim")
            if len(fields) != 3:
                raise PayloadError("claim: expected [id, block_id, text]")
            block_claims.append(Claim(*(_text(f, "claim") for f in fields)))
        claims.append(tuple(block_claims))
    error = body.get("error")
    return Outcome(
        key=_text(body.get("key"), "key"),
        worker=_text(body.get("worker", ""), "worker"),
        claims=tuple(claims),
        scores=tuple(_score_of(s) for s in _list(body.get("scores"), "scores")),
        error=None if error is None else _text(error, "error"),
        model=_text(body.get("model", ""), "model"),
    )


def _body(raw: bytes, what: str) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except (ValueError, TypeError) as exc:
        raise PayloadError(f"{what} is not JSON: {exc}") from exc
    body = _object(body, what)
    if body.get("v") != WIRE_VERSION:
        raise PayloadError(f"{what} of wire version {body.get('v')!r}, not {WIRE_VERSION}")
    return body


def _object(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PayloadError(f"{what}: expected a JSON object")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise PayloadError(f"{what}: expected a JSON array")
    return value


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise PayloadError(f"{what}: expected a string")
    return value


def _flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise PayloadError(f"{what}: expected true or false")
    return value


def _utterance_of(value: object, what: str) -> Utterance:
    pair = _list(value, what)
    if len(pair) != 2:
        raise PayloadError(f"{what}: expected [block_id, text]")
    return Utterance(_text(pair[0], what), _text(pair[1], what))


_SCORE_FIELDS = frozenset(f.name for f in fields(Score))


def _score_of(value: object) -> Score:
    body = _object(value, "score")
    if set(body) != _SCORE_FIELDS:
        raise PayloadError(f"score: expected the fields {sorted(_SCORE_FIELDS)}")

    def number(name: str) -> float | None:
        found = body.get(name)
        if found is None:
            return None
        if isinstance(found, bool) or not isinstance(found, int | float):
            raise PayloadError(f"score {name}: expected a number or null")
        return float(found)

    def optional(name: str) -> str | None:
        found = body.get(name)
        return None if found is None else _text(found, f"score {name}")

    return Score(
        *(number(name) for name in SCORE_NAMES),
        status=_text(body["status"], "score status"),
        verdict=optional("verdict"),
        justification=optional("justification"),
        omitted=tuple(_text(t, "score omitted") for t in _list(body["omitted"], "omitted")),
    )
