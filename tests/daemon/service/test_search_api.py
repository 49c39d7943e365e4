"""``GET /api/v1/search`` and ``POST /api/v1/check`` against a real uvicorn server on a loopback
port, over a resynced copy of sample_vault/, with the offline backend."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclarai.daemon.config import Config
from aclarai.daemon.search.session import VaultSearch
from aclarai.daemon.service.api import NO_VAULT, create_app
from aclarai.daemon.service.check import MAX_TEXT_CHARS
from aclarai.daemon.service.core import build_service_core
from aclarai.parsers import SCORE_NAMES
from tests.fixtures.processes import free_port
from tests.helpers.cli import CLI_ARGV, run_cli
from tests.helpers.service import make_config, running_app

ROOT = Path(__file__).resolve().parents[3]
BACKUP_NOTE = "conversations/2024-06-18 Nightly backup window.md"
BACKUP_QUERY = "nightly backup of the orders database"
ABSENT_QUESTION = "What is the boiling point of mercury at sea level?"
ABSENT_ANSWER = "Mercury boils at 356.7 degrees Celsius at sea level."
LINK = re.compile(r"^\[\[(?P<note>[^\]#|]+)#\^(?P<block>blk-[0-9a-f]+)\]\]$")
FTS_SYNTAX = ['"', '"backup', "backup*", "*", "NEAR(backup window)", "AND OR NOT", "(", ")", ":"]
FTS_SYNTAX += ["^", "backup:window", "^backup", 'backup AND (window OR "orders', "NEAR(", "-", "'"]


@dataclass(frozen=True)
class Graded:
    vault: Path
    env: dict[str, str]
    """The whole environment the CLI ran with: its state and config under the test's folder."""
    config: Config
    claims: list[dict[str, Any]]
    """``aclarai claims VAULT --json --below 1.01``: every graded claim."""


