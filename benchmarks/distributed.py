"""Grading through workers over Redis Streams: one resync, 1 to 8 ``aclarai worker`` processes.

    python benchmarks/distributed.py [--workers 1,2,4,8] [--blocks 80] [--offline-blocks 2000]
                                     [--delay-ms 200] [--backend scripted,offline] [--json FILE]

For each backend and worker count, on a fresh copy of a synthetic vault (benchmarks/vaultgen:
``--blocks`` for the scripted model, sized so that one worker takes some 35 s, and
``--offline-blocks`` for the offline backend, over a hundred times faster a block), a fresh Redis
prefix and fresh state folders: N ``aclarai worker`` processes start, grade a small warm-up
vault (a worker's first job pays its imports; a worker is a long-lived process), then
``aclarai resync VAULT --redis URL`` grades every block through them. Two throughputs:

- resync: the blocks resync found dirty over the seconds of its own ``time`` row (what a user
  waits for, the CLI's start-up left out);
- grading: the same blocks over the span from the first job added to the work stream to the last
  result added to the vault's results stream (both from the stream entry ids, the Redis server's
  clock): the workers' throughput, which the target "N workers grade at least 0.8 x N x one
  worker's blocks/s" is about.

Backends:

- scripted: the scripted OpenAI-compatible server of the tests answers each call after a fixed
  delay, every call at once (latency-bound, like a GPU model server with a slot per worker): each
  worker runs ``grading_workers.jobs_per_worker: 1``. Extraction gives each block's first
  sentence as its one claim, grading gives every claim 4 of 5, so one worker spends two calls on
  a block.
- offline: the offline backend, CPU-bound, so the machine's cores bound the speed-up.

Each run's vault must end byte for byte as a local resync (no ``--redis``) of the same vault with
the same backend leaves it, the dashboard's timestamps aside. The wire cost is read back from
Redis: the size of the jobs and results in the streams, and the round trips, commands and bytes the
server counted over the resync (``CONFIG RESETSTAT`` first; the idle workers' reads and heartbeats
included). The CPU seconds of the resync, the workers (with their pool processes), the model
server (this process) and redis-server over the resync show what bounds the speed-up.

Config keys set as a user would: ``grading_workers.jobs_per_worker: 1``;
``model.llm.requests_per_minute`` raised for a local server (the default 600/min would cap the
local reference run, not the workers); ``eval.processes: 1`` for offline workers (one job at a
time uses one pool process). Linux only (CPU times from /proc).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import redis
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

from vaultgen import generate_vault  # noqa: E402

from aclarai.daemon.factory import vault_id  # noqa: E402
from aclarai.daemon.redis_link import Entry  # noqa: E402
from aclarai.daemon.workers.wire import results_stream, roster_key  # noqa: E402
from tests.fixtures.processes import dies_with_us, terminate  # noqa: E402
from tests.fixtures.redis_server import start_redis_server  # noqa: E402
from tests.helpers.scripted_llm import (  # noqa: E402
    Recorded,
    Reply,
    ScriptedLLMServer,
    claim_ids,
    grades_reply,
    json_reply,
    status,
)

BLOCKS_PER_NOTE = 10
WARM_UP_BLOCKS_PER_WORKER = 2
KEY_ENV = "BENCH_LLM_KEY"
GRADE = 4
TARGET_SHARE = 0.8
"""Grading throughput with N workers must reach this share of N times one worker's."""
READY_TIMEOUT_S = 120.0
RESYNC_TIMEOUT_S = 1800.0
STOP_TIMEOUT_S = 30.0
TICKS = os.sysconf("SC_CLK_TCK")
DASHBOARD = "aclarai/Dashboard.md"
# When it was written, and when each note was last evaluated (to the minute, non-breaking).
DASHBOARD_TIMES = re.compile(
    r"^Written by aclarai at .*$|\d{4}\u2011\d\d\u2011\d\d\u00a0\d\d:\d\d\u00a0UTC", re.MULTILINE
)
TARGET_BLOCK = re.compile(
    r'<untrusted kind="target_block"(?: n="\d+")?>\n(.*?)\n</untrusted>', re.S
)


class Model:
    """The scripted model: deterministic replies to aclarai's extraction and grading prompts,
    each after ``delay_s``; any other prompt is refused and counted."""

    def __init__(self) -> None:
        self.delay_s = 0.0
        self.unknown = 0

    def __call__(self, request: Recorded) -> Reply:
        system = request.system_text
        if "You extract the claims" in system:
            reply = json_reply({"claims": [first_sentence(request)]})
        elif "You grade claims" in system:
            reply = grades_reply(dict.fromkeys(claim_ids(request), GRADE))
        else:
            self.unknown += 1
            return status(418, message=f"a prompt this model was not taught: {system[:80]!r}")
        return replace(reply, delay_s=self.delay_s)


