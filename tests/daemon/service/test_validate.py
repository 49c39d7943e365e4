"""``aclarai validate`` and ``aclarai evaluate --events``: agreement with human labels and batch
evaluation of answer events, through the library and the real command line."""

from __future__ import annotations

import csv
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aclarai.agents import EvalItem, answer_agreement, claim_agreement
from aclarai.daemon.service.answer_batch import run_event_batch
from aclarai.daemon.service.core import ServiceCore, build_service_core
from aclarai.daemon.service.validate import claim_label, validate
from tests.helpers.cli import run_cli as run_in_process
from tests.helpers.service import evaluate_payload, make_config

PAIRS = Path(__file__).resolve().parents[2] / "data" / "labelled_pairs.csv"


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceCore]:
    built = build_service_core(make_config(tmp_path_factory.mktemp("validate")))
    yield built
    built.close()


def event(event_id: str, human: str, **interaction: str) -> dict[str, Any]:
    return {**evaluate_payload(event_id, **interaction), "human_annotation": human}


ANSWER_EVENTS = [
    event("good", "pass"),
    event("short", "fail", query="Explain in detail how the tower was built.", answer="ok"),
    event("filler", "fail", answer="I don't know."),
    event("rome", "fail", answer="The Eiffel Tower is 150 metres tall and stands in Rome."),
]


def jsonl(records: list[Any]) -> list[bytes]:
    return [(json.dumps(r) if not isinstance(r, bytes) else r.decode()).encode() for r in records]


def test_answer_agreement_matches_hand_computed_statistics() -> None:
    human = ["pass", "pass", "review", "fail", "fail", "fail"]
    predicted = ["pass", "review", "review", "fail", "fail", "pass"]
    result = answer_agreement(human, predicted)
    assert result.n == 6
    assert result.agreement == pytest.approx(4 / 6)
    # p_o = 4/6; p_e = (2*2 + 1*2 + 3*2) / 36 = 12/36; kappa = (p_o - p_e) / (1 - p_e) = 0.5
    assert result.cohen_kappa == pytest.approx(0.5)
    assert result.confusion == ((1, 1, 0), (0, 1, 0), (1, 0, 2))
    assert result.kendall_tau_b is not None and 0.0 < result.kendall_tau_b < 1.0


def test_claim_agreement_reports_auroc_best_threshold_and_calibration() -> None:
    labels = [True, True, True, False, False, False, True]
    scores: list[float | None] = [0.9, 0.8, 0.4, 0.3, 0.2, 0.85, None]
    result = claim_agreement(labels, scores, threshold=0.7)
    assert result.n == 7 and result.failed == 1
    # Positives 0.9, 0.8, 0.4 against negatives 0.3, 0.2, 0.85: 7 of 9 pairs ordered right.
    assert result.auroc == pytest.approx(7 / 9)
    assert result.balanced_accuracy == pytest.approx((2 / 3 + 2 / 3) / 2)
    assert result.best_threshold is not None and result.best_balanced_accuracy is not None
    assert result.best_balanced_accuracy >= result.balanced_accuracy
    assert result.ece is not None and 0.0 < result.ece < 1.0


def test_a_perfectly_calibrated_scorer_has_no_calibration_error() -> None:
    labels = [True] * 8 + [False] * 2 + [True] * 2 + [False] * 8
    scores: list[float | None] = [0.85] * 10 + [0.25] * 10
    assert claim_agreement(labels, scores, 0.5).ece == pytest.approx(0.05)


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        (True, True),
        ("supported", True),
        ("partially_supported", False),
        ("not supported", False),
        (0, False),
    ],
)
def test_claim_labels_in_the_forms_datasets_use(label: object, expected: bool) -> None:
    assert claim_label(label) is expected


def test_an_unknown_label_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match="'maybe'"):
        claim_label("maybe")


def test_validate_answers_and_claims_with_bad_lines_reported(core: ServiceCore) -> None:
    lines = [
        *jsonl(
            [
                *ANSWER_EVENTS,
                {"source": "The tower is 330 metres tall.", "claim": "It is 330 m.", "label": True},
                {
                    "source": "The tower is 330 metres tall.",
                    "claim": "It is 150 m.",
                    "label": False,
                },
                {"event_id": "x", "interaction": {}, "human_annotation": "maybe"},
            ]
        ),
        b"\xff\xfe not utf-8",
        b"[1, 2]",
    ]
    report = validate(lines, core, claim_threshold=0.7, threshold=0.5)
    assert report.answers is not None and report.answers.n == 4
    assert report.answers.agreement == 0.75
    assert report.claims is not None and report.claims.n == 2
    assert [e.split(":")[0] for e in report.errors] == ["line 7", "line 8", "line 9"]
    assert report.passed