def cli_env(base: Path) -> dict[str, str]:
    """An environment of its own (the module's fixtures outlive a test's isolation)."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(base / "home"),
        "ACLARAI_STATE_DIR": str(base / "state"),
        "XDG_CONFIG_HOME": str(base / "xdg-config"),
        "XDG_CACHE_HOME": str(base / "xdg-cache"),
        "XDG_STATE_HOME": str(base / "xdg-state"),
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    """A resynced copy of the sample vault and the config whose state it used."""
    base = tmp_path_factory.mktemp("search-api")
    vault = base / "vault"
    shutil.copytree(ROOT / "sample_vault", vault)
    env = cli_env(base)
    done = run_cli("resync", str(vault), env=env)
    assert done.returncode == 0, done.stderr
    listed = run_cli("claims", str(vault), "--json", "--below", "1.01", env=env)
    assert listed.returncode == 0, listed.stderr
    claims = [json.loads(line) for line in listed.stdout.splitlines()]
    return Graded(vault, env, make_config(base), claims)


@pytest.fixture(scope="module")
def api_url(graded: Graded) -> Iterator[str]:
    """The offline service over the graded vault, as ``aclarai serve --vault`` builds it."""
    core = build_service_core(graded.config)
    vault = VaultSearch(graded.config, graded.vault)
    try:
        with running_app(create_app(graded.config, core, vault)) as url:
            yield url
    finally:
        vault.close()
        core.close()


@pytest.fixture
def api(api_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api_url, timeout=60) as client:
        yield client


def search(api: httpx.Client, **params: Any) -> dict[str, Any]:
    response = api.get("/api/v1/search", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def cli_search(graded: Graded, query: str, *flags: str) -> list[dict[str, Any]]:
    done = run_cli("search", str(graded.vault), query, "--json", *flags, env=graded.env)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


# Search -----------------------------------------------------------------------------------------


def test_search_puts_the_note_first_with_its_link_and_grades(
    api: httpx.Client, graded: Graded
) -> None:
    body = search(api, q=BACKUP_QUERY)
    assert body["note"] == "" and body["unembedded"] == 0
    assert body["blocks"] >= len({(c["file"], c["block_id"]) for c in graded.claims})
    first = body["hits"][0]
    assert first["file"] == BACKUP_NOTE
    link = LINK.match(first["link"])
    assert link is not None, first["link"]
    assert link["note"] + ".md" == BACKUP_NOTE and link["block"] == first["block_id"]
    assert "backup of the orders database" in first["text"]
    [listed] = [
        c
        for c in graded.claims
        if (c["file"], c["block_id"], c["claim"])
        == (BACKUP_NOTE, first["block_id"], first["claim"])
    ]
    assert first["quality"] == pytest.approx(listed["quality"])
    for name in SCORE_NAMES:
        assert first[name] == pytest.approx(listed[name])


def test_search_answers_as_the_command_does(api: httpx.Client, graded: Graded) -> None:
    for query, params, flags in [
        (BACKUP_QUERY, {}, ()),
        ("alert did not fire", {"limit": 3}, ("--limit", "3")),
        ("backup", {"min_quality": 0.75, "in": "conversations"}, ("--min-quality", "0.75")),
    ]:
        served = search(api, q=query, **params)["hits"]
        assert served, query
        if "in" in params:
            flags = (*flags, "--in", params["in"])
        assert served == cli_search(graded, query, *flags)


def test_min_quality_drops_the_weaker_claims(api: httpx.Client) -> None:
    every = search(api, q="backup retention job duration", limit=20)["hits"]
    qualities = sorted({h["quality"] for h in every if h["quality"] is not None})
    assert len(qualities) >= 3
    cut = qualities[len(qualities) // 2]
    kept = search(api, q="backup retention job duration", limit=20, min_quality=cut)["hits"]
    assert kept
    for hit in kept:
        assert hit["quality"] >= cut
        assert all(c["quality"] is not None and c["quality"] >= cut for c in hit["claims"])
    weaker = {h["link"] for h in every if h["quality"] is not None and h["quality"] < cut}
    assert weaker and not weaker & {h["link"] for h in kept}


def test_in_and_limit_narrow_the_hits(api: httpx.Client) -> None:
    folder = search(api, q="backup database", **{"in": "meetings"})["hits"]
    assert folder and all(h["file"].startswith("meetings/") for h in folder)
    note = search(api, q="backup", **{"in": BACKUP_NOTE})["hits"]
    assert note and {h["file"] for h in note} == {BACKUP_NOTE}
    assert len(search(api, q="backup", limit=1)["hits"]) == 1


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"q": ""}, "q: String should have at least 1 character"),
        ({"q": "  \t "}, "q: must not be blank"),
        ({}, "q: Field required"),
        ({"q": "backup", "limit": 0}, "limit: Input should be greater than or equal to 1"),
        ({"q": "backup", "limit": 101}, "limit: Input should be less than or equal to 100"),
        ({"q": "backup", "limit": "ten"}, "limit: Input should be a valid integer"),
        ({"q": "backup", "min_quality": "high"}, "min_quality: Input should be a valid number"),
        ({"q": "backup", "min_quality": 1.5}, "min_quality: Input should be less than or equal"),
        ({"q": "backup", "min_quality": "nan"}, "min_quality:"),
        ({"q": "backup", "include_null": "perhaps"}, "include_null: Input should be a valid"),
    ],
)
def test_bad_search_input_is_a_422_of_one_line(
    api: httpx.Client, params: dict[str, Any], named: str
) -> None:
    response = api.get("/api/v1/search", params=params)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert named in detail and "\n" not in detail


@pytest.mark.parametrize("query", FTS_SYNTAX)
def test_query_syntax_characters_are_words_not_syntax(api: httpx.Client, query: str) -> None:
    body = search(api, q=query)
    assert isinstance(body["hits"], list) and body["blocks"] > 0
    if "backup" in query:
        assert body["hits"][0]["file"] == BACKUP_NOTE


def test_a_100_kb_query_is_read_as_its_start(api_url: str) -> None:
    # httpx refuses a URL this long: the request goes out as a plain HTTP/1.1 client sends it.
    query = (BACKUP_QUERY + " ") * 2800
    assert len(query) > 100_000
    host, _, port = urllib.parse.urlsplit(api_url).netloc.partition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        connection.request("GET", "/api/v1/search?" + urllib.parse.urlencode({"q": query}))
        response = connection.getresponse()
        status, body = response.status, json.loads(response.read())
    finally:
        connection.close()
    assert status == 200
    assert body["hits"][0]["file"] == BACKUP_NOTE


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(query=st.text(max_size=300), limit=st.one_of(st.none(), st.integers(-5, 120)))
def test_any_query_gets_a_result_or_a_422(api_url: str, query: str, limit: int | None) -> None:
    params: dict[str, Any] = {"q": query} if limit is None else {"q": query, "limit": limit}
    response = httpx.get(f"{api_url}/api/v1/search", params=params, timeout=60)
    blank = not query.strip()
    out_of_range = limit is not None and not 1 <= limit <= 100
    assert response.status_code == (422 if blank or out_of_range else 200), response.text
    if response.status_code == 200:
        assert len(response.json()["hits"]) <= (limit or 10)


# Check ------------------------------------------------------------------------------------------


def test_an_answer_in_the_notes_passes_citing_its_block(api: httpx.Client) -> None:
    [hit] = search(api, q="how long did the backup take on Monday and Tuesday", limit=1)["hits"]
    assert hit["file"] == BACKUP_NOTE and hit["claim"]
    response = api.post(
        "/api/v1/check",
        json={
            "question": "How long did the nightly backup take on Monday?",
            "answer": hit["claim"],
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["verdict"] in {"pass", "review"}
    assert 0.0 <= body["confidence"] <= 1.0
    assert hit["link"] in [c["link"] for c in body["citations"]]
    assert [s["name"] for s in body["stages"]][:3] == [
        "length-checker",
        "overlap-checker",
        "format-checker",
    ]


def test_an_answer_the_notes_say_nothing_about_has_no_evidence(api: httpx.Client) -> None:
    response = api.post(
        "/api/v1/check", json={"question": ABSENT_QUESTION, "answer": ABSENT_ANSWER}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["verdict"] == "no_evidence"
    assert body["confidence"] is None and body["citations"] == [] and body["stages"] == []


@pytest.mark.parametrize(
    ("payload", "named"),
    [
        ({"question": "", "answer": "It runs at 03:30 UTC."}, "question: String should have"),
        ({"question": "When?", "answer": " \n "}, "answer: must not be blank"),
        ({"question": "When does the backup run?"}, "answer: Field required"),
        ({"question": 3, "answer": "At 03:30."}, "question: Input should be a valid string"),
        (
            {"question": "When?", "answer": "x" * (MAX_TEXT_CHARS + 1)},
            f"answer: String should have at most {MAX_TEXT_CHARS} characters",
        ),
    ],
)
def test_bad_check_input_is_a_422_naming_the_field(
    api: httpx.Client, payload: dict[str, Any], named: str
) -> None:
    response = api.post("/api/v1/check", json=payload)
    assert response.status_code == 422, response.text
    assert named in response.json()["detail"]


# Without a vault, with a token, from the command line ------------------------------------------


def test_without_a_vault_both_routes_answer_409(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    core = build_service_core(config)
    try:
        with running_app(create_app(config, core)) as url, httpx.Client(base_url=url) as client:
            searched = client.get("/api/v1/search", params={"q": "backup"})
            checked = client.post("/api/v1/check", json={"question": "Q?", "answer": "A."})
            schema = client.get("/openapi.json").json()
    finally:
        core.close()
    for response in (searched, checked):
        assert response.status_code == 409
        assert response.json() == {"detail": NO_VAULT}
    assert "--vault" in NO_VAULT and "vault.path" in NO_VAULT
    assert "409" in schema["paths"]["/api/v1/search"]["get"]["responses"]
    assert "409" in schema["paths"]["/api/v1/check"]["post"]["responses"]


def test_the_token_guards_search_and_check(graded: Graded, tmp_path: Path) -> None:
    config = make_config(tmp_path, {"service.token_env": "SVC_TOKEN"}, env={"SVC_TOKEN": "s3cret"})
    # The guarded service reads the graded vault's state.
    config = config.with_overrides({"state.dir": graded.config.state.dir})
    core = build_service_core(config)
    vault = VaultSearch(config, graded.vault)
    auth = {"Authorization": "Bearer s3cret"}
    check = {"question": ABSENT_QUESTION, "answer": ABSENT_ANSWER}
    try:
        with (
            running_app(create_app(config, core, vault)) as url,
            httpx.Client(base_url=url, timeout=60) as client,
        ):
            without = client.get("/api/v1/search", params={"q": "backup"})
            check_without = client.post("/api/v1/check", json=check)
            with_token = client.get("/api/v1/search", params={"q": "backup"}, headers=auth)
            check_with = client.post("/api/v1/check", json=check, headers=auth)
    finally:
        vault.close()
        core.close()
    assert without.status_code == check_without.status_code == 401
    assert with_token.status_code == 200
    assert with_token.json()["hits"][0]["file"] == BACKUP_NOTE
    assert check_with.json()["verdict"] == "no_evidence"


def test_serve_with_vault_searches_it_until_sigterm(graded: Graded) -> None:
    port = free_port()
    process = subprocess.Popen(
        [*CLI_ARGV, "serve", "--vault", str(graded.vault), "--port", str(port)],
        env=graded.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                searched = httpx.get(
                    f"http://127.0.0.1:{port}/api/v1/search", params={"q": BACKUP_QUERY}, timeout=30
                )
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline
                time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert searched.status_code == 200
    assert searched.json()["hits"][0]["file"] == BACKUP_NOTE
    assert process.returncode == 0, stderr


def test_serve_refuses_a_vault_never_synced(tmp_path: Path) -> None:
    never = tmp_path / "never-synced"
    never.mkdir()
    done = run_cli(
        "serve", "--vault", str(never), "--port", str(free_port()), env=cli_env(tmp_path)
    )
    assert done.returncode == 1
    assert "run `aclarai resync` first" in done.stderr


# Fuzz -------------------------------------------------------------------------------------------

VAULT_ROUTES = [
    (method, path, mode)
    for method, path in (("GET", "/api/v1/search"), ("POST", "/api/v1/check"))
    for mode in schemathesis.GenerationMode
]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize(("method", "path", "mode"), VAULT_ROUTES)
def test_fuzz_the_vault_routes_against_their_schema(
    api_url: str, method: str, path: str, mode: schemathesis.GenerationMode
) -> None:
    """Schema-valid and schema-violating input: never a 5xx, every answer as documented."""
    operation = schemathesis.openapi.from_url(f"{api_url}/openapi.json")[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    def check(case: schemathesis.Case) -> None:
        case.call_and_validate()

    check()
