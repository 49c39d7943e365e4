"""The model endpoint goes away mid-run and comes back: the daemon's consumer backs off, says so
once each way, shows it in ``aclarai status``, loses nothing and writes nothing meanwhile."""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from aclarai.daemon.config import ProcessingSettings, load_config
from aclarai.daemon.factory import build_agents, build_queue, build_store, build_vault
from aclarai.daemon.loop.consumer import DirtyBlockConsumer
from aclarai.daemon.reports.status import collect_status, format_status
from aclarai.daemon.vault.control import MODEL_DOWN_META
from aclarai.daemon.vault.notesync import NoteSync
from tests.helpers.cli import DaemonProcess, wait_until
from tests.helpers.scripted_llm import ScriptedLLMServer, scripted_llm_server, slow
from tests.helpers.scripted_vault import NOTES, llm_env, note_scores, responder


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with scripted_llm_server() as server:
        yield server


def test_an_outage_mid_run_is_logged_once_backs_off_and_resumes(
    tmp_path: Path,
    llm_server: ScriptedLLMServer,
    make_vault: Callable[[Mapping[str, str]], Path],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The model's grade alone: a 5 reads 1.0 whatever the offline scorer says of the edited text.
    env = {**llm_env(tmp_path, llm_server), "ACLARAI_MODEL__LLM__LEXICAL_SHARE": "0"}
    config = load_config(env=env)
    vault = make_vault(NOTES)
    state = config.state_dir_for(vault)
    store, queue = build_store(config, state), build_queue(config, state)
    agents = build_agents(config, state, store)
    notes = NoteSync(build_vault(config, vault), store, queue)
    consumer = DirtyBlockConsumer(
        notes,
        queue,
        agents.extractor,
        agents.evaluator,
        ProcessingSettings(concurrent_notes=1),
    )
    try:
        llm_server.responder = responder()
        notes.sync_vault()
        consumer.drain()
        assert note_scores(vault)["blk-a1"]["entailed_score"] == 1.0

        llm_server.go_down()
        note = vault / "bridge.md"
        note.write_text(note.read_text().replace("1998", "1999"))
        before = note.read_bytes()
        notes.sync_vault()
        caplog.clear()
        delays = []
        with caplog.at_level(logging.INFO, logger="aclarai"):
            for _ in range(3):
                queue.make_due()
                assert consumer.drain().model_outages == 1
                delays.append(queue.next_due_in_s())
            status = collect_status(config, vault)
            written_while_down = note.read_bytes() != before
            down_warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]

            llm_server.come_back()
            queue.make_due()
            consumer.drain()
        back = [r for r in caplog.records if r.levelno >= logging.WARNING][len(down_warnings) :]

        assert [d is not None for d in delays] == [True] * 3
        assert delays[0] < delays[1] < delays[2], f"the retry delay doubles: {delays}"
        assert not written_while_down, "nothing written while the model is away"
        assert [r.getMessage() for r in down_warnings] == [down_warnings[0].getMessage()], (
            "one line when it goes away"
        )
        assert "unreachable" in down_warnings[0].getMessage()
        assert status.model_down_since is not None
        assert "model        unreachable since" in format_status(status)
        assert len(back) == 1 and "is back" in back[0].getMessage()
        assert queue.get_meta(MODEL_DOWN_META) is None
        assert queue.depth() == 0
        assert "1999" in note.read_text() and note_scores(vault)["blk-a1"]["entailed_score"] == 1.0
    finally:
        agents.close()
        store.close()
        queue.close()


def test_sigterm_during_a_slow_model_call_stops_within_ten_seconds(
    tmp_path: Path,
    llm_server: ScriptedLLMServer,
    make_vault: Callable[[Mapping[str, str]], Path],
    start_daemon: Callable[..., DaemonProcess],
) -> None:
    llm_server.responder = lambda _request: slow(40.0, '{"claims": []}')
    vault = make_vault(NOTES)
    env = {k: v for k, v in llm_env(tmp_path, llm_server).items() if k != "XDG_CONFIG_HOME"}
    daemon = start_daemon(vault, wait=False, **env)
    wait_until(lambda: llm_server.chat_requests, timeout_s=60)

    started = time.monotonic()
    rc = daemon.stop(signal.SIGTERM, timeout_s=15)

    assert rc == 0
    # Without the cancel the stop waits for the shutdown deadline (9 s) and exits forced.
    assert time.monotonic() - started < 5, "the call is abandoned, not waited for"
    config = load_config(env=llm_env(tmp_path, llm_server))
    queue = build_queue(config, config.state_dir_for(vault))
    try:
        assert queue.depth() == sum(text.count("aclarai:id=") for text in NOTES.values())
    finally:
        queue.close()
