"""Issue 22, item 4: ``aclarai status`` (and ``--json``) tells whether aclarai is alive and what
it does, ``status --wait-idle`` tells a script when the grades are current, and the watchdog
pings stop when a worker hangs. Real daemons (``aclarai watch`` subprocesses), real SQLite, a
real datagram socket standing in for systemd's, real HTTP model endpoints."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from watchdog.observers.api import EventEmitter

from aclarai.daemon.cli import EX_NOT_GRADED
from aclarai.daemon.loop.liveness import (
    STAMP_MIN_S,
    Liveness,
    Progress,
    WatchdogLimits,
    describe_activity,
    why_stuck,
)
from aclarai.daemon.loop.systemd import Notifier
from aclarai.daemon.reports.status import (
    JSON_KEYS,
    STALE_HEARTBEAT_S,
    Status,
    format_status,
)
from aclarai.daemon.vault.control import new_heartbeat, read_heartbeat
from aclarai.daemon.vault.queue import Dirty, DurableQueue
from aclarai.parsers import parse_note
from tests.helpers.cli import QUIET_S, DaemonProcess, daemon_env, run_cli_process, wait_until
from tests.helpers.scripted_llm import Recorded, Reply, ScriptedLLMServer, scripted_llm_server
from tests.helpers.scripted_vault import NOTES, llm_env, responder
from tests.helpers.vault import note_text, start_watcher

StartDaemon = Callable[..., DaemonProcess]
MakeVault = Callable[..., Path]

ALICE = "alice: The deploy to staging failed twice on Tuesday."
ERIN = "erin: The database migration took 40 minutes on Friday."

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "vault": (str,),
    "state_dir": (str,),
    "running": (bool,),
    "pid": (int, type(None)),
    "role": (str, type(None)),
    "activity": (str, type(None)),
    "graded": (bool,),
    "queue_depth": (int,),
    "oldest_ungraded_note": (str, type(None)),
    "oldest_ungraded_at": (str, type(None)),
    "oldest_ungraded_age_s": (float, type(None)),
    "last_look_at": (str, type(None)),
    "last_look_age_s": (float, type(None)),
    "heartbeat_at": (str, type(None)),
    "heartbeat_age_s": (float, type(None)),
    "last_activity": (str, type(None)),
    "record_current": (bool,),
    "last_error": (str, type(None)),
    "last_error_at": (str, type(None)),
    "paused": (bool,),
    "dead_letters": (int,),
    "model_down_since": (str, type(None)),
    "last_resync": (str, type(None)),
    "counts": (dict, type(None)),
    "settling": (int,),
    "unmarked_paragraphs": (int,),
    "unmarked_notes": (int,),
    "verify": (list, type(None)),
    "workers": (dict, type(None)),
}


def status_json(vault: Path, env: Mapping[str, str]) -> dict[str, object]:
    done = run_cli_process("status", str(vault), "--json", env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert isinstance(data, dict)
    return data


def status_text(vault: Path, env: Mapping[str, str]) -> dict[str, str]:
    done = run_cli_process("status", str(vault), env=env)
    assert done.returncode == 0, done.stderr
    return {line[:12].strip(): line[13:] for line in done.stdout.splitlines() if line[:1] != " "}


def scores(path: Path) -> dict[str, dict[str, float]]:
    return {b.id: dict(b.scores) for b in parse_note(path.read_text(encoding="utf-8")).blocks}


def append_block(path: Path, block_id: str, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"{text}\n<!-- aclarai:id={block_id} ver=1 -->\n")


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with scripted_llm_server() as server:
        yield server


def slow_model(server: ScriptedLLMServer, delay_s: float) -> None:
    """Every model reply comes after ``delay_s``: grading lasts long enough to be seen."""
    answer = responder()

    def respond(request: Recorded) -> Reply:
        return dataclasses.replace(answer(request), delay_s=delay_s)

    server.responder = respond


def daemon_llm_env(tmp_path: Path, server: ScriptedLLMServer, **more: str) -> dict[str, str]:
    env = {k: v for k, v in llm_env(tmp_path, server).items() if k != "XDG_CONFIG_HOME"}
    return {**env, **more}


def test_status_json_has_every_documented_key_with_its_type(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    vault = make_vault({"a.md": note_text([("blk-j1", ALICE)])})
    daemon = start_daemon(vault)
    done = run_cli_process(
        "status", str(vault), "--wait-idle", "--timeout", "30", "--json", env=daemon_env()
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == set(JSON_KEYS) == set(JSON_TYPES)
    for key, kinds in JSON_TYPES.items():
        assert isinstance(data[key], kinds), f"{key}: {data[key]!r}"
    assert data["running"] is True and data["pid"] == daemon.proc.pid and data["role"] == "daemon"
    assert data["activity"] == "idle" and data["graded"] is True
    assert data["record_current"] is True
    assert data["queue_depth"] == 0 and data["oldest_ungraded_note"] is None
    assert isinstance(data["last_look_age_s"], float) and data["last_look_age_s"] < 60
    assert data["last_error"] is None
    assert isinstance(data["counts"], dict) and data["counts"]["blocks"] == 1


@pytest.mark.slow
def test_status_while_grading_after_it_and_after_kill_9(
    tmp_path: Path, llm_server: ScriptedLLMServer, make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    slow_model(llm_server, 3.0)
    vault = make_vault(NOTES)
    env = daemon_env(**daemon_llm_env(tmp_path, llm_server))
    daemon = start_daemon(vault, wait=False, **daemon_llm_env(tmp_path, llm_server))
    wait_until(lambda: llm_server.chat_requests, timeout_s=60)

    grading = wait_until_status(vault, env, lambda d: str(d["activity"]).startswith("grading"))
    assert grading["running"] is True and grading["graded"] is False
    assert grading["queue_depth"] >= 1 and grading["oldest_ungraded_note"] in NOTES
    text = status_text(vault, env)
    assert text["activity"].startswith("grading ")
    assert text["ungraded"].startswith("oldest change ")

    done = run_cli_process(
        "status", str(vault), "--wait-idle", "--timeout", "120", env=env, timeout_s=150
    )
    assert done.returncode == 0, done.stderr
    after = status_json(vault, env)
    assert after["activity"] == "idle" and after["graded"] is True and after["queue_depth"] == 0
    assert status_text(vault, env)["ungraded"] == "none: every change seen is graded"

    slow_model(llm_server, 60.0)
    note = vault / "bridge.md"
    note.write_text(note.read_text().replace("1998", "1999"))
    wait_until_status(vault, env, lambda d: str(d["activity"]).startswith("grading"))
    done = run_cli_process("status", str(vault), "--wait-idle", "--timeout", "1", env=env)
    assert done.returncode == EX_NOT_GRADED
    assert f"waiting for pid {daemon.proc.pid}: grading 1 note;" in done.stderr, "never silent"
    daemon.kill()

    dead = status_json(vault, env)
    assert dead["running"] is False and dead["pid"] is None and dead["activity"] is None
    assert dead["record_current"] is False
    assert str(dead["last_activity"]).startswith("grading"), "what it did when last seen"
    assert dead["graded"] is False and dead["oldest_ungraded_note"] == "bridge.md"
    text = status_text(vault, env)
    assert text["daemon"] == "not running"
    assert text["heartbeat"].endswith(f"stale: pid {daemon.proc.pid} is gone")
    assert text["activity"].startswith("none: no aclarai daemon or resync runs (last seen grading")


def wait_until_status(
    vault: Path, env: Mapping[str, str], check: Callable[[dict[str, object]], bool]
) -> dict[str, object]:
    seen: list[dict[str, object]] = []

    def ok() -> bool:
        seen.append(status_json(vault, env))
        return check(seen[-1])

    wait_until(ok, timeout_s=60, interval_s=0.2)
    return seen[-1]


def test_wait_idle_returns_once_an_edit_is_graded(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    vault = make_vault({"a.md": note_text([("blk-w1", ALICE)])})
    start_daemon(vault)
    note = vault / "a.md"
    append_block(note, "blk-w2", ERIN)
    done = run_cli_process("status", str(vault), "--wait-idle", "--timeout", "60", env=daemon_env())
    assert done.returncode == 0, done.stderr
    assert set(scores(note)["blk-w2"]) == {
        "entailed_score",
        "coverage_score",
        "decontextualization_score",
    }


@pytest.mark.slow
def test_paused_status_and_a_wait_that_times_out_with_its_own_exit_code(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    vault = make_vault({"a.md": note_text([("blk-q1", ALICE)])})
    daemon = start_daemon(vault)
    assert run_cli_process("pause", str(vault), env=daemon_env()).returncode == 0
    daemon.wait_for_log("paused: no evaluation")
    append_block(vault / "a.md", "blk-q2", ERIN)
    daemon.wait_for_log("a.md changed", timeout_s=QUIET_S + 10)

    wait_until_status(vault, daemon_env(), lambda d: d["activity"] == "paused")
    assert status_text(vault, daemon_env())["activity"] == "paused"
    started = time.monotonic()
    done = run_cli_process(
        "status", str(vault), "--wait-idle", "--timeout", "1.5", env=daemon_env()
    )
    assert done.returncode == EX_NOT_GRADED == 124
    assert time.monotonic() - started >= 1.5
    assert "the daemon is paused: 1 block(s) wait to be graded" in done.stderr

    assert daemon.stop() == 0
    done = run_cli_process(
        "status", str(vault), "--wait-idle", "--timeout", "0.5", env=daemon_env()
    )
    assert done.returncode == EX_NOT_GRADED
    assert "no aclarai daemon or resync runs" in done.stderr, "never a silent wait"
    assert "not running" in done.stdout


def test_wait_idle_with_no_daemon_and_nothing_queued_returns_at_once(
    make_vault: MakeVault,
) -> None:
    vault = make_vault({"a.md": note_text([("blk-r1", ALICE)])})
    assert run_cli_process("resync", str(vault), env=daemon_env()).returncode == 0
    done = run_cli_process(
        "status", str(vault), "--wait-idle", "--timeout", "0", "--json", env=daemon_env()
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["graded"] is True and data["running"] is False
    assert data["last_activity"] == "stopped" and data["last_look_at"] is not None


class TricklingEndpoint:
    """A model endpoint that answers every POST with headers, then one byte at a time for
    ever: each read comes within the client's timeout, so only a watchdog sees the call hang."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._stop = threading.Event()
        self.posts = 0
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                head += chunk
            if not head.startswith(b"POST"):
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            self.posts += 1
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000000\r\n\r\n"
            )
            while not self._stop.wait(0.2):
                try:
                    conn.sendall(b" ")
                except OSError:
                    return

    def close(self) -> None:
        self._stop.set()
        self._sock.close()


