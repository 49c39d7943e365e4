"""The crash matrix (issue #22): ``kill -9`` of a command's main process, then the same command.

For each long-running command that writes the vault (``resync``, ``watch``, ``import``,
``adopt``) an uninterrupted run is timed once; then runs are killed at fractions of that time
(two in ``make test``, twelve seeded random ones under ``ACLARAI_TEST_FUZZ``), each followed at
once by the same command run to its end. After each kill: no process of the command's session
(its evaluation workers included) is alive 2 s later, and ``status`` reports no daemon. After
the rerun: no temp file and no lock is left, and the vault is byte-identical to the
uninterrupted run's. ``serve``, ``consume`` and ``mcp`` are killed once they serve: nothing of
them survives, and the next start serves at once.

Every command runs as the user runs it (``python -m aclarai.daemon.cli``, in a session of its
own so that its children can be found by their process group), on the same vault path each
time (``adopt`` derives ids from the note's path).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx
import pytest
import redis

from aclarai.daemon.config import load_config
from aclarai.daemon.reports.status import collect_status
from aclarai.daemon.vault.lock import (
    LOCK_NAME,
    VAULT_DIR,
    VAULT_LOCK_NAME,
    VaultLock,
    live_holder,
)
from aclarai.daemon.vault.notes import Vault
from aclarai.daemon.vault.processes import current, is_alive
from aclarai.daemon.vault.writer import TEMP_PREFIX
from aclarai.graph.sqlite import SqliteStore
from tests.fixtures.processes import free_port
from tests.fixtures.redis_server import RedisServer
from tests.helpers.cli import daemon_env, wait_until
from tests.helpers.import_samples import chatgpt_conversation, chatgpt_export
from tests.helpers.service import evaluate_payload
from tests.helpers.vault import SENTENCES, generated_vault, note_text, user_files

FUZZ = bool(os.environ.get("ACLARAI_TEST_FUZZ"))
SEED = 22
FRACTIONS = (
    tuple(sorted(random.Random(SEED).uniform(0.05, 1.0) for _ in range(12)))
    if FUZZ
    else (0.35, 0.75)
)
"""Instants of the kills, as fractions of an uninterrupted run."""
WORKERS_UP = -1.0
"""An instant of its own for the commands that grade: once the evaluation workers run (there
are none on one core)."""
GRADING_INSTANTS = ((WORKERS_UP,) if (os.cpu_count() or 1) > 1 else ()) + FRACTIONS
CHILDREN_GONE_S = 2.0
RUN_TIMEOUT_S = 120.0

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600 if FUZZ else 240)]


def session_pids(sid: int) -> list[int]:
    """The live (not zombie) processes of session ``sid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        if fields[0] not in ("Z", "X") and int(fields[3]) == sid:
            found.append(int(entry.name))
    return found


