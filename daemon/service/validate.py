"""``aclarai validate FILE.jsonl``: how far the configured evaluator agrees with human labels.

Two kinds of line, in any mix:

- an answer event in the evaluation service's request shape plus ``"human_annotation": "pass" |
  "review" | "fail"``: the service's verdict is compared with the human one (agreement, Cohen's κ,
  Kendall's τ-b, confusion matrix);
- a claim pair ``{"source", "claim", "label"}``, the label a boolean or ``supported`` /
  ``partially_supported`` / ``not_supported`` (WiCE's words; ``partially`` counts as not
  supported, since a claim the source only partly supports is one to look at): the evaluator's
  entailment score is compared with the label (AUROC, balanced accuracy at
  ``threshold.claim_quality``, the best threshold, calibration error).

The headline figure of each kind (agreement for answers, AUROC for claims) is what ``--threshold``
gates: the exit status is 1 when one is below it, so CI can gate a model or prompt change. With the
LLM backend the report also says what the run cost (``usage``: calls, tokens, failures...).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from aclarai.agents import (
    VERDICT_ORDER,
    AnswerAgreement,
    ClaimAgreement,
    EvalItem,
    answer_agreement,
    claim_agreement,
)
from aclarai.daemon.service.answer_batch import evaluate_events
from aclarai.daemon.service.core import EvaluateResponse, ServiceCore
from aclarai.daemon.service.jsonl import JsonLine, read_json_lines
from aclarai.parsers import AclaraiError

CLAIM_CHUNK = 256
_TRUE_LABELS = {"true", "1", "yes", "supported", "entailed", "consistent"}
_FALSE_LABELS = {
    "false",
    "0",
    "no",
    "partially_supported",
    "partially supported",
    "partially",
    "weakly_supported",
    "not_supported",
    "not supported",
    "unsupported",
    "refuted",
    "inconsistent",
}


@dataclass
class ValidationReport:
    answers: AnswerAgreement | None
    claims: ClaimAgreement | None
    errors: list[str] = field(default_factory=list)
    threshold: float | None = None
    usage: dict[str, int] | None = None
    """The model endpoint's counters after the run; ``None`` for the offline backend."""
    claim_scores: list[float | None] = field(default_factory=list)
    """Each claim pair's entailment score, in the file's order (``None``: failed), so a caller
    can compare evaluators pair by pair."""

    @property
    def headlines(self) -> dict[str, float | None]:
        figures: dict[str, float | None] = {}
        if self.answers is not None:
            figures["answers.agreement"] = self.answers.agreement
        if self.claims is not None:
            figures["claims.auroc"] = self.claims.auroc
        return figures

    @property
    def passed(self) -> bool:
        if self.threshold is None:
            return True
        return all(v is not None and v >= self.threshold for v in self.headlines.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "answers": None if self.answers is None else asdict(self.answers),
            "claims": None if self.claims is None else asdict(self.claims),
            "threshold": self.threshold,
            "headlines": self.headlines,
            "passed": self.passed,
            "errors": self.errors,
            "usage": self.usage,
            "claim_scores": self.claim_scores,
        }