@pytest.mark.slow
def test_a_hung_model_call_stops_the_watchdog_pings(
    tmp_path: Path,
    make_vault: MakeVault,
    start_daemon: StartDaemon,
    notify_socket: tuple[str, list[str]],
) -> None:
    path, received = notify_socket
    endpoint = TricklingEndpoint()
    try:
        vault = make_vault({"a.md": note_text([("blk-h1", ALICE)])})
        env = {
            "ACLARAI_MODEL__BACKEND": "llm",
            "ACLARAI_MODEL__LLM__API_BASE": endpoint.base_url,
            "ACLARAI_MODEL__LLM__API_KEY_ENV": "ACLARAI_TEST_KEY",
            "ACLARAI_TEST_KEY": "k",
            "ACLARAI_MODEL__LLM__TIMEOUT_S": "1",
        }
        daemon = start_daemon(vault, wait=False, NOTIFY_SOCKET=path, WATCHDOG_USEC="1000000", **env)
        wait_until(lambda: endpoint.posts, timeout_s=60)
        hung_at = time.monotonic()
        wait_until(lambda: any(m.startswith("STATUS=stuck:") for m in received), timeout_s=10)
        stuck_after = time.monotonic() - hung_at
        pings_before = received.count("WATCHDOG=1")
        time.sleep(2.0)  # twice the watchdog interval

        assert pings_before >= 1, "the daemon pinged while the call was young"
        assert received.count("WATCHDOG=1") == pings_before, "no ping once the call is stuck"
        # A call may run three of its 1 s timeouts; the pings stop soon after.
        assert stuck_after < 3.0 + 2.0
        daemon.wait_for_log("a model call has run")
        record = status_json(vault, daemon_env(**env))
        assert str(record["last_error"]).startswith("a model call has run")
        assert daemon.stop(signal.SIGTERM) == 0
    finally:
        endpoint.close()


