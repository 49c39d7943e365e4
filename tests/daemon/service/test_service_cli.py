"""``aclarai serve`` and ``aclarai consume`` as a user runs them: real processes, real ports."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import redis

from tests.fixtures.processes import free_port
from tests.fixtures.redis_server import RedisServer
from tests.helpers.service import evaluate_payload


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "ACLARAI_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        **extra,
    }


def test_serve_answers_and_exits_0_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "aclarai.daemon.cli", "serve", "--port", str(port)],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert health.json()["status"] == "ok"
        answer = httpx.post(
            f"http://127.0.0.1:{port}/api/v1/evaluate",
            json=evaluate_payload(
                "evt-cli",
                answer="ok",
                query="What exactly failed in the "
                "deploy to staging on Tuesday and who rolled it back?",
            ),
            timeout=30,
        )
        body = answer.json()
        assert body["id"] == "evt-cli" and body["verdict"] == "fail"
        assert {s["name"] for s in body["stages"]} == {
            "length-checker",
            "overlap-checker",
            "format-checker",
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=15)
    assert code == 0


def test_consume_burst_processes_the_stream(tmp_path: Path, redis_server: RedisServer) -> None:
    tag = str(time.monotonic_ns())
    env = _env(
        tmp_path,
        ACLARAI_EVAL_STREAM__REDIS_URL=redis_server.url,
        ACLARAI_EVAL_STREAM__STREAM=f"cli-events-{tag}",
        ACLARAI_EVAL_STREAM__GROUP=f"cli-group-{tag}",
        ACLARAI_EVAL_STREAM__RESULTS_STREAM=f"cli-results-{tag}",
        ACLARAI_EVAL_STREAM__DEAD_LETTER_STREAM=f"cli-dead-{tag}",
    )
    r = redis.Redis.from_url(redis_server.url)
    r.xadd(f"cli-events-{tag}", {"payload": json.dumps(evaluate_payload("evt-1"))})
    r.xadd(f"cli-events-{tag}", {"payload": "{broken"})
    out = subprocess.run(
        [sys.executable, "-m", "aclarai.daemon.cli", "consume", "--burst", "--name", "cli"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    results = r.xrange(f"cli-results-{tag}")
    assert len(results) == 1
    assert (
        b"evt-1" in results[0][1][b"event_id"]
        or b"evt-1"
        in json.dumps({k.decode(): v.decode() for k, v in results[0][1].items()}).encode()
    )
    assert len(r.xrange(f"cli-dead-{tag}")) == 1
    assert r.xpending(f"cli-events-{tag}", f"cli-group-{tag}")["pending"] == 0
    r.close()


def _serve(tmp_path: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "aclarai.daemon.cli", "serve", *args],
        env=_env(tmp_path, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_health(proc: subprocess.Popen[str], port: int) -> httpx.Response:
    deadline = time.monotonic() + 60
    while True:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=1)
        except httpx.TransportError:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.2)


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=15)
    return stderr


def test_serve_beyond_loopback_without_a_token_refuses_to_start(tmp_path: Path) -> None:
    proc = _serve(tmp_path, "--host", "0.0.0.0", "--port", str(free_port()))
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert stderr.count("\n") == 1
    assert "refusing to serve on 0.0.0.0 without a token" in stderr
    assert "--insecure-no-token" in stderr


def test_serve_beyond_loopback_with_insecure_no_token_starts_and_says_so(tmp_path: Path) -> None:
    port = free_port()
    proc = _serve(tmp_path, "--host", "0.0.0.0", "--port", str(port), "--insecure-no-token")
    try:
        assert _wait_for_health(proc, port).status_code == 200
    finally:
        stderr = _stop(proc)
    assert proc.returncode == 0
    assert "serving on 0.0.0.0 without a token" in stderr


def test_serve_on_loopback_without_a_token_logs_one_notice(tmp_path: Path) -> None:
    port = free_port()
    proc = _serve(tmp_path, "--port", str(port))
    try:
        assert _wait_for_health(proc, port).status_code == 200
    finally:
        stderr = _stop(proc)
    assert sum("no token" in line for line in stderr.splitlines()) == 1


def test_serve_beyond_loopback_with_a_token_guards_the_schema(tmp_path: Path) -> None:
    port = free_port()
    proc = _serve(
        tmp_path,
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
        ACLARAI_SERVICE__TOKEN_ENV="SVC_TOKEN",
        SVC_TOKEN="s3cret",
    )
    try:
        _wait_for_health(proc, port)
        base = f"http://127.0.0.1:{port}"
        without = httpx.get(f"{base}/openapi.json", timeout=5)
        lower = httpx.get(f"{base}/docs", headers={"Authorization": "bearer s3cret"}, timeout=5)
    finally:
        stderr = _stop(proc)
    assert without.status_code == 401
    assert lower.status_code == 200
    assert "no token" not in stderr
