"""The HTTP API against a real uvicorn server on a loopback port, with the offline backend."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclarai.daemon.config import Config
from aclarai.daemon.service.api import create_app
from aclarai.daemon.service.core import ServiceCore, assemble_core, build_service_core
from aclarai.parsers import ConfigError, EvaluationError
from tests.fixtures.processes import free_port
from tests.helpers.scripted_llm import Recorded, Reply, json_reply, scripted_llm_server, status
from tests.helpers.service import evaluate_payload, make_config, running_app
from tests.helpers.service_fakes import OverlapEvaluator, RaisingJudge

LONG_QUESTION = (
    "Could you explain in detail how the Eiffel Tower was built, who designed it, and why it "
    "was so controversial among the artists of Paris at the time of its construction?"
)
DOC_PATHS = ("/openapi.json", "/docs", "/redoc")
SCHEMA_EXAMPLES = max(30, settings.default.max_examples // 3)
"""Per route and mode: 33 in `make test`, hundreds under `make fuzz` (the profile decides)."""
FUZZ_TIMEOUT_S = max(120, settings.default.max_examples // 2)
STAGES = ["length-checker", "overlap-checker", "format-checker"]
JUDGES = ["relevance-judge", "faithfulness-judge", "coherence-judge"]


@pytest.fixture(scope="module")
def api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The offline service, as ``aclarai serve`` builds it, on a loopback port."""
    config = make_config(tmp_path_factory.mktemp("api"))
    core = build_service_core(config)
    try:
        with running_app(create_app(config, core)) as url:
            yield url
    finally:
        core.close()


@pytest.fixture
def api(api_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api_url) as client:
        yield client


def test_health_reports_the_package_version(api: httpx.Client) -> None:
    response = api.get("/api/v1/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "version": version("aclarai")}


def test_evaluate_answers_in_the_documented_shape(api: httpx.Client) -> None:
    response = api.post("/api/v1/evaluate", json=evaluate_payload("evt-42"))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"id", "stages", "confidence", "verdict", "reason"}
    assert body["id"] == "evt-42"
    assert [s["name"] for s in body["stages"]] == STAGES + JUDGES
    for stage in body["stages"]:
        assert set(stage) == {"name", "score", "reason", "duration_ns"}
        assert 0.0 <= stage["score"] <= 1.0
        assert isinstance(stage["duration_ns"], int) and stage["duration_ns"] > 0
    assert body["verdict"] in {"pass", "review", "fail"}


def test_a_grounded_answer_beats_an_invented_one(api: httpx.Client) -> None:
    grounded = api.post("/api/v1/evaluate", json=evaluate_payload()).json()
    invented = api.post(
        "/api/v1/evaluate",
        json=evaluate_payload(answer="The Eiffel Tower is 150 metres tall and stands in Rome."),
    ).json()
    assert _stage(grounded, "faithfulness-judge") > _stage(invented, "faithfulness-judge")
    assert grounded["confidence"] > invented["confidence"]
    assert grounded["verdict"] == "pass"


def test_short_answer_to_a_long_question_fails_early(api: httpx.Client) -> None:
    body = api.post(
        "/api/v1/evaluate", json=evaluate_payload(query=LONG_QUESTION, answer="ok")
    ).json()
    assert body["verdict"] == "fail"
    assert [s["name"] for s in body["stages"]] == STAGES