def claim_label(value: object) -> bool:
    """A human support label as a boolean.

    Raises:
        ValueError: not a label this command knows.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_LABELS:
            return True
        if word in _FALSE_LABELS:
            return False
    raise ValueError(f"label {value!r} is not a boolean or supported / partially / not supported")


def validate(
    lines: Iterable[bytes],
    core: ServiceCore,
    *,
    claim_threshold: float,
    threshold: float | None = None,
    workers: int = 1,
) -> ValidationReport:
    """Evaluate every labelled line with ``core`` and measure the agreement."""
    errors: list[str] = []
    events: list[tuple[JsonLine, str]] = []
    pairs: list[tuple[EvalItem, bool]] = []
    for line in read_json_lines(lines):
        if line.record is None:
            errors.append(line.error or f"line {line.number}: unreadable")
            continue
        try:
            if "interaction" in line.record:
                events.append((line, _human_verdict(line.record)))
            else:
                pairs.append(_claim_pair(line.record))
        except ValueError as exc:
            errors.append(f"line {line.number}: {exc}")
    answers = _answers(events, core, workers, errors) if events else None
    scores = _claim_scores(pairs, core) if pairs else []
    claims = (
        claim_agreement([label for _, label in pairs], scores, claim_threshold) if pairs else None
    )
    if answers is None and claims is None:
        raise AclaraiError("no labelled line could be used: " + ("; ".join(errors[:3]) or "empty"))
    usage = None if core.usage is None else core.usage.snapshot()
    return ValidationReport(answers, claims, errors, threshold, usage, scores)


def _human_verdict(record: dict[str, Any]) -> str:
    human = record.get("human_annotation")
    if human not in VERDICT_ORDER:
        raise ValueError(f"human_annotation must be one of {', '.join(VERDICT_ORDER)}")
    return str(human)


def _claim_pair(record: dict[str, Any]) -> tuple[EvalItem, bool]:
    for name in ("source", "claim"):
        if not isinstance(record.get(name), str) or not record[name].strip():
            raise ValueError(f"field {name!r} must be a non-empty string")
    if "label" not in record:
        raise ValueError("field 'label' is missing")
    return EvalItem(claim=record["claim"], source=record["source"]), claim_label(record["label"])


def _answers(
    events: list[tuple[JsonLine, str]], core: ServiceCore, workers: int, errors: list[str]
) -> AnswerAgreement:
    human_by_line = {line.number: verdict for line, verdict in events}
    human: list[str] = []
    predicted: list[str] = []
    for line, result in evaluate_events((line for line, _ in events), core, workers=workers):
        if isinstance(result, EvaluateResponse):
            human.append(human_by_line[line.number])
            predicted.append(result.verdict)
        else:
            errors.append(str(result))
    return answer_agreement(human, predicted)


def _claim_scores(pairs: list[tuple[EvalItem, bool]], core: ServiceCore) -> list[float | None]:
    scores: list[float | None] = []
    for start in range(0, len(pairs), CLAIM_CHUNK):
        chunk = [item for item, _ in pairs[start : start + CLAIM_CHUNK]]
        scores.extend(score.entailed_score for score in core.evaluator.evaluate_batch(chunk))
    return scores


def format_report(report: ValidationReport) -> str:
    """The report as a table a person reads."""
    out: list[str] = []
    if report.answers is not None:
        a = report.answers
        out += [
            f"answer events       {a.n}",
            f"agreement           {a.agreement:.3f}",
            f"Cohen's kappa       {_fmt(a.cohen_kappa)}",
            f"Kendall's tau-b     {_fmt(a.kendall_tau_b)}",
            "",
            "human \\ evaluator   " + "".join(f"{v:>8}" for v in VERDICT_ORDER),
            *(
                f"{v:<20}" + "".join(f"{n:>8}" for n in row)
                for v, row in zip(VERDICT_ORDER, a.confusion, strict=True)
            ),
        ]
    if report.claims is not None:
        c = report.claims
        if out:
            out.append("")
        out += [
            f"claim pairs         {c.n} ({c.failed} failed evaluations left out)",
            f"AUROC               {_fmt(c.auroc)}",
            f"balanced accuracy   {_fmt(c.balanced_accuracy)} at threshold {c.threshold:.2f}",
            f"best threshold      {_fmt(c.best_threshold)}"
            f" (balanced accuracy {_fmt(c.best_balanced_accuracy)})",
            f"calibration error   {_fmt(c.ece)} (ECE, 10 bins)",
        ]
    if report.usage is not None:
        out += ["", "llm usage           " + ", ".join(f"{k} {v}" for k, v in report.usage.items())]
    if report.errors:
        out += ["", f"lines not used      {len(report.errors)}"]
        out += [f"  {error}" for error in report.errors[:10]]
    if report.threshold is not None:
        verdict = "passed" if report.passed else "FAILED"
        out += ["", f"threshold {report.threshold:.3f}: {verdict}"]
    return "\n".join(out)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
