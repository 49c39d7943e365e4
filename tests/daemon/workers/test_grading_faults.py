"""Grading over Redis survives its faults: a worker or the daemon killed with SIGKILL, Redis
restarted from its append-only file, the network between a worker and Redis cut.

Every test runs real ``aclarai`` processes against a real redis-server and the scripted
OpenAI-compatible server, then holds the vault to what a local resync (no Redis) of a copy of the
same notes writes, byte for byte but for the dashboard's time stamp: each block graded once, its
``ver`` raised once, nothing left queued, no job dead-lettered.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from aclarai.daemon.workers import backlog
from aclarai.daemon.workers.roster import WORKERS_GROUP
from aclarai.daemon.workers.wire import decode_job
from aclarai.parsers import parse_note
from tests.fixtures.redis_server import RedisServer
from tests.fixtures.tcp_proxy import tcp_proxy
from tests.helpers.cli import wait_until
from tests.helpers.grading import (
    Worker,
    dead_letters,
    read_stream,
    resync,
    run_with_config,
    start_aclarai,
    start_worker,
    stop,
    streams,
    unique_prefix,
    write_config,
)
from tests.helpers.scripted_llm import Recorded, Reply, ScriptedLLMServer, scripted_llm_server
from tests.helpers.scripted_vault import CLAIMS, KEY_ENV, NOTES, responder
from tests.helpers.vault import dashboard_times, vault_snapshot

pytestmark = pytest.mark.slow

WAIT_S = 60.0
"""Generous: subprocesses start slowly on a loaded two-core machine."""
MODEL_DELAY_S = 0.5
"""How long each scripted model call takes: long enough to catch a worker inside one."""
OUTAGE_S = 2.0
"""How long Redis, or the link to it, stays away: the fault itself, not a wait for a condition."""
SINGLE_RUN_JOBS = len(CLAIMS) + sum(1 for claims in CLAIMS.values() if claims)
"""The jobs (and model calls) one uninterrupted resync of NOTES needs: one extraction per block,
one scoring per block that has claims."""
LLM_ENV = {KEY_ENV: "scripted-key"}
OUTAGE_LINE = "Redis unavailable"
RECOVERY_LINE = "reachable again"


def delayed(respond: Callable[[Recorded], Reply]) -> Callable[[Recorded], Reply]:
    return lambda request: dataclasses.replace(respond(request), delay_s=MODEL_DELAY_S)


@dataclasses.dataclass
class Faults:
    """One test's setup: its folder, its key prefix, the model server, a client on Redis."""

    root: Path
    url: str
    prefix: str
    client: redis.Redis
    llm: ScriptedLLMServer

    def config(self, **workers: Any) -> Path:
        """LLM grading on the scripted server, this test's prefix, short waits."""
        settings = {
            "model": {
                "backend": "llm",
                "llm": {"api_base": self.llm.base_url, "api_key_env": KEY_ENV, "max_attempts": 2},
            },
            "eval": {"processes": 1},
            "grading_workers": {
                "prefix": self.prefix,
                "block_s": 0.2,
                "heartbeat_s": 0.5,
                **workers,
            },
        }
        return write_config(self.root / "config.yaml", settings)

    def vault(self, name: str) -> Path:
        target = self.root / name
        for rel, content in NOTES.items():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_text(content, encoding="utf-8")
        return target

    def state(self, name: str) -> Path:
        return self.root / f"{name}-state"

    def local_resync(self, config: Path) -> Path:
        """The reference: a local resync of the notes, with the model answering at once."""
        local = self.vault("local")
        self.llm.responder = responder()
        resync(local, config=config, state_dir=self.state("local"), env=LLM_ENV)
        return local

    def worker(self, name: str, config: Path, url: str | None = None) -> Worker:
        return start_worker(
            name,
            redis_url=url or self.url,
            config=config,
            root=self.root,
            args=["--jobs", "1"],
            env=LLM_ENV,
        )

    def start_resync(self, vault: Path, config: Path, log: Path) -> subprocess.Popen[bytes]:
        return start_aclarai(
            *("resync", str(vault), "--redis", self.url),
            config=config,
            state_dir=self.state(vault.name),
            log=log,
            env=LLM_ENV,
        )

    def work_stream(self) -> str:
        wait_until(lambda: streams(self.client, self.prefix, "work"), timeout_s=WAIT_S)
        [stream] = streams(self.client, self.prefix, "work")
        return stream

    def results_stream(self) -> str:
        wait_until(lambda: streams(self.client, self.prefix, "results"), timeout_s=WAIT_S)
        [stream] = streams(self.client, self.prefix, "results")
        return stream

    def pending_on(self, stream: str, worker: str) -> int:
        try:
            summary = self.client.xpending(stream, WORKERS_GROUP)
        except redis.ResponseError:
            return 0  # no worker made the group yet
        by_name = {c["name"]: int(c["pending"]) for c in summary["consumers"]}
        return by_name.get(worker.encode(), 0)

    def assert_like_local(self, local: Path, remote: Path, config: Path) -> None:
        """Same bytes as the local resync, every block's ``ver`` raised once, nothing left."""
        for vault in (remote, local):
            masked = len(dashboard_times(vault))
            assert masked == 1 + len(NOTES), "the mask must hide the stamp and one time a note"
        assert vault_snapshot(remote) == vault_snapshot(local)
        for rel, original in NOTES.items():
            before = {b.id: b.version for b in parse_note(original).blocks}
            after = {b.id: b.version for b in parse_note((remote / rel).read_text()).blocks}
            raised = {block: ver + (1 if CLAIMS[block] else 0) for block, ver in before.items()}
            assert after == raised, rel
        done = run_with_config(
            "status", str(remote), "--json", config=config, state_dir=self.state(remote.name)
        )
        assert done.returncode == 0, done.stdout + done.stderr
        status = json.loads(done.stdout)
        assert (status["queue_depth"], status["graded"]) == (0, True)
        assert backlog(self.client, self.work_stream()) == 0
        assert dead_letters(self.client, self.prefix) == []


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with scripted_llm_server() as server:
        yield server