@pytest.mark.parametrize(
    ("body", "status", "named"),
    [
        (b'{"event_id": "x", ', 400, "invalid JSON"),
        (b"", 422, "body"),
        (b"[1, 2]", 422, "body"),
        (json.dumps({"event_id": "x"}).encode(), 422, "interaction"),
    ],
)
def test_malformed_bodies_are_4xx_naming_the_problem(
    api: httpx.Client, body: bytes, status: int, named: str
) -> None:
    response = api.post(
        "/api/v1/evaluate", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == status
    assert named in response.json()["detail"]


def test_missing_and_mistyped_fields_are_named(api: httpx.Client) -> None:
    payload = evaluate_payload()
    del payload["interaction"]["answer"]
    payload["agent"]["version"] = 2
    response = api.post("/api/v1/evaluate", json=payload)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert "interaction.answer: Field required" in detail
    assert "agent.version: Input should be a valid string" in detail


def test_a_blank_event_id_is_refused(api: httpx.Client) -> None:
    response = api.post("/api/v1/evaluate", json=evaluate_payload(event_id=" "))
    assert response.status_code == 422
    assert "event_id" in response.json()["detail"]


def test_oversized_bodies_are_refused_before_parsing(api: httpx.Client) -> None:
    big = evaluate_payload(context="x " * 600_000)
    response = api.post("/api/v1/evaluate", json=big)
    assert response.status_code == 413
    assert "over the limit of 1048576 bytes" in response.json()["detail"]

    def chunks() -> Iterator[bytes]:
        # No Content-Length: the limit is enforced while the body streams in.
        for _ in range(20):
            yield b"x" * 100_000

    streamed = api.post(
        "/api/v1/evaluate", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413


def test_a_body_declared_as_another_type_is_refused(api: httpx.Client) -> None:
    response = api.post(
        "/api/v1/evaluate",
        content=json.dumps(evaluate_payload()),
        headers={"content-type": "text/plain"},
    )
    assert response.status_code == 415
    assert response.json()["detail"] == "content-type: expected application/json, got text/plain"


def test_a_body_without_content_type_is_read_as_json(api: httpx.Client) -> None:
    response = api.post("/api/v1/evaluate", content=json.dumps(evaluate_payload("evt-raw")))
    assert response.status_code == 200
    assert response.json()["id"] == "evt-raw"


def test_nli_scores_the_three_pairs_and_flags_refusals(api: httpx.Client) -> None:
    response = api.post(
        "/api/v1/nli",
        json={
            "context": "Albert Einstein was born in Ulm in 1879.",
            "question": "Where was Albert Einstein born?",
            "ground_truth": "Albert Einstein was born in Ulm.",
            "answer": "I don't know. He may have been born in Ulm.",
        },
    )
    assert response.status_code == 200
    body = response.json()
    assert body["answer_refusal"] is True
    assert body["truth_refusal"] is False
    for pair in ("answer_by_context", "answer_by_truth", "truth_by_answer"):
        assert 0.0 <= body[pair]["score"] <= 1.0
        assert body[pair]["statements"] >= 1


def test_verify_gives_a_verdict_per_claim(api: httpx.Client) -> None:
    response = api.post(
        "/api/v1/verify",
        json={
            "evidence": [
                {
                    "claim": {"text": "The Eiffel Tower is 330 metres tall."},
                    "documents": [{"content": "The Eiffel Tower in Paris is 330 metres tall."}],
                },
                {"claim": {"text": "The Louvre opened in 1793."}, "documents": []},
            ]
        },
    )
    assert response.status_code == 200
    first, second = response.json()["verdicts"]
    assert first["claim"] == "The Eiffel Tower is 330 metres tall."
    assert first["label"] in {"supported", "weakly_supported", "unsupported"}
    assert second == {
        "claim": "The Louvre opened in 1793.",
        "label": "unsupported",
        "justification": "No evidence documents found.",
        "status": "no_evidence",
    }


@pytest.mark.parametrize("claim", [{}, {"text": " "}, {"text": "\u001e"}, {"text": "\u001c\u001f"}])
def test_verify_refuses_a_claim_without_text(api: httpx.Client, claim: dict[str, str]) -> None:
    # U+001C..U+001F are no whitespace to Unicode's \S but are to str.strip(): a 500 once.
    evidence = [{"claim": claim, "documents": [{"content": "x"}]}]
    response = api.post("/api/v1/verify", json={"evidence": evidence})
    assert response.status_code == 422
    assert "evidence.0.claim.text" in response.json()["detail"]


def test_bearer_token_guards_every_route_but_health(tmp_path: Path) -> None:
    config = make_config(tmp_path, {"service.token_env": "SVC_TOKEN"}, env={"SVC_TOKEN": "s3cret"})
    core = _overlap_core(config)
    try:
        with running_app(create_app(config, core)) as url, httpx.Client(base_url=url) as client:
            assert client.get("/api/v1/health").status_code == 200
            payload = evaluate_payload()
            missing = client.post("/api/v1/evaluate", json=payload)
            wrong = client.post(
                "/api/v1/evaluate", json=payload, headers={"Authorization": "Bearer nope"}
            )
            right = client.post(
                "/api/v1/evaluate", json=payload, headers={"Authorization": "Bearer s3cret"}
            )
            lower = client.post(
                "/api/v1/evaluate", json=payload, headers={"Authorization": "bearer s3cret"}
            )
            docs_without = {path: client.get(path).status_code for path in DOC_PATHS}
            docs_with = {
                path: client.get(path, headers={"Authorization": "Bearer s3cret"})
                for path in DOC_PATHS
            }
    finally:
        core.close()
    assert missing.status_code == 401 and "bearer token" in missing.json()["detail"]
    assert wrong.status_code == 401
    assert right.status_code == 200
    assert lower.status_code == 200
    assert docs_without == dict.fromkeys(DOC_PATHS, 401)
    assert {path: r.status_code for path, r in docs_with.items()} == dict.fromkeys(DOC_PATHS, 200)
    schema = docs_with["/openapi.json"].json()
    assert "HTTPBearer" in schema["components"]["securitySchemes"]
    assert set(schema["paths"]) == {
        "/api/v1/health",
        "/api/v1/evaluate",
        "/api/v1/nli",
        "/api/v1/verify",
        "/api/v1/search",
        "/api/v1/check",
    }
    assert "/openapi.json" in docs_with["/docs"].text


def test_without_a_token_the_schema_and_docs_are_open(api: httpx.Client) -> None:
    assert {path: api.get(path).status_code for path in DOC_PATHS} == dict.fromkeys(DOC_PATHS, 200)


def test_a_token_variable_that_is_not_set_is_a_config_error(tmp_path: Path) -> None:
    config = make_config(tmp_path, {"service.token_env": "UNSET_TOKEN"})
    core = _overlap_core(config)
    try:
        with pytest.raises(ConfigError, match="UNSET_TOKEN"):
            create_app(config, core)
    finally:
        core.close()


def test_judge_failures_show_in_stages_and_never_as_zero(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    core = assemble_core(
        config.service,
        OverlapEvaluator(),
        judges=[
            RaisingJudge("relevance-judge", EvaluationError("endpoint unreachable")),
            RaisingJudge("faithfulness-judge", EvaluationError("endpoint unreachable")),
        ],
    )
    try:
        with running_app(create_app(config, core)) as url:
            body = httpx.post(f"{url}/api/v1/evaluate", json=evaluate_payload()).json()
    finally:
        core.close()
    assert body["verdict"] == "review"
    assert body["confidence"] is None
    judged = body["stages"][3:]
    assert [s["score"] for s in judged] == [None, None]
    assert all("endpoint unreachable" in s["reason"] for s in judged)
    assert "every judge failed" in body["reason"]


def test_the_llm_backend_judges_with_the_model(tmp_path: Path) -> None:
    judged = {"RELEVANCE": 0.9, "FAITHFULNESS": 0.8, "COHERENCE": 1.0}

    def respond(request: Recorded) -> Reply:
        for word, score in judged.items():
            if word in request.user_text:
                return json_reply({"score": score, "reason": f"{word.lower()} by the model"})
        return status(418, message="unexpected prompt")

    with scripted_llm_server() as llm:
        llm.responder = respond
        config = make_config(
            tmp_path,
            {"model.backend": "llm", "model.llm.api_base": llm.base_url},
            env={"OPENAI_API_KEY": "test-key"},
        )
        core = build_service_core(config)
        try:
            with running_app(create_app(config, core)) as url:
                body = httpx.post(f"{url}/api/v1/evaluate", json=evaluate_payload()).json()
        finally:
            core.close()
    scores = {s["name"]: s["score"] for s in body["stages"][3:]}
    assert scores == {"relevance-judge": 0.9, "faithfulness-judge": 0.8, "coherence-judge": 1.0}
    assert body["stages"][3]["reason"] == "relevance by the model"
    assert len(llm.chat_requests) == 3


SERVE = """
import sys
from aclarai.daemon.service.api import serve
from aclarai.daemon.config import load_config

home = sys.argv[1]
serve(load_config(env={"XDG_CONFIG_HOME": home, "ACLARAI_STATE_DIR": home}), port=int(sys.argv[2]))
"""


def test_serve_answers_until_sigterm(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(tmp_path), str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        verdict = httpx.post(
            f"http://127.0.0.1:{port}/api/v1/evaluate", json=evaluate_payload()
        ).json()["verdict"]
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert health.json()["version"] == version("aclarai")
    assert verdict == "pass"
    assert process.returncode == 0


def _overlap_core(config: Config) -> ServiceCore:
    return assemble_core(config.service, OverlapEvaluator())


def _stage(body: dict[str, Any], name: str) -> float:
    return next(s["score"] for s in body["stages"] if s["name"] == name)


FUZZED = [
    ("GET", "/api/v1/health", schemathesis.GenerationMode.POSITIVE),
    *(
        ("POST", path, mode)
        for path in ("/api/v1/evaluate", "/api/v1/nli", "/api/v1/verify")
        for mode in schemathesis.GenerationMode
    ),
]


@pytest.mark.slow
@pytest.mark.timeout(FUZZ_TIMEOUT_S)
@pytest.mark.parametrize(("method", "path", "mode"), FUZZED)
def test_fuzz_the_api_against_its_own_schema(
    api_url: str, method: str, path: str, mode: schemathesis.GenerationMode
) -> None:
    """Schema-valid and schema-violating inputs: never a 5xx, every answer as documented."""
    operation = schemathesis.openapi.from_url(f"{api_url}/openapi.json")[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=SCHEMA_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate()

    check()


@pytest.fixture(scope="module")
def guarded_api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The offline service with a bearer token, on a loopback port."""
    config = make_config(
        tmp_path_factory.mktemp("guarded"),
        {"service.token_env": "SVC_TOKEN"},
        env={"SVC_TOKEN": "s3cret"},
    )
    core = build_service_core(config)
    try:
        with running_app(create_app(config, core)) as url:
            yield url
    finally:
        core.close()


@pytest.mark.slow
@pytest.mark.timeout(FUZZ_TIMEOUT_S)
@pytest.mark.parametrize("path", ["/api/v1/evaluate", "/api/v1/nli", "/api/v1/verify"])
def test_fuzz_the_guarded_api_with_its_token(guarded_api_url: str, path: str) -> None:
    """The schema behind the token, fuzzed with the token: the same answers as without one."""
    auth = {"Authorization": "bearer s3cret"}
    schema = httpx.get(f"{guarded_api_url}/openapi.json", headers=auth).json()
    operation = schemathesis.openapi.from_dict(schema)[path]["POST"]

    @given(case=operation.as_strategy())
    @settings(
        max_examples=SCHEMA_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate(base_url=guarded_api_url, headers=auth)

    check()


NASTY_BODIES = st.one_of(
    st.binary(max_size=300),
    st.sampled_from(
        [
            b"[" * 100_000,
            b'{"event_id": ' + b"9" * 5000 + b"}",
            b'{"event_id": 1e999}',
            b"\xef\xbb\xbf{}",
            b'{"event_id": "\\ud800", "claims": [], "interaction": {}}',
            b"null",
            b'"' + b"\\" * 1000 + b'"',
        ]
    ),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=12), children, max_size=4)
        ),
        max_leaves=12,
    ).map(lambda value: json.dumps(value).encode()),
)


@pytest.mark.slow
@pytest.mark.timeout(FUZZ_TIMEOUT_S)
@given(
    path=st.sampled_from(["/api/v1/evaluate", "/api/v1/nli", "/api/v1/verify"]),
    body=NASTY_BODIES,
    content_type=st.sampled_from(
        [None, "application/json", "application/json; charset=latin-1", "text/plain", "x/y+json"]
    ),
)
@settings(deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_fuzz_raw_bodies_get_a_documented_4xx_never_a_5xx(
    api_url: str, path: str, body: bytes, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    response = httpx.post(f"{api_url}{path}", content=body, headers=headers, timeout=30)
    assert response.status_code in (200, 400, 413, 415, 422), response.text
    if response.status_code != 200:
        assert response.json()["detail"]