def first_sentence(request: Recorded) -> str:
    found = TARGET_BLOCK.search(request.user_text)
    text = (found.group(1) if found else "").split(": ", 1)[-1]
    return re.split(r"(?<=[.!?])\s+", text, maxsplit=1)[0]


@contextmanager
def model_server(model: Model) -> Iterator[ScriptedLLMServer]:
    server = ScriptedLLMServer()
    server.responder = model
    server.start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Cpu:
    """CPU seconds over one resync, by process."""

    resync: float = 0.0
    workers: float = 0.0
    model: float = 0.0
    redis: float = 0.0

    @property
    def total(self) -> float:
        return self.resync + self.workers + self.model + self.redis


@dataclass
class Run:
    backend: str
    workers: int
    blocks: int = 0
    resync_s: float = 0.0
    resync_wall_s: float = 0.0
    """The resync process from start to exit (its start-up and imports included)."""
    grading_s: float = 0.0
    identical: bool = False
    null_scores: int = 0
    job_bytes: dict[str, float] = field(default_factory=dict)
    result_bytes: float = 0.0
    commands: dict[str, int] = field(default_factory=dict)
    net_bytes: int = 0
    round_trips: int = 0
    jobs_per_worker: list[int] = field(default_factory=list)
    model_calls: int = 0
    max_calls_at_once: int = 0
    cpu: Cpu = field(default_factory=Cpu)
    speedup: float = 0.0
    resync_speedup: float = 0.0
    target_met: bool = False

    @property
    def rate(self) -> float:
        """Grading throughput, blocks/s."""
        return self.blocks / self.grading_s if self.grading_s else 0.0

    @property
    def resync_rate(self) -> float:
        return self.blocks / self.resync_s if self.resync_s else 0.0


@dataclass
class Setup:
    """What every run of one benchmark shares."""

    tmp: Path
    vaults: dict[str, Path]
    """The vault each backend grades."""
    warm_up: Path
    redis_url: str
    server: ScriptedLLMServer
    model: Model
    env: dict[str, str]


def config_file(
    setup: Setup, where: Path, backend: str, *, prefix: str, redis_url: str | None
) -> Path:
    """A config file as a user would write it for this process."""
    settings: dict[str, Any] = {
        "state": {"dir": str(where / "state")},
        "grading_workers": {"prefix": prefix, "jobs_per_worker": 1, "redis_url": redis_url},
    }
    if backend == "scripted":
        settings["model"] = {
            "backend": "llm",
            "llm": {
                "api_base": setup.server.base_url,
                "api_key_env": KEY_ENV,
                "requests_per_minute": 600_000,
            },
        }
    else:
        settings["model"] = {"backend": "offline"}
        settings["eval"] = {"processes": 1}
    where.mkdir(parents=True, exist_ok=True)
    path = where / "config.yaml"
    path.write_text(yaml.safe_dump(settings), encoding="utf-8")
    return path


def aclarai(config: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "aclarai.daemon.cli", "--config", str(config), *args]


def resync(setup: Setup, config: Path, vault: Path) -> tuple[dict[str, str], float, float]:
    """Run ``aclarai resync``: its summary rows, its CPU seconds and its wall-clock seconds."""
    started = time.perf_counter()
    with tempfile.TemporaryFile(dir=setup.tmp) as out, tempfile.TemporaryFile(dir=setup.tmp) as err:
        process = subprocess.Popen(
            aclarai(config, "resync", str(vault)),
            cwd=setup.tmp,
            env=setup.env,
            stdout=out,
            stderr=err,
        )
        _, code, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(code)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if process.returncode != 0:
        raise RuntimeError(f"resync exited {process.returncode}:\n{stdout}\n{stderr[-4000:]}")
    rows = {}
    for line in stdout.splitlines():
        key, sep, value = line.partition("  ")
        if sep:
            rows[key.strip()] = value.strip()
    return rows, usage.ru_utime + usage.ru_stime, wall


def summary_int(rows: dict[str, str], key: str) -> int:
    return int(rows[key].replace(",", ""))


