"""The hand-written labelled answer events of ``benchmarks/data/``: every line is a request the
evaluation service takes, with a human verdict ``aclarai validate`` reads."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from aclarai.daemon.service.core import EvaluateRequest, ServiceCore, build_service_core
from aclarai.daemon.service.validate import validate
from tests.helpers.service import make_config

WRITTEN = (
    Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "answer_events_written.jsonl"
)


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceCore]:
    built = build_service_core(make_config(tmp_path_factory.mktemp("answer-events")))
    yield built
    built.close()


def test_every_written_event_is_a_service_request_with_a_human_verdict() -> None:
    records = [json.loads(line) for line in WRITTEN.read_text(encoding="utf-8").splitlines()]
    for record in records:
        request = EvaluateRequest.model_validate(record)
        # The faithfulness judge needs a context: without one it fails and caps at review.
        assert request.interaction.context.strip() and request.interaction.answer.strip()
    assert len({r["event_id"] for r in records}) == len(records)
    assert Counter(r["human_annotation"] for r in records) == {"review": 14, "pass": 7}


def test_validate_uses_every_written_event(core: ServiceCore) -> None:
    report = validate(WRITTEN.read_bytes().splitlines(), core, claim_threshold=0.5)
    assert report.errors == []
    assert report.answers is not None and report.answers.n == 21
    # The confusion matrix's rows are the human verdicts.
    assert [sum(row) for row in report.answers.confusion] == [7, 14, 0]
