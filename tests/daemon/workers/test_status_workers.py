"""``aclarai status`` with grading workers (``grading_workers.redis_url``): the workers seen, the
backlog, the results waiting and the dead letters, read from a real redis-server; real CLI processes
publish the jobs and grade them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import pytest
import redis

from aclarai.daemon.workers.roster import Heartbeat, beat, workers_seen
from tests.fixtures.processes import dies_with_us, free_port, terminate
from tests.fixtures.redis_server import RedisServer
from tests.helpers.cli import run_cli_process, wait_until
from tests.helpers.vault import note_text

MakeVault = Callable[..., Path]
WAIT_S = 60.0
NOTES = {
    "a.md": note_text(
        [
            ("blk-w1", "alice: The deploy to staging failed twice on Tuesday."),
            ("blk-w2", "bob: The rollback took twelve minutes."),
        ]
    ),
    "b.md": note_text([("blk-w3", "erin: The database migration took 40 minutes on Friday.")]),
}


def spawn(*args: str, env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "aclarai.daemon.cli", *args],
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=dies_with_us(),
        )


def status_json(vault: Path, env: Mapping[str, str]) -> dict[str, Any]:
    done = run_cli_process("status", str(vault), "--json", env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert isinstance(data, dict)
    return data


def status_text(vault: Path, env: Mapping[str, str]) -> list[str]:
    done = run_cli_process("status", str(vault), env=env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout.splitlines()


@pytest.fixture
def prefix() -> str:
    """Every test its own keys on the shared server."""
    return f"test-status-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def r(redis_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_server.url)
    yield client
    client.close()


pytestmark = pytest.mark.vault(base=None, files=NOTES)


def base_env(tmp_path: Path, name: str, **config: str) -> dict[str, str]:
    """The environment of one process: its own state folder, and ``grading_workers.*`` settings."""
    env = {**os.environ, "ACLARAI_STATE_DIR": str(tmp_path / name), "PYTHONUNBUFFERED": "1"}
    env.update({f"ACLARAI_GRADING_WORKERS__{key.upper()}": value for key, value in config.items()})
    return env


def only_key(client: redis.Redis, pattern: str) -> str:
    keys = [key.decode() for key in cast(list[bytes], client.keys(pattern))]
    assert len(keys) == 1, keys
    return keys[0]


def publish_and_stop(vault: Path, env: Mapping[str, str], log: Path) -> None:
    """``resync --redis`` with no worker: it publishes its jobs, says it waits, and is stopped."""
    resync = spawn("resync", str(vault), env=env, log=log)
    try:
        wait_until(lambda: "waiting for grading workers" in log.read_text(), timeout_s=WAIT_S)
    finally:
        resync.send_signal(signal.SIGTERM)
        resync.wait(timeout=WAIT_S)


def test_without_redis_url_status_has_no_workers_part_and_never_imports_redis(
    tmp_path: Path, vault: Path
) -> None:
    env = base_env(tmp_path, "state")
    assert run_cli_process("resync", str(vault), env=env).returncode == 0
    script = (
        "import contextlib, io, json, sys\n"
        "from aclarai.daemon.cli import main\n"
        "text, raw = io.StringIO(), io.StringIO()\n"
        "with contextlib.redirect_stdout(text):\n"
        f"    assert main(['status', {str(vault)!r}]) == 0\n"
        "with contextlib.redirect_stdout(raw):\n"
        f"    assert main(['status', {str(vault)!r}, '--json']) == 0\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'redis')\n"
        "print(json.dumps({'text': text.getvalue(), 'json': json.loads(raw.getvalue()),\n"
        "                  'redis': loaded}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=WAIT_S
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["redis"] == []
    assert seen["json"]["workers"] is None
    assert seen["json"]["counts"]["blocks"] == 3, "the status was read in full"
    labels = [line[:12].strip() for line in seen["text"].splitlines()]
    assert "blocks" in labels
    assert not {"workers", "backlog", "results", "dead jobs"} & set(labels)


def test_status_lists_the_workers_the_backlog_and_the_results_waiting(
    tmp_path: Path, vault: Path, redis_server: RedisServer, r: redis.Redis, prefix: str
) -> None:
    settings = {"redis_url": redis_server.url, "prefix": prefix, "heartbeat_s": "0.5"}
    env = base_env(tmp_path, "state", **settings)
    publish_and_stop(vault, env, tmp_path / "resync.log")

    stream = only_key(r, f"{prefix}:work:*")
    published = r.xlen(stream)
    assert published > 0
    before = status_json(vault, env)["workers"]
    assert before["error"] is None and before["work_stream"] == stream
    assert before["backlog"] == published == len(r.keys(f"{prefix}:job:*"))
    assert before["results_waiting"] == 0 and before["dead_letters"] == 0
    assert before["seen"] == []

    w1 = run_cli_process(
        "worker", "--name", "w1", "--burst", env=base_env(tmp_path, "w1", **settings)
    )
    assert w1.returncode == 0, w1.stderr
    w2 = spawn(
        "worker", "--name", "w2", env=base_env(tmp_path, "w2", **settings), log=tmp_path / "w2"
    )
    try:
        wait_until(
            lambda: any(w.name == "w2" and w.live for w in workers_seen(r, prefix)),
            timeout_s=WAIT_S,
        )
        old = time.time() - 3600
        gone = Heartbeat(
            name="w3",
            host="far-host",
            pid=4242,
            grader="offline",
            stream=stream,
            started_at=old,
            beat_at=old,
            beat_every_s=0.5,
            done=7,
            failures=2,
            dead_letters=1,
        )
        beat(r, prefix, gone)
        data = status_json(vault, env)["workers"]
        lines = status_text(vault, env)
    finally:
        terminate(w2, WAIT_S)

    results = only_key(r, f"{prefix}:results:*")
    assert data["backlog"] == 0
    assert data["results_waiting"] == published == r.xlen(results), "graded, not yet applied"
    seen = {w["name"]: w for w in data["seen"]}
    assert set(seen) == {"w1", "w2", "w3"}
    here = socket.gethostname()
    assert (seen["w1"]["host"], seen["w1"]["done"], seen["w1"]["failures"]) == (here, published, 0)
    assert (seen["w1"]["state"], seen["w1"]["live"]) == ("stopped", False)
    assert (seen["w2"]["host"], seen["w2"]["done"], seen["w2"]["live"]) == (here, 0, True)
    assert (seen["w3"]["host"], seen["w3"]["done"], seen["w3"]["failures"]) == ("far-host", 7, 2)
    assert seen["w3"]["state"] == "working" and seen["w3"]["live"] is False
    assert seen["w3"]["heartbeat_age_s"] >= 3600

    assert f"workers      1 live, 2 gone, at {redis_server.url}" in lines
    assert f"backlog      0 job(s) not graded yet in {stream}" in lines
    assert f"results      {published} not yet acknowledged by this vault" in lines
    assert f"dead jobs    0 in {prefix}:dead" in lines
    listed = {line.split()[0]: line for line in lines if line.startswith("  w")}
    assert listed["w1"].startswith(f"  w1 on {here}: gone, stopped, heartbeat ")
    assert f"done {published}, failures 0, dead letters 0" in listed["w1"]
    assert listed["w2"].startswith(f"  w2 on {here}: live, working, heartbeat ")
    assert listed["w3"].startswith("  w3 on far-host: gone, working, heartbeat 1 h ago")
    assert "done 7, failures 2, dead letters 1" in listed["w3"]


def test_redis_down_is_one_line_and_the_exit_status_is_unchanged(
    tmp_path: Path, vault: Path
) -> None:
    env = base_env(tmp_path, "state", redis_url=f"redis://127.0.0.1:{free_port()}/0")
    done = run_cli_process("status", str(vault), env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    said = [line for line in done.stdout.splitlines() if "Redis" in line]
    assert len(said) == 1 and said[0].startswith("workers      unavailable: cannot reach Redis")
    assert not [line for line in done.stdout.splitlines() if line.startswith("backlog")]
    workers = status_json(vault, env)["workers"]
    assert "cannot reach Redis" in workers["error"]
    assert (workers["backlog"], workers["results_waiting"], workers["seen"]) == (None, None, [])
