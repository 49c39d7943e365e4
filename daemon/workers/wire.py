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
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from aclarai.agents import Claim, EvalItem, ExtractionInput, Score, Utterance
from aclarai.parsers import PayloadError

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
        return hashlib.sha256(encode_job(self)).hexdigest()[:32]


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


def grader_identity(extractor_name: str, extractor_version: str, model_id: str) -> str:
    return f"{extractor_name}@{extractor_version}+{model_id}"


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
    try:
        body = json.loads(raw)
        if body.get("v") != WIRE_VERSION:
            raise PayloadError(f"job of wire version {body.get('v')!r}, not {WIRE_VERSION}")
        kind = body["kind"]
        grader, reply_to, fresh = str(body["grader"]), str(body["reply_to"]), bool(body["fresh"])
        if kind == "extract":

            def utterances(rows: Sequence[Sequence[str]]) -> tuple[Utterance, ...]:
                return tuple(Utterance(str(b), str(t)) for b, t in rows)

            inputs = tuple(
                ExtractionInput(
                    Utterance(str(i["block"][0]), str(i["block"][1])),
                    utterances(i["before"]),
                    utterances(i["after"]),
                )
                for i in body["inputs"]
            )
            return Job("extract", grader, reply_to, fresh, inputs=inputs)
        if kind == "evaluate":
            items = tuple(
                EvalItem(str(c), str(s), tuple(map(str, ctx)), None if i is None else str(i))
                for c, s, ctx, i in body["items"]
            )
            nearby = tuple(Utterance(str(b), str(t)) for b, t in body.get("nearby", ()))
            return Job("evaluate", grader, reply_to, fresh, items=items, nearby=nearby)
        raise PayloadError(f"unknown job kind {kind!r}")
    except PayloadError:
        raise
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise PayloadError(f"malformed job: {type(exc).__name__}: {exc}") from exc


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
    try:
        body = json.loads(raw)
        if body.get("v") != WIRE_VERSION:
            raise PayloadError(f"result of wire version {body.get('v')!r}, not {WIRE_VERSION}")
        claims: list[tuple[Claim, ...] | str] = []
        for c in body["claims"]:
            if isinstance(c, dict):
                claims.append(str(c["error"]))
            else:
                claims.append(tuple(Claim(str(i), str(b), str(t)) for i, b, t in c))
        scores = tuple(
            Score(**{**s, "omitted": tuple(s.get("omitted") or ())}) for s in body["scores"]
        )
        return Outcome(
            key=str(body["key"]),
            worker=str(body.get("worker", "")),
            claims=tuple(claims),
            scores=scores,
            error=body.get("error"),
            model=str(body.get("model", "")),
        )
    except PayloadError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise PayloadError(f"malformed result: {type(exc).__name__}: {exc}") from exc