def test_validate_on_the_vendored_human_labels(core: ServiceCore) -> None:
    with PAIRS.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    lines = jsonl(
        [
            {"source": r["grounding"], "claim": r["generated_text"], "label": r["label"] == "1"}
            for r in rows
        ]
    )
    report = validate(lines, core, claim_threshold=0.7, threshold=0.7)
    assert report.claims is not None and report.claims.n == len(rows) == 240
    items = [EvalItem(r["generated_text"], r["grounding"]) for r in rows]
    scored = [s.entailed_score for s in core.evaluator.evaluate_batch(items)]
    assert report.as_dict()["claim_scores"] == report.claim_scores == scored, "in the file's order"
    assert report.claims.auroc is not None and report.claims.auroc > 0.75
    assert report.passed
    strict = validate(lines, core, claim_threshold=0.7, threshold=0.99)
    assert not strict.passed


def test_event_batch_keeps_input_order_and_survives_bad_lines(core: ServiceCore) -> None:
    import io

    lines = [*jsonl(ANSWER_EVENTS[:2]), b"{broken", *jsonl([{"event_id": "z"}, ANSWER_EVENTS[2]])]
    out = io.StringIO()
    summary = run_event_batch(io.BytesIO(b"\n".join(lines) + b"\n"), out, core, workers=3)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["id"] for r in records] == ["good", "short", None, "z", "filler"]
    assert "invalid JSON" in records[2]["error"]
    assert "interaction: Field required" in records[3]["error"]
    assert records[0]["verdict"] == "pass" and records[1]["verdict"] == "fail"
    assert summary.evaluated == 3 and summary.errors == 2
    assert summary.verdicts["fail"] == 2


def run_cli(tmp_path: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {"ACLARAI_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    return run_in_process(*args, env={**env, "PATH": "/usr/bin:/bin"}, stdin=stdin, text=False)


def test_validate_command_gates_on_the_threshold(tmp_path: Path) -> None:
    data = tmp_path / "labelled.jsonl"
    data.write_bytes(b"\n".join(jsonl(ANSWER_EVENTS)) + b"\n")
    report_path = tmp_path / "report.json"
    ok = run_cli(
        tmp_path, "validate", str(data), "--threshold", "0.7", "--report", str(report_path)
    )
    assert ok.returncode == 0, ok.stderr
    assert b"Cohen's kappa" in ok.stdout and b"threshold 0.700: passed" in ok.stdout
    report = json.loads(report_path.read_text())
    # The invented answer is capped at review by its faithfulness score; the humans failed it.
    assert report["answers"]["confusion"] == [[1, 0, 0], [0, 0, 0], [0, 1, 2]]
    assert report["answers"]["agreement"] == 0.75
    assert report["passed"] is True
    disagree = tmp_path / "disagree.jsonl"
    flipped = [{**e, "human_annotation": "review"} for e in ANSWER_EVENTS]
    disagree.write_bytes(b"\n".join(jsonl(flipped)) + b"\n")
    failed = run_cli(tmp_path, "validate", str(disagree), "--threshold", "0.7", "--json")
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["passed"] is False


def test_evaluate_events_command_streams_responses_and_a_summary(tmp_path: Path) -> None:
    stdin = b"\n".join(jsonl(ANSWER_EVENTS)) + b"\n\xff\n"
    done = run_cli(tmp_path, "evaluate", "--events", "-", "--summary", stdin=stdin)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in records] == ["good", "short", "filler", "rome", None]
    assert "not UTF-8" in records[-1]["error"]
    assert b"events evaluated   4" in done.stderr


def test_json_python_will_not_decode_is_one_error_record_in_every_reader(
    core: ServiceCore,
) -> None:
    """A 5,000-digit number and nesting past the recursion limit are valid JSON that Python
    refuses: each line gets its error, the batch and the validation go on."""
    import io

    huge = b'{"event_id": "big", "n": ' + b"9" * 5000 + b"}"
    deep = b"[" * 100_000 + b"]" * 100_000
    lines = [huge, deep, *jsonl(ANSWER_EVENTS[:1])]
    out = io.StringIO()
    summary = run_event_batch(io.BytesIO(b"\n".join(lines) + b"\n"), out, core)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert "invalid JSON" in records[0]["error"] and "nested too deeply" in records[1]["error"]
    assert records[2]["verdict"] == "pass" and summary.errors == 2
    report = validate(lines, core, claim_threshold=0.7)
    assert [e.split(":")[0] for e in report.errors] == ["line 1", "line 2"]
    assert report.answers is not None and report.answers.n == 1
    assert report.answers.cohen_kappa is None, "undefined with one label, not a warning"
