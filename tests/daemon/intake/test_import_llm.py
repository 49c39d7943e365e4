"""``aclarai import`` of an unknown format: the model's turns with ``model.backend: llm``,
one error line naming the file and the formats offline."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from aclarai.daemon.cli import main
from aclarai.parsers import parse_note
from tests.helpers.scripted_llm import ScriptedLLMServer, json_reply, scripted_llm_server

KEY_ENV = "SCRIPTED_LLM_KEY"
MINUTES = """MEETING MINUTES -- infra sync
>> [alice @ 09:00] The staging cluster has 12 nodes since Monday.
>> [bob @ 09:02] Migration 0042 still times out after 300 seconds.
"""


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with scripted_llm_server() as server:
        yield server


def _llm(monkeypatch: pytest.MonkeyPatch, server: ScriptedLLMServer) -> None:
    monkeypatch.setenv("ACLARAI_MODEL__BACKEND", "llm")
    monkeypatch.setenv("ACLARAI_MODEL__LLM__API_BASE", server.base_url)
    monkeypatch.setenv("ACLARAI_MODEL__LLM__API_KEY_ENV", KEY_ENV)
    monkeypatch.setenv("ACLARAI_MODEL__LLM__MAX_ATTEMPTS", "1")
    monkeypatch.setenv(KEY_ENV, "scripted-key")


def test_unknown_format_is_converted_by_the_model(
    tmp_path: Path, llm_server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _llm(monkeypatch, llm_server)
    source = tmp_path / "minutes.log"
    source.write_text(MINUTES)
    llm_server.queue(
        json_reply(
            {
                "title": "Infra sync",
                "turns": [
                    {"speaker": "alice", "text": "The staging cluster has 12 nodes since Monday."},
                    {"speaker": "bob", "text": "Migration 0042 still times out after 300 seconds."},
                ],
            }
        )
    )
    vault = tmp_path / "vault"
    vault.mkdir()
    assert main(["import", str(source), "--vault", str(vault)]) == 0
    [note] = (vault / "conversations").iterdir()
    assert note.name == "undated Infra sync.md"
    parsed = parse_note(note.read_text())
    assert [b.text for b in parsed.blocks] == [
        "alice: The staging cluster has 12 nodes since Monday.",
        "bob: Migration 0042 still times out after 300 seconds.",
    ]
    assert parsed.metadata["source"]["format"] == "llm"  # type: ignore[index]
    [request] = llm_server.chat_requests
    assert '<untrusted kind="transcript">' in request.user_text
    assert "MEETING MINUTES" in request.user_text


def test_invented_turns_fail_the_file(
    tmp_path: Path,
    llm_server: ScriptedLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _llm(monkeypatch, llm_server)
    source = tmp_path / "minutes.log"
    source.write_text(MINUTES)
    llm_server.queue(json_reply({"turns": [{"speaker": "alice", "text": "We shipped it all."}]}))
    vault = tmp_path / "vault"
    vault.mkdir()
    assert main(["import", str(source), "--vault", str(vault)]) == 2
    assert "the model's turns are not text of the file" in capsys.readouterr().err
    assert not (vault / "conversations").exists()


def test_offline_an_unknown_format_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "minutes.log"
    source.write_text(MINUTES)
    vault = tmp_path / "vault"
    vault.mkdir()
    assert main(["import", str(source), "--vault", str(vault)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert re.fullmatch(
        rf"aclarai: {re.escape(str(source))}: not a known export format \(known: chatgpt, .*\)",
        line,
    )