def start(
    args: list[str],
    env: Mapping[str, str],
    *,
    stdin: int | None = None,
    stdout: int | None = subprocess.DEVNULL,
    stderr: IO[bytes] | int = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """``aclarai ARGS`` in a session of its own (its id is the command's pid)."""
    return subprocess.Popen(
        [sys.executable, "-m", "aclarai.daemon.cli", *args],
        env=dict(env),
        start_new_session=True,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
    )


def kill_at(proc: subprocess.Popen[bytes], instant: float, duration_s: float) -> None:
    """``kill_9`` at ``instant`` (a fraction of ``duration_s``, or :data:`WORKERS_UP`)."""
    if instant == WORKERS_UP:
        wait_until(lambda: len(session_pids(proc.pid)) > 1, timeout_s=60, interval_s=0.01)
    else:
        time.sleep(instant * duration_s)
    kill_9(proc)


def kill_9(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the main process only (what the OOM killer does), then check that every other
    process of its session is gone within :data:`CHILDREN_GONE_S`."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + CHILDREN_GONE_S
    while session_pids(proc.pid):
        assert time.monotonic() < deadline, f"left alive: {session_pids(proc.pid)}"
        time.sleep(0.05)


def run(args: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "aclarai.daemon.cli", *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"aclarai {' '.join(args)}: {done.returncode}\n{done.stderr}"
    return done


@dataclass
class Bench:
    """One vault path, restored from ``original`` before every run, and its state dir."""

    base: Path
    original: Path

    @property
    def vault(self) -> Path:
        return self.base / "vault"

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def env(self) -> dict[str, str]:
        return daemon_env(ACLARAI_STATE_DIR=str(self.state))

    def restore(self) -> None:
        for folder in (self.vault, self.state):
            shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(self.original, self.vault)

    def assert_no_daemon_reported(self) -> None:
        status = collect_status(load_config(env=self.env), self.vault, verify=False)
        assert not status.running and status.holder == "nobody", status.holder

    def assert_nothing_left(self) -> None:
        assert not list(self.vault.rglob(f"{TEMP_PREFIX}*"))
        assert live_holder(self.state) is None
        for lock in (self.state / LOCK_NAME, self.vault / VAULT_DIR / VAULT_LOCK_NAME):
            assert not lock.exists() or lock.read_bytes() == b"", lock


def lock_names(bench: Bench, pid: int) -> bool:
    """Whether the vault's lock file still records ``pid`` (it was killed holding it)."""
    lock = bench.vault / VAULT_DIR / VAULT_LOCK_NAME
    return lock.exists() and lock.read_text().startswith(f"{pid} ")


def one_shot_matrix(bench: Bench, args: list[str], instants: tuple[float, ...]) -> None:
    """The matrix of a command that ends by itself (resync, import, adopt)."""
    bench.restore()
    started = time.monotonic()
    run(args, bench.env)
    duration = time.monotonic() - started
    reference = user_files(bench.vault)
    bench.assert_nothing_left()
    for instant in instants:
        bench.restore()
        proc = start(args, bench.env)
        kill_at(proc, instant, duration)
        held = lock_names(bench, proc.pid)
        bench.assert_no_daemon_reported()
        again = run(args, bench.env)
        # A lock left by the killed run is taken over at once, in one line.
        assert again.stderr.count("took over the lock") == (1 if held else 0), again.stderr
        bench.assert_nothing_left()
        assert user_files(bench.vault) == reference, f"killed at {instant:.2f}"


@pytest.fixture
def notes_bench(tmp_path: Path) -> Bench:
    """200 notes of 10 blocks: enough items that the evaluation workers start."""
    original = tmp_path / "original"
    generated_vault(original, random.Random(SEED), notes=200, blocks=10)
    return Bench(tmp_path, original)


def test_resync_killed_at_any_instant_then_rerun(notes_bench: Bench) -> None:
    one_shot_matrix(notes_bench, ["resync", str(notes_bench.vault)], GRADING_INSTANTS)


def test_import_killed_at_any_instant_then_rerun(tmp_path: Path) -> None:
    source = tmp_path / "conversations.json"
    rng = random.Random(SEED)
    conversations = [
        chatgpt_conversation(f"conv-{i}", f"Talk {i}", [rng.choice(SENTENCES) for _ in range(8)])
        for i in range(400)
    ]
    source.write_bytes(chatgpt_export(*conversations))
    original = tmp_path / "original"
    original.mkdir()
    bench = Bench(tmp_path, original)
    one_shot_matrix(bench, ["import", str(source), "--vault", str(bench.vault)], FRACTIONS)


def test_adopt_killed_at_any_instant_then_rerun(tmp_path: Path) -> None:
    original = tmp_path / "original"
    rng = random.Random(SEED)
    for i in range(300):
        paragraphs = [" ".join(rng.choice(SENTENCES).split(": ")[1:]) for _ in range(6)]
        path = original / "journal" / f"day {i:03}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Day {i}\n\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8")
    bench = Bench(tmp_path, original)
    one_shot_matrix(bench, ["adopt", str(bench.vault / "journal")], FRACTIONS)


def test_watch_killed_at_any_instant_then_restarted(notes_bench: Bench) -> None:
    bench = notes_bench
    bench.restore()
    run(["resync", str(bench.vault)], bench.env)
    reference = user_files(bench.vault)

    log = bench.base / "watch.log"

    def watch_to_the_end() -> float:
        with log.open("wb") as sink:
            proc = start(["watch", str(bench.vault)], bench.env, stderr=sink)
        try:
            # Up (its signal handlers in place) and done: a killed run may have left nothing to do.
            took = wait_until(
                lambda: (
                    "reconcile (start-up) done" in log.read_text()
                    and user_files(bench.vault) == reference
                ),
                timeout_s=60,
            )
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=15) == 0
        finally:
            if proc.poll() is None:
                kill_9(proc)
        return took

    bench.restore()
    duration = watch_to_the_end()
    bench.assert_nothing_left()
    for instant in GRADING_INSTANTS:
        bench.restore()
        proc = start(["watch", str(bench.vault)], bench.env, stderr=subprocess.DEVNULL)
        kill_at(proc, instant, duration)
        bench.assert_no_daemon_reported()
        watch_to_the_end()
        bench.assert_nothing_left()
        assert user_files(bench.vault) == reference, f"killed at {instant:.2f}"


def temp_name(pid: int, start: str, note: str) -> str:
    return f"{TEMP_PREFIX}{pid}-{start}-0123abcd-{note}.tmp"


def dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def test_import_removes_the_temp_file_a_killed_import_left(tmp_path: Path) -> None:
    """The issue's case: a kill -9 while ``import`` writes a large note leaves a 6 MB temp file,
    which the next ``import`` removes; one a live writer is writing stays."""
    vault = tmp_path / "vault"
    folder = vault / "conversations"
    folder.mkdir(parents=True)
    me = current()
    stale = folder / temp_name(dead_pid(), "1", "2024-06-03 Big talk.md")
    stale.write_bytes(b"alice: " + b"x" * 6_000_000 + b"\n")
    live = folder / temp_name(me.pid, me.start, "2024-06-03 Other.md")
    live.write_text("alice: still being written\n")
    source = tmp_path / "conversations.json"
    source.write_bytes(chatgpt_export(chatgpt_conversation("c1", "Talk", list(SENTENCES[:2]))))
    env = daemon_env(ACLARAI_STATE_DIR=str(tmp_path / "state"))
    run(["import", str(source), "--vault", str(vault)], env)
    assert not stale.exists() and live.exists()
    assert sorted(p.name for p in folder.glob("*.md")) == ["2024-06-03 Talk.md"]


def test_adopt_removes_the_temp_files_a_killed_adopt_left(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    journal.mkdir()
    (journal / "day.md").write_text("The deploy failed on Tuesday.\n")
    stale = journal / temp_name(dead_pid(), "1", "day.md")
    stale.write_text("The deploy")
    run(["adopt", str(journal)], daemon_env(ACLARAI_STATE_DIR=str(tmp_path / "state")))
    assert [p.name for p in journal.iterdir()] == ["day.md"]
    assert "aclarai:id=" in (journal / "day.md").read_text()


def test_a_temp_file_is_never_scanned_nor_imported_as_a_note(tmp_path: Path) -> None:
    """A live writer's temp file, holding a whole note, seen by the vault scan, the inbox and
    an import of its folder: none takes it for a note, and none removes it."""
    me = current()
    vault = tmp_path / "vault"
    text = note_text([("blk-t1", "alice: The deploy failed.")])
    for folder in ("notes", "aclarai/inbox"):
        (vault / folder).mkdir(parents=True)
        (vault / folder / temp_name(me.pid, me.start, "a.md")).write_text(text)
        (vault / folder / f"{TEMP_PREFIX}0123456789ab-b.md").write_text(text)
    (vault / "notes" / "real.md").write_text(note_text([("blk-r1", "bob: It is stable now.")]))
    temps = sorted(vault.rglob(f"{TEMP_PREFIX}*"))
    assert [n.rel for n in Vault(vault).iter_notes()] == ["notes/real.md"]
    env = daemon_env(ACLARAI_STATE_DIR=str(tmp_path / "state"))
    run(["resync", str(vault)], env)
    with SqliteStore(tmp_path / "state" / "graph.sqlite") as store:
        assert list(store.file_states()) == ["notes/real.md"]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "aclarai.daemon.cli",
            "import",
            str(vault / "notes"),
            "--vault",
            str(vault),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert not (vault / "conversations").exists() or not any((vault / "conversations").iterdir())
    assert sorted(vault.rglob(f"{TEMP_PREFIX}*")) == temps


POOL_PARENT = """
import os, sys, threading, time
from pathlib import Path
from aclarai.agents.pool import WorkerPool
from aclarai.daemon.vault.lock import VaultLock

def pids(items):
    return [os.getpid() for _ in items]

VaultLock(Path(sys.argv[1]), "resync", vault=Path(sys.argv[2])).acquire()
pool = WorkerPool({}, 2, start_after=0)
first = threading.Thread(target=pool.run, args=(pids, list(range(256)), pids))
if sys.argv[3] == "main":
    first.run()
else:
    first.start()
    first.join()
print("ready", flush=True)
time.sleep(120)
"""


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            text = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if text and int(text[text.rfind(")") + 2 :].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def open_files(pid: int) -> set[str]:
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            found.add(os.readlink(fd))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("started_from", ["main", "a thread that ends"])
def test_evaluation_workers_die_with_their_parent_and_never_hold_its_lock(
    tmp_path: Path, started_from: str
) -> None:
    """Issue #22 item 1: the workers are forked while the parent holds the vault lock."""
    state, vault = tmp_path / "state", tmp_path / "vault"
    vault.mkdir()
    parent = subprocess.Popen(
        [sys.executable, "-c", POOL_PARENT, str(state), str(vault), started_from],
        stdout=subprocess.PIPE,
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline() == b"ready\n"
        workers = children_of(parent.pid)
        assert len(workers) == 2
        # Longer than a worker's parent check: the thread that forked them ended, they live on.
        time.sleep(0.6)
        assert all(is_alive(worker, None) for worker in workers)
        locks = {str(state / LOCK_NAME), str(vault / VAULT_DIR / VAULT_LOCK_NAME)}
        for worker in workers:
            assert not open_files(worker) & locks
        assert open_files(parent.pid) & locks == locks
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        taken = VaultLock(state, "resync", vault=vault)
        taken.acquire(timeout_s=0.0)
        taken.release()
        wait_until(
            lambda: not any(is_alive(worker, None) for worker in workers),
            timeout_s=CHILDREN_GONE_S,
            interval_s=0.02,
        )
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


SERVER_OWNER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.fixtures.redis_server import start_redis_server
with start_redis_server() as server:
    print(server._process.pid, flush=True)
    time.sleep(120)
"""


def test_a_server_the_tests_start_dies_with_the_test_run() -> None:
    """Item 1 for the tests' own children: kill -9 of a test run leaves no redis-server."""
    owner = subprocess.Popen(
        [sys.executable, "-c", SERVER_OWNER, str(Path(__file__).resolve().parents[2])],
        stdout=subprocess.PIPE,
    )
    try:
        assert owner.stdout is not None
        server = int(owner.stdout.readline())
        assert is_alive(server, None)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    wait_until(lambda: not is_alive(server, None), timeout_s=CHILDREN_GONE_S, interval_s=0.02)


def serves_within(check: Callable[[], bool], proc: subprocess.Popen[bytes]) -> float:
    """Seconds until ``check()`` holds (the process must stay up meanwhile)."""
    started = time.monotonic()
    while not check():
        assert proc.poll() is None, f"exited {proc.returncode}"
        assert time.monotonic() - started < 60
        time.sleep(0.05)
    return time.monotonic() - started


def kill_and_restart(
    args: list[str], env: Mapping[str, str], ready: Callable[[int], Callable[[], bool]]
) -> None:
    """Start, wait until it serves, kill -9; the next start serves as soon as the first did.
    ``ready(n)`` is the check that start ``n`` (0, 1) serves."""
    first = start(args, env)
    try:
        cold = serves_within(ready(0), first)
        kill_9(first)
        second = start(args, env)
        try:
            # "At once": no port, lock or stale state to wait out (slack for a loaded machine).
            assert serves_within(ready(1), second) < cold + 5.0
        finally:
            kill_9(second)
    finally:
        if first.poll() is None:
            kill_9(first)


def test_serve_killed_then_the_next_start_serves_at_once(tmp_path: Path) -> None:
    port = free_port()

    def healthy() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=1).is_success
        except httpx.TransportError:
            return False

    env = daemon_env(ACLARAI_STATE_DIR=str(tmp_path / "state"))
    kill_and_restart(["serve", "--port", str(port)], env, lambda _: healthy)


def test_consume_killed_then_the_next_start_consumes_at_once(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    tag = str(time.monotonic_ns())
    stream, results = f"crash-events-{tag}", f"crash-results-{tag}"
    env = daemon_env(
        ACLARAI_STATE_DIR=str(tmp_path / "state"),
        ACLARAI_EVAL_STREAM__REDIS_URL=redis_server.url,
        ACLARAI_EVAL_STREAM__STREAM=stream,
        ACLARAI_EVAL_STREAM__GROUP=f"crash-group-{tag}",
        ACLARAI_EVAL_STREAM__RESULTS_STREAM=results,
        ACLARAI_EVAL_STREAM__DEAD_LETTER_STREAM=f"crash-dead-{tag}",
    )
    client = redis.Redis.from_url(redis_server.url)

    def one_more_consumed(n: int) -> Callable[[], bool]:
        client.xadd(stream, {"payload": json.dumps(evaluate_payload(f"evt-{n}"))})
        return lambda: bool(client.xlen(results) > n)

    try:
        kill_and_restart(["consume", "--name", "crash"], env, one_more_consumed)
    finally:
        client.close()


def test_mcp_killed_then_the_next_start_answers_at_once(tmp_path: Path) -> None:
    env = daemon_env(ACLARAI_STATE_DIR=str(tmp_path / "state"))
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "crash-matrix", "version": "1"},
        },
    }
    for _ in range(2):
        proc = start(["mcp"], env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 1 and "serverInfo" in answer["result"]
        kill_9(proc)