def vault_files(root: Path) -> dict[str, bytes]:
    """Every file of a vault, the dashboard without its timestamps, aclarai's dot folder (the
    vault lock) left out."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or rel.startswith(".aclarai/"):
            continue
        data = path.read_bytes()
        if rel == DASHBOARD:
            data = DASHBOARD_TIMES.sub("<time>", data.decode("utf-8")).encode()
        found[rel] = data
    return found


def reference(setup: Setup, backend: str) -> dict[str, bytes]:
    """The vault as a local resync with ``backend`` leaves it (the model answers at once: its
    replies do not depend on the delay)."""
    where = setup.tmp / f"local-{backend}"
    vault = where / "vault"
    shutil.copytree(setup.vaults[backend], vault)
    config = config_file(setup, where, backend, prefix="unused", redis_url=None)
    delay, setup.model.delay_s = setup.model.delay_s, 0.0
    try:
        resync(setup, config, vault)
    finally:
        setup.model.delay_s = delay
    return vault_files(vault)


@contextmanager
def workers(
    setup: Setup, backend: str, where: Path, count: int, prefix: str
) -> Iterator[list[int]]:
    """``count`` workers, each with its own state folder, warmed up; yields their pids."""
    client = redis.Redis.from_url(setup.redis_url)
    processes: list[subprocess.Popen[bytes]] = []
    with ExitStack() as logs:
        try:
            for k in range(count):
                home = where / f"worker-{k}"
                config = config_file(setup, home, backend, prefix=prefix, redis_url=setup.redis_url)
                log = logs.enter_context((home / "worker.log").open("wb"))
                command = aclarai(config, "worker", "--name", f"w{k}")
                processes.append(
                    subprocess.Popen(
                        command,
                        cwd=setup.tmp,
                        env=setup.env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        preexec_fn=dies_with_us(),
                    )
                )
            wait_for_roster(client, prefix, count, processes)
            warm_up(setup, backend, where / "warm-up", count, prefix)
            yield [p.pid for p in processes]
        finally:
            for process in processes:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in processes:
                terminate(process, STOP_TIMEOUT_S)
            client.close()


def wait_for_roster(
    client: redis.Redis, prefix: str, count: int, processes: Sequence[subprocess.Popen[bytes]]
) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while client.hlen(roster_key(prefix)) < count:
        exited = [p.pid for p in processes if p.poll() is not None]
        if exited:
            raise RuntimeError(f"worker pid {exited[0]} exited before its first heartbeat")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{count} worker(s) not all up in {READY_TIMEOUT_S:.0f} s")
        time.sleep(0.1)


def warm_up(setup: Setup, backend: str, where: Path, count: int, prefix: str) -> None:
    """A resync of a few blocks per worker through them, so each has graded before the clock
    starts."""
    vault = where / "vault"
    blocks = WARM_UP_BLOCKS_PER_WORKER * count
    shutil.copytree(setup.warm_up, vault)
    for path in sorted(vault.rglob("*.md"))[math.ceil(blocks / BLOCKS_PER_NOTE) :]:
        path.unlink()
    config = config_file(setup, where, backend, prefix=prefix, redis_url=setup.redis_url)
    resync(setup, config, vault)


def tree_cpu(pids: Sequence[int]) -> float:
    """CPU seconds of these processes and their descendants, as /proc has them now."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        times[pid] = (int(fields[11]) + int(fields[12])) / TICKS
    wanted = set(pids)
    grew = True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in wanted} - wanted
        wanted |= found
        grew = bool(found)
    return sum(times.get(pid, 0.0) for pid in wanted)


def redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def stream_entries(client: redis.Redis, name: str, after: str = "-") -> list[tuple[bytes, bytes]]:
    entries = cast(list[Entry], client.xrange(name, after))
    return [(entry_id, (fields or {})[b"payload"]) for entry_id, fields in entries]


def entry_ms(entry_id: bytes) -> int:
    return int(entry_id.split(b"-")[0])


def server_counts(client: redis.Redis, run: Run) -> None:
    """The commands (this benchmark's CONFIG RESETSTAT aside), bytes and round trips (reads off
    the clients' sockets: a pipeline or MULTI/EXEC sent at once is one) the server counted."""
    stats = client.info("commandstats")
    run.commands = {
        name.removeprefix("cmdstat_"): int(value["calls"])
        for name, value in stats.items()
        if name != "cmdstat_config|resetstat"
    }
    net = client.info("stats")
    run.net_bytes = int(net["total_net_input_bytes"]) + int(net["total_net_output_bytes"])
    run.round_trips = int(net["total_reads_processed"])