def test_why_stuck_names_the_part_that_does_not_move() -> None:
    limits = WatchdogLimits(stall_s=10.0, call_s=3.0)
    idle, busy = Progress(), Progress()
    busy.begin(2)
    later = busy.beat_at + 11.0

    def stuck(**kw: object) -> str | None:
        args: dict[str, object] = {
            "consumer_alive": True,
            "observing": True,
            "grading": idle,
            "longest_call_s": 0.0,
            "limits": limits,
            "now": later,
        }
        args.update(kw)
        return why_stuck(**args)  # type: ignore[arg-type]

    assert stuck() is None, "an idle consumer is never stuck, however long it waits"
    assert stuck(consumer_alive=False) == "the consumer thread has died"
    assert stuck(observing=False) == "the vault watcher has stopped"
    assert stuck(longest_call_s=2.9) is None
    assert stuck(longest_call_s=4.0) == "a model call has run 4 s, past 3 s"
    assert stuck(grading=busy) == "grading has made no progress for 11 s"
    assert stuck(grading=busy, longest_call_s=2.0) is None, "a young call is progress enough"
    assert stuck(grading=busy, now=busy.beat_at + 9.0) is None


def test_describe_activity_in_the_words_status_shows() -> None:
    grading = Progress()
    assert describe_activity(paused=False, model_down=False, grading=grading, syncing=False) == (
        "idle"
    )
    assert describe_activity(paused=False, model_down=False, grading=grading, syncing=True) == (
        "syncing"
    )
    grading.begin(1)
    assert describe_activity(paused=False, model_down=False, grading=grading, syncing=True) == (
        "grading 1 note"
    )
    grading.begin(3)
    assert describe_activity(paused=False, model_down=False, grading=grading, syncing=False) == (
        "grading 3 notes"
    )
    assert describe_activity(paused=False, model_down=True, grading=grading, syncing=False) == (
        "waiting for the model"
    )
    assert describe_activity(paused=True, model_down=True, grading=grading, syncing=True) == (
        "paused"
    )