@pytest.fixture
def faults(
    tmp_path: Path, redis_server: RedisServer, llm_server: ScriptedLLMServer
) -> Iterator[Faults]:
    client = redis.Redis.from_url(redis_server.url)
    yield Faults(tmp_path, redis_server.url, unique_prefix(), client, llm_server)
    client.close()


@pytest.fixture
def aof_faults(
    tmp_path: Path, llm_server: ScriptedLLMServer
) -> Iterator[tuple[Faults, RedisServer]]:
    """Like ``faults``, on a redis-server of the test's own that it may kill and start again."""
    directory = tmp_path / "redis"
    directory.mkdir()
    server = RedisServer(directory, append_only=True)
    server.start()
    client = redis.Redis.from_url(server.url)
    try:
        yield Faults(tmp_path, server.url, unique_prefix(), client, llm_server), server
    finally:
        client.close()
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


def finished(process: subprocess.Popen[bytes], log: Path) -> tuple[int, str]:
    """Wait for a resync started in the background: its exit status and its log."""
    try:
        code = process.wait(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        stop(process)
        raise AssertionError(f"resync did not finish:\n{log.read_text()}") from None
    return code, log.read_text(encoding="utf-8", errors="replace")


def test_a_worker_killed_inside_a_model_call_has_its_jobs_taken_over(faults: Faults) -> None:
    config = faults.config(reclaim_after_s=1)
    local = faults.local_resync(config)
    remote = faults.vault("remote")
    faults.llm.responder = delayed(responder())
    first = faults.worker("w1", config)
    log = faults.root / "resync.log"
    process = faults.start_resync(remote, config, log)
    second: Worker | None = None
    try:
        stream = faults.work_stream()
        wait_until(
            lambda: faults.pending_on(stream, "w1") and faults.llm.in_flight, timeout_s=WAIT_S
        )
        first.process.kill()  # an out-of-memory kill, in the middle of the model call
        first.process.wait()
        assert faults.pending_on(stream, "w1") == 1
        second = faults.worker("w2", config)
        code, text = finished(process, log)
    finally:
        stop(process)
        stop(first.process)
        if second is not None:
            stop(second.process)
    assert code == 0, text
    assert second is not None
    assert "took over 1 job(s)" in second.output()
    faults.assert_like_local(local, remote, config)
    assert_each_job_published_once(faults)


def test_results_waiting_for_a_killed_daemon_are_applied_by_the_next_run(
    faults: Faults,
) -> None:
    config = faults.config()
    local = faults.local_resync(config)
    calls_before = len(faults.llm.chat_requests)
    remote = faults.vault("remote")
    log = faults.root / "resync-killed.log"
    process = faults.start_resync(remote, config, log)
    try:
        # No worker yet: the jobs wait in the stream, and the daemon for their results.
        stream = faults.work_stream()
        wait_until(lambda: backlog(faults.client, stream) >= 1, timeout_s=WAIT_S)
    finally:
        process.kill()
        process.wait()
    published = faults.client.xlen(stream)
    worker = faults.worker("w1", config)
    try:
        results = faults.results_stream()
        wait_until(
            lambda: (
                backlog(faults.client, stream) == 0 and faults.client.xlen(results) == published
            ),
            timeout_s=WAIT_S,
        )
        resync(
            remote, config=config, state_dir=faults.state("remote"), redis_url=faults.url,
            env=LLM_ENV,
        )  # fmt: skip
    finally:
        stop(worker.process)
    faults.assert_like_local(local, remote, config)
    assert len(faults.llm.chat_requests) - calls_before == SINGLE_RUN_JOBS
    assert_each_job_published_once(faults)


def assert_each_job_published_once(faults: Faults) -> None:
    """The work stream holds the jobs of one uninterrupted run, none twice: no work was done
    again, even by a second resync after a killed one or an outage."""
    found = read_stream(faults.client, faults.work_stream())
    keys = [decode_job(fields[b"payload"]).key for _, fields in found]
    assert len(keys) == len(set(keys)) == SINGLE_RUN_JOBS, keys


def assert_one_outage(worker: Worker) -> None:
    """The worker told of the outage once when it began and once when it ended."""
    text = worker.output()
    assert (text.count(OUTAGE_LINE), text.count(RECOVERY_LINE)) == (1, 1), text


def test_redis_restarted_from_its_append_only_file_mid_run(
    aof_faults: tuple[Faults, RedisServer],
) -> None:
    faults, server = aof_faults
    config = faults.config()
    local = faults.local_resync(config)
    remote = faults.vault("remote")
    calls_before = len(faults.llm.chat_requests)
    faults.llm.responder = delayed(responder())
    worker = faults.worker("w1", config)
    log = faults.root / "resync.log"
    process = faults.start_resync(remote, config, log)
    try:
        wait_until(lambda: len(faults.llm.chat_requests) - calls_before >= 2, timeout_s=WAIT_S)
        stream = faults.work_stream()
        published = faults.client.xlen(stream)
        server.kill()
        time.sleep(OUTAGE_S)
        server.start()
        assert faults.client.xlen(stream) >= published, "the append-only file lost jobs"
        code, _ = finished(process, log)
        rerun = code != 0
        if rerun:
            # The resync meets the outage while it waits for results and stops there, exit
            # status non-zero, its notes still queued ("run `aclarai resync` again"), as when
            # its model is away: run it again once, as its user would.
            resync(
                remote, config=config, state_dir=faults.state("remote"), redis_url=faults.url,
                env=LLM_ENV,
            )  # fmt: skip
    finally:
        stop(process)
        stop(worker.process)
    assert_one_outage(worker)
    faults.assert_like_local(local, remote, config)
    assert_each_job_published_once(faults)


def test_a_network_cut_between_a_worker_and_redis_heals(
    faults: Faults, redis_server: RedisServer
) -> None:
    config = faults.config()
    local = faults.local_resync(config)
    remote = faults.vault("remote")
    calls_before = len(faults.llm.chat_requests)
    faults.llm.responder = delayed(responder())
    with tcp_proxy(redis_server.port) as proxy:
        worker = faults.worker("w1", config, url=proxy.url)
        log = faults.root / "resync.log"
        process = faults.start_resync(remote, config, log)
        try:
            wait_until(lambda: len(faults.llm.chat_requests) - calls_before >= 2, timeout_s=WAIT_S)
            proxy.cut(OUTAGE_S)
            code, text = finished(process, log)
        finally:
            stop(process)
            stop(worker.process)
    assert proxy.cuts >= 1, "the cut closed no connection"
    assert code == 0, text
    assert_one_outage(worker)
    faults.assert_like_local(local, remote, config)
    assert_each_job_published_once(faults)