def payload_sizes(run: Run, jobs: list[bytes], results: list[bytes]) -> None:
    sizes: dict[str, list[int]] = {}
    for raw in jobs:
        sizes.setdefault(json.loads(raw)["kind"], []).append(len(raw))
    run.job_bytes = {kind: sum(found) / len(found) for kind, found in sorted(sizes.items())}
    run.job_bytes["all"] = sum(map(len, jobs)) / max(1, len(jobs))
    run.result_bytes = sum(map(len, results)) / max(1, len(results))


def last_id(client: redis.Redis, pattern: str) -> tuple[str, str]:
    """The stream matching ``pattern`` and its last entry's id (the warm-up's last job)."""
    [name] = [n.decode() for n in client.scan_iter(match=pattern)]
    [(entry_id, _)] = cast(list[Entry], client.xrevrange(name, count=1))
    return name, entry_id.decode()


def jobs_done(client: redis.Redis, prefix: str) -> list[int]:
    """Jobs each worker did, warm-up included, from the heartbeats they wrote on stopping."""
    beats = client.hgetall(roster_key(prefix))
    return sorted((json.loads(raw)["done"] for raw in beats.values()), reverse=True)


def distributed_run(setup: Setup, backend: str, count: int, expected: dict[str, bytes]) -> Run:
    run = Run(backend, count)
    where = setup.tmp / f"{backend}-{count}"
    vault = where / "daemon" / "vault"
    shutil.copytree(setup.vaults[backend], vault)
    prefix = f"bench:{backend}:{count}"
    config = config_file(setup, where / "daemon", backend, prefix=prefix, redis_url=setup.redis_url)
    results = results_stream(prefix, vault_id(where / "daemon" / "state"))
    client = redis.Redis.from_url(setup.redis_url)
    try:
        with workers(setup, backend, where, count, prefix) as pids:
            work, warmed = last_id(client, f"{prefix}:work:*")
            calls = len(setup.server.chat_requests)
            setup.server.max_in_flight = 0
            before = Cpu(0.0, tree_cpu(pids), time.process_time(), redis_cpu(client))
            client.config_resetstat()
            rows, run.cpu.resync, run.resync_wall_s = resync(setup, config, vault)
            server_counts(client, run)
            run.cpu.workers = tree_cpu(pids) - before.workers
            run.cpu.model = time.process_time() - before.model
            run.cpu.redis = redis_cpu(client) - before.redis
            jobs = stream_entries(client, work, f"({warmed}")
            answers = stream_entries(client, results)
            payload_sizes(run, [raw for _, raw in jobs], [raw for _, raw in answers])
            run.grading_s = (entry_ms(answers[-1][0]) - entry_ms(jobs[0][0])) / 1000
            run.model_calls = len(setup.server.chat_requests) - calls
            run.max_calls_at_once = setup.server.max_in_flight
        run.jobs_per_worker = jobs_done(client, prefix)
    finally:
        client.close()
    run.blocks = summary_int(rows, "dirty blocks")
    run.null_scores = summary_int(rows, "null scores (evaluation failed)")
    run.resync_s = float(rows["time"].removesuffix(" s"))
    run.identical = vault_files(vault) == expected
    return run


def score(runs: list[Run]) -> None:
    """Each run's speed-ups over one worker of its backend, and whether it meets the target."""
    one = {r.backend: r for r in runs if r.workers == 1}
    for r in runs:
        base = one.get(r.backend)
        if base is not None and base.rate and base.resync_rate:
            r.speedup = r.rate / base.rate
            r.resync_speedup = r.resync_rate / base.resync_rate
            r.target_met = r.rate >= TARGET_SHARE * r.workers * base.rate


def table(runs: list[Run]) -> list[str]:
    lines = [
        f"{'backend':<9} {'workers':>7} {'blocks':>6}  {'resync s':>8} {'blocks/s':>8} "
        f"{'speed-up':>8}  {'grading s':>9} {'blocks/s':>8} {'speed-up':>8}  "
        f"{'>= 0.8 x N':<10} vault"
    ]
    for r in runs:
        target = "met" if r.target_met else ("-" if not r.speedup else "MISSED")
        vault = "identical" if r.identical else "DIFFERENT"
        lines.append(
            f"{r.backend:<9} {r.workers:>7} {r.blocks:>6}  {r.resync_s:>8.2f} "
            f"{r.resync_rate:>8.2f} {r.resync_speedup:>7.2f}x  {r.grading_s:>9.2f} "
            f"{r.rate:>8.2f} {r.speedup:>7.2f}x  {target:<10} {vault:<9}"
        )
    return lines