def test_the_watchdog_gives_a_call_what_the_client_gives_it_now(tmp_path: Path) -> None:
    """A client that learned its server writes slowly lets a call run longer; the watchdog
    follows, so a slow call is not taken for a stuck daemon."""
    queue = DurableQueue(tmp_path / "queue.sqlite")
    call_timeout = [40.0]
    try:
        liveness = Liveness(
            queue,
            Notifier(None, None),
            started_at=time.time(),
            longest_call=lambda: 100.0,
            call_timeout=lambda: call_timeout[0],
        )
        alive = {"observing": True, "consumer_alive": True}
        liveness.tick(paused=False, model_down=False, syncing=False, **alive)
        assert liveness.grading.last_error is None, "100 s of a 40 s call's three timeouts"
        call_timeout[0] = 30.0
        liveness.tick(paused=False, model_down=False, syncing=False, **alive)
        assert liveness.grading.last_error is not None
        assert liveness.grading.last_error[0] == "a model call has run 100 s, past 90 s"
    finally:
        queue.close()


def test_a_burst_of_activity_changes_costs_few_writes(tmp_path: Path) -> None:
    queue = DurableQueue(tmp_path / "queue.sqlite")
    try:
        liveness = Liveness(queue, Notifier(None, None), started_at=time.time())
        stamps = 0
        started = time.monotonic()
        for n in range(300):
            liveness.grading.begin(n + 1)
            stamps += liveness.tick(
                paused=False, model_down=False, syncing=False, observing=True, consumer_alive=True
            )
        elapsed = time.monotonic() - started
        assert stamps <= 1 + int(elapsed / STAMP_MIN_S)
        liveness.grading.end()
        time.sleep(STAMP_MIN_S)
        liveness.error("a.md: could not read")
        assert liveness.tick(
            paused=False, model_down=False, syncing=False, observing=True, consumer_alive=True
        ), "a change of activity is stamped once the throttle allows"
        beat = read_heartbeat(queue)
        assert beat is not None and beat.activity == "idle" and beat.writer_alive()
        assert beat.last_error == "a.md: could not read"
        queue.enqueue([Dirty("blk-1", "a.md", "h")])
        assert queue.oldest_waiting() is not None and queue.oldest_waiting()[0] == "a.md"
    finally:
        queue.close()


