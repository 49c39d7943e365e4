"""Judges configured in YAML: the shipped set, a user's file enabling and weighting judges, a judge
added with no code (its own prompt, through a scripted OpenAI-compatible server), bad files."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import yaml

from aclarai.agents import load_judge_specs
from aclarai.daemon.service.api import create_app
from aclarai.daemon.service.core import build_service_core
from aclarai.parsers import ConfigError
from tests.helpers.scripted_llm import (
    Recorded,
    Reply,
    json_reply,
    scripted_llm_server,
    status,
    text,
)
from tests.helpers.service import evaluate_payload, make_config, running_app

SPEC_STAGES = ["relevance-judge", "faithfulness-judge", "coherence-judge"]
MORE = ["completeness-judge", "instruction-following-judge"]


def judges_file(tmp_path: Path, **changes: dict[str, object]) -> Path:
    """The shipped judges file with per-judge ``changes`` (by name) applied."""
    specs = yaml.safe_load(
        Path(__file__).resolve().parents[3].joinpath("agents", "answers", "judges.yaml").read_text()
    )
    for entry in specs["judges"]:
        entry.update(changes.get(entry["name"].replace("-", "_"), {}))
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(specs))
    return path


def evaluate(tmp_path: Path, overrides: dict[str, object], **payload: str) -> dict[str, object]:
    config = make_config(tmp_path, overrides, env={"OPENAI_API_KEY": "test-key"})
    core = build_service_core(config)
    try:
        with running_app(create_app(config, core)) as url:
            response = httpx.post(
                f"{url}/api/v1/evaluate", json=evaluate_payload(**payload), timeout=60
            )
    finally:
        core.close()
    assert response.status_code == 200, response.text
    return response.json()


def test_the_shipped_file_runs_the_spec_judges_and_ships_two_more_off() -> None:
    specs = load_judge_specs()
    assert [s.name for s in specs if s.enabled] == SPEC_STAGES
    assert [s.name for s in specs if not s.enabled] == MORE
    assert all(s.offline is not None for s in specs)


def test_enabling_completeness_and_instruction_following_adds_their_stages(
    tmp_path: Path,
) -> None:
    path = judges_file(
        tmp_path,
        completeness_judge={"enabled": True},
        instruction_following_judge={"enabled": True},
    )
    body = evaluate(
        tmp_path,
        {"service.judges_file": str(path)},
        query="How tall is the Eiffel Tower and when was it completed? Answer in one sentence.",
        answer="The Eiffel Tower is 330 metres tall.",
    )
    stages = {s["name"]: s for s in body["stages"][3:]}  # type: ignore[index]
    assert list(stages) == SPEC_STAGES + MORE
    assert stages["completeness-judge"]["score"] == 0.5
    assert "completed" in stages["completeness-judge"]["reason"]
    assert stages["instruction-following-judge"]["score"] == 1.0


def test_weights_set_each_judges_share_of_the_confidence(tmp_path: Path) -> None:
    even = evaluate(tmp_path / "even", {})
    path = judges_file(tmp_path, coherence_judge={"weight": 0}, relevance_judge={"weight": 3})
    weighted = evaluate(tmp_path / "weighted", {"service.judges_file": str(path)})
    scores = {s["name"]: s["score"] for s in weighted["stages"]}  # type: ignore[index]
    pre = sum(scores[n] for n in ("length-checker", "overlap-checker", "format-checker")) / 3
    judges = (3 * scores["relevance-judge"] + scores["faithfulness-judge"]) / 4
    assert weighted["confidence"] == pytest.approx(0.3 * pre + 0.7 * judges)
    assert weighted["confidence"] != pytest.approx(even["confidence"])


def test_a_judge_added_in_yaml_runs_with_its_own_prompt_and_model(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "politeness_judge.yaml").write_text(
        'version: "1"\n'
        "system: |\n  You judge the POLITENESS of an ANSWER. Reply with JSON score and reason.\n"
        "user: |\n  ${query}\n  ${answer}\n"
    )
    path = judges_file(tmp_path)
    specs = yaml.safe_load(path.read_text())
    specs["judges"].append(
        {"name": "politeness-judge", "prompt": "politeness_judge", "model": "polite-model"}
    )
    path.write_text(yaml.safe_dump(specs))

    def respond(request: Recorded) -> Reply:
        if "POLITENESS" in request.system_text:
            return json_reply({"score": 0.25, "reason": "curt"})
        for word in ("RELEVANCE", "FAITHFULNESS", "COHERENCE"):
            if word in request.user_text:
                return json_reply({"score": 1.0, "reason": word.lower()})
        return status(418, message="unexpected prompt")

    with scripted_llm_server() as llm:
        llm.responder = respond
        body = evaluate(
            tmp_path,
            {
                "model.backend": "llm",
                "model.llm.api_base": llm.base_url,
                "model.prompts_dir": str(prompts),
                "service.judges_file": str(path),
            },
        )
        models = {r.body["model"] for r in llm.chat_requests if "POLITENESS" in r.system_text}
    stages = {s["name"]: s for s in body["stages"][3:]}  # type: ignore[index]
    assert list(stages) == [*SPEC_STAGES, "politeness-judge"]
    assert stages["politeness-judge"]["score"] == 0.25
    assert models == {"polite-model"}
    # Below the judge floor, one judge is enough to keep the answer from passing.
    assert body["verdict"] == "review"

    offline = evaluate(tmp_path / "offline", {"service.judges_file": str(path)})
    assert [s["name"] for s in offline["stages"][3:]] == SPEC_STAGES  # type: ignore[index]


def test_a_judge_retries_an_unusable_reply(tmp_path: Path) -> None:
    path = judges_file(tmp_path, relevance_judge={"retries": 2})
    calls: list[str] = []

    def respond(request: Recorded) -> Reply:
        if "RELEVANCE" in request.user_text:
            calls.append("relevance")
            if len(calls) <= 2:
                return text("no JSON here, sorry")
            return json_reply({"score": 0.9, "reason": "fine"})
        return json_reply({"score": 1.0, "reason": "fine"})

    with scripted_llm_server() as llm:
        llm.responder = respond
        body = evaluate(
            tmp_path,
            {
                "model.backend": "llm",
                "model.llm.api_base": llm.base_url,
                "service.judges_file": str(path),
            },
        )
    relevance = next(s for s in body["stages"] if s["name"] == "relevance-judge")  # type: ignore[union-attr]
    assert relevance["score"] == 0.9
    assert len(calls) >= 3


def test_a_judge_that_needs_the_context_fails_without_one(tmp_path: Path) -> None:
    body = evaluate(tmp_path, {}, context="")
    faithfulness = next(s for s in body["stages"] if s["name"] == "faithfulness-judge")  # type: ignore[union-attr]
    assert faithfulness["score"] is None
    assert "context" in faithfulness["reason"]
    assert body["verdict"] != "pass"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("judges:\n  - {name: a, prompt: p, colour: red}\n", "unknown key(s) colour"),
        ("judges:\n  - {name: a}\n", "'prompt' must be a non-empty string"),
        ("judges:\n  - {name: a, prompt: p, weight: -1}\n", "weight must be a number"),
        ("judges:\n  - {name: a, prompt: p, offline: magic}\n", "offline must be null or one of"),
        ("judges:\n  - {name: a, prompt: p}\n  - {name: a, prompt: q}\n", "must be unique"),
        ("judges: {}\n", "expected a top-level 'judges' list"),
        ("judges: [\n", "not valid YAML"),
    ],
)
def test_a_bad_judges_file_is_an_error_naming_the_file_and_the_problem(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "judges.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError) as info:
        load_judge_specs(path)
    assert str(path) in str(info.value) and message in str(info.value)
