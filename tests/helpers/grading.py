"""Helpers for the tests of grading workers over Redis: ``aclarai worker`` and ``aclarai resync``
subprocesses, vault comparison, and the streams as a test reads them.

Every process gets its own state folder (``ACLARAI_STATE_DIR``), as separate machines would, and
every test its own key prefix, so tests share one redis-server without seeing each other.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import redis
import yaml

from aclarai.daemon.workers.wire import dead_letter_stream, roster_key
from tests.fixtures.processes import dies_with_us, terminate
from tests.helpers.cli import CLI_ARGV, run_cli_process
from tests.helpers.vault import vault_snapshot

STOP_TIMEOUT_S = 20.0

Fields = dict[bytes, bytes]


def unique_prefix() -> str:
    """A ``grading_workers.prefix`` no other test uses."""
    return f"test-grading-{uuid.uuid4().hex[:12]}"


def write_config(path: Path, settings: Mapping[str, Any]) -> Path:
    """Write ``settings`` (nested sections, as in ``config.yaml``) to the YAML file ``path``."""
    path.write_text(yaml.safe_dump(dict(settings), sort_keys=True), encoding="utf-8")
    return path


def process_env(state_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test's environment with this process's own state folder."""
    env = dict(os.environ)
    env.update({"ACLARAI_STATE_DIR": str(state_dir), "PYTHONUNBUFFERED": "1"})
    env.update(extra or {})
    return env


def run_with_config(
    *args: str,
    config: Path,
    state_dir: Path,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 60.0,
) -> subprocess.CompletedProcess[str]:
    """Run ``aclarai --config CONFIG ARGS`` with its own state folder to its end; the caller
    checks its exit status."""
    return run_cli_process(
        "--config", str(config), *args, env=process_env(state_dir, env), timeout_s=timeout_s
    )


def start_aclarai(
    *args: str,
    config: Path,
    state_dir: Path,
    log: Path,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``aclarai --config CONFIG ARGS`` in the background, stdout and stderr to ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [*CLI_ARGV, "--config", str(config), *args],
            env=process_env(state_dir, env),
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=dies_with_us(),
        )


def stop(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM (what a service manager sends) and wait; SIGKILL if it lingers."""
    terminate(process, STOP_TIMEOUT_S)
    return process.returncode


def resync(
    vault: Path,
    *,
    config: Path,
    state_dir: Path,
    redis_url: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 60.0,
) -> subprocess.CompletedProcess[str]:
    """``aclarai resync VAULT`` (through workers with ``redis_url``); it must exit 0."""
    where = ("--redis", redis_url) if redis_url else ()
    done = run_with_config(
        "resync",
        str(vault),
        *where,
        config=config,
        state_dir=state_dir,
        env=env,
        timeout_s=timeout_s,
    )
    assert done.returncode == 0, f"resync exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


@dataclass
class Worker:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def start_worker(
    name: str,
    *,
    redis_url: str,
    config: Path,
    root: Path,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Worker:
    """``aclarai worker --redis URL --name NAME ARGS``, its state and log under ``root``."""
    log = root / f"{name}.log"
    state_dir = root / f"{name}-state"
    command = ("worker", "--redis", redis_url, "--name", name, *args)
    process = start_aclarai(*command, config=config, state_dir=state_dir, log=log, env=env)
    return Worker(name, process, log)


@contextmanager
def running_workers(
    count: int,
    *,
    redis_url: str,
    config: Path,
    root: Path,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    first: int = 1,
) -> Iterator[list[Worker]]:
    """``count`` workers named ``w<first>``, ``w<first+1>``…, stopped with SIGTERM at the end."""
    workers = [
        start_worker(f"w{n}", redis_url=redis_url, config=config, root=root, args=args, env=env)
        for n in range(first, first + count)
    ]
    try:
        yield workers
    finally:
        for worker in workers:
            stop(worker.process)


def vault_differences(a: Path, b: Path) -> list[str]:
    """The relative paths whose bytes differ between two vaults (or that only one holds),
    ignoring the dashboard's times (see :func:`vault_snapshot`)."""
    left, right = vault_snapshot(a), vault_snapshot(b)
    return sorted(p for p in left.keys() | right.keys() if left.get(p) != right.get(p))


def read_stream(client: redis.Redis, stream: str) -> list[tuple[bytes, Fields]]:
    """Every entry of ``stream``, oldest first, as (id, fields)."""
    return cast(list[tuple[bytes, Fields]], client.xrange(stream))


def streams(client: redis.Redis, prefix: str, kind: str) -> list[str]:
    """The streams named ``<prefix>:<kind>:*`` (``work`` or ``results``), sorted."""
    found = client.scan_iter(match=f"{prefix}:{kind}:*", _type="stream")
    return sorted(k.decode() if isinstance(k, bytes) else str(k) for k in found)


def stream_entries(client: redis.Redis, prefix: str, kind: str) -> list[tuple[bytes, Fields]]:
    """The entries of every ``<prefix>:<kind>:*`` stream, stream after stream."""
    return [
        entry for stream in streams(client, prefix, kind) for entry in read_stream(client, stream)
    ]


def dead_letters(client: redis.Redis, prefix: str) -> list[Fields]:
    return [fields for _, fields in read_stream(client, dead_letter_stream(prefix))]


def heartbeat_streams(client: redis.Redis, prefix: str) -> dict[str, str]:
    """Each worker's work stream, by worker name, from the heartbeats it wrote."""
    beats = cast(dict[bytes, bytes], client.hgetall(roster_key(prefix)))
    return {name.decode(): str(json.loads(raw)["stream"]) for name, raw in beats.items()}