def test_a_new_error_alone_is_stamped_once_the_throttle_allows(tmp_path: Path) -> None:
    queue = DurableQueue(tmp_path / "queue.sqlite")
    tick = functools.partial(
        Liveness.tick, paused=False, model_down=False, syncing=False, observing=True,
        consumer_alive=True,
    )  # fmt: skip
    try:
        liveness = Liveness(queue, Notifier(None, None), started_at=time.time())
        assert tick(liveness), "the first tick stamps"
        time.sleep(STAMP_MIN_S)
        assert not tick(liveness), "nothing new: no write before the interval"
        liveness.error("a model call has run 4 s, past 3 s")
        assert tick(liveness), "the same state and activity, but a new error"
        beat = read_heartbeat(queue)
        assert beat is not None and beat.last_error == "a model call has run 4 s, past 3 s"
    finally:
        queue.close()


def test_the_docs_list_every_json_key_and_the_wait_exit_code() -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "daemon.md").read_text(encoding="utf-8")
    section = page.split("## Is it current?", 1)[1].split("\n## ", 1)[0]
    assert sorted(set(re.findall(r"`([a-z_]+)`", section)) & set(JSON_KEYS)) == sorted(JSON_KEYS)
    assert f"exits {EX_NOT_GRADED}" in section


def test_the_watcher_reports_notes_settling_and_an_observer_that_died(tmp_path: Path) -> None:
    watcher = start_watcher(tmp_path, polling=False)
    try:
        root = watcher.vault.root
        (root / "a.md").write_text("a")
        wait_until(lambda: watcher.next_changes(0.05).settling == 1, timeout_s=5)
        assert watcher.next_changes(0.0).observing
        mine = [
            t
            for t in threading.enumerate()
            if isinstance(t, EventEmitter) and t.watch.path == str(root)
        ]
        assert mine, "the observer's emitter thread watches the vault"
        for emitter in mine:
            emitter.stop()
            emitter.join(timeout=5)
        assert not watcher.next_changes(0.0).observing
    finally:
        watcher.stop()


@pytest.mark.parametrize(("role", "hung"), [("daemon", True), ("resync", False)])
def test_only_a_daemon_silent_past_the_limit_may_be_hung(
    tmp_path: Path, role: str, hung: bool
) -> None:
    beat = new_heartbeat("running", time.time() - 3600, role=role)
    beat = dataclasses.replace(beat, at=beat.at - STALE_HEARTBEAT_S - 5)
    status = Status(
        tmp_path,
        tmp_path,
        True,
        f"{os.getpid()} {role}",
        0,
        [],
        None,
        False,
        None,
        None,
        heartbeat=beat,
        holder_pid=os.getpid(),
    )

    assert status.record_current
    assert ("may be hung" in format_status(status)) is hung