def detail_lines(runs: list[Run]) -> list[str]:
    lines = ["per run: wire cost, CPU seconds over the resync, jobs each worker did (warm-up too)"]
    for r in runs:
        total = sum(r.commands.values())
        jobs = ", ".join(f"{k} {v:.0f} B" for k, v in r.job_bytes.items() if k != "all")
        busiest = sorted(r.commands.items(), key=lambda kv: -kv[1])[:5]
        c = r.cpu
        lines += [
            f"  {r.backend} x{r.workers}: job {r.job_bytes.get('all', 0):.0f} B ({jobs}), "
            f"result {r.result_bytes:.0f} B; {r.round_trips / max(1, r.blocks):.1f} round "
            f"trips, {total / max(1, r.blocks):.1f} Redis commands and "
            f"{r.net_bytes / max(1, r.blocks) / 1024:.1f} KiB a block "
            f"({', '.join(f'{k} {v}' for k, v in busiest)})",
            f"    CPU s: resync {c.resync:.1f}, workers {c.workers:.1f}, model server "
            f"{c.model:.1f}, redis {c.redis:.1f}; {1000 * c.total / max(1, r.blocks):.0f} ms a "
            f"block, {c.total / max(r.resync_wall_s, 1e-9):.2f} cores busy over the resync's "
            f"{r.resync_wall_s:.1f} s; "
            f"jobs per worker {','.join(map(str, r.jobs_per_worker))}",
        ]
        if r.backend == "scripted":
            lines.append(f"    model calls {r.model_calls}, at most {r.max_calls_at_once} at once")
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4,8", help="worker counts, comma-separated")
    parser.add_argument("--blocks", type=int, default=80, help="blocks graded by the model")
    parser.add_argument(
        "--offline-blocks", type=int, default=2000, help="blocks graded by the offline backend"
    )
    parser.add_argument("--delay-ms", type=float, default=200.0, help="the model's delay a call")
    parser.add_argument("--backend", default="scripted,offline", help="scripted and/or offline")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    args.workers = [int(n) for n in args.workers.split(",")]
    args.backend = args.backend.split(",")
    if set(args.backend) - {"scripted", "offline"}:
        parser.error("--backend: scripted, offline or both")
    return args


def clean_env(tmp: Path) -> dict[str, str]:
    """The user's environment without aclarai's own settings, its XDG folders in ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACLARAI_")}
    env.update(XDG_CONFIG_HOME=str(tmp / "xdg-config"), XDG_STATE_HOME=str(tmp / "xdg-state"))
    env[KEY_ENV] = "bench-key"
    return env


def generate(root: Path, blocks: int, seed: int) -> int:
    notes = max(1, math.ceil(blocks / BLOCKS_PER_NOTE))
    return generate_vault(root, notes, math.ceil(blocks / notes), seed=seed)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="aclarai-distributed-")))
        sizes = {"scripted": args.blocks, "offline": args.offline_blocks}
        vaults = {backend: tmp / f"vault-{backend}" for backend in args.backend}
        made = {b: generate(vault, sizes[b], seed=1) for b, vault in vaults.items()}
        # Other texts: a worker's cache must not know the measured vault's blocks.
        generate(tmp / "warm-up", WARM_UP_BLOCKS_PER_WORKER * max(args.workers), seed=2)
        graded = {"scripted": f"by the scripted model ({args.delay_ms:.0f} ms a call)"}
        graded["offline"] = "by the offline backend"
        print(
            "distributed grading: "
            + ", ".join(f"{made[b]} blocks {graded[b]}" for b in args.backend)
            + f"; grading_workers.jobs_per_worker 1; {os.cpu_count()} cores",
            flush=True,
        )
        model = Model()
        server = stack.enter_context(model_server(model))
        redis_server = stack.enter_context(start_redis_server())
        setup = Setup(tmp, vaults, tmp / "warm-up", redis_server.url, server, model, clean_env(tmp))
        model.delay_s = args.delay_ms / 1000
        runs = []
        for backend in args.backend:
            expected = reference(setup, backend)
            for count in args.workers:
                runs.append(distributed_run(setup, backend, count, expected))
        score(runs)
        print("\n".join([*table(runs), *detail_lines(runs)]))
        if model.unknown:
            print(f"the scripted model refused {model.unknown} prompt(s) it was not taught")
        if args.json:
            figures = [
                {**asdict(r), "blocks_per_s": r.rate, "resync_blocks_per_s": r.resync_rate}
                for r in runs
            ]
            args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
            print(f"wrote {args.json}")
        ok = all(r.identical and not r.null_scores for r in runs) and not model.unknown
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
