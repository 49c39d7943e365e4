"""Throughput of the evaluation service with the offline backend.

    python benchmarks/service.py [--requests 400] [--entries 1000] [--data ../shared/data]
                                 [--redis-url redis://127.0.0.1:PORT/0]

Measures, on this machine:
  http        requests/s and p50/p95 latency of ``POST /api/v1/evaluate`` through a real uvicorn
              server on a loopback port, at concurrency 1 and 16 (client threads share the
              machine's cores with the server)
  consume     entries/s through the Redis Stream consumer: one, then two consumer processes
              (``run_consumer``, as ``aclarai consume`` runs it) join the group, then the entries
              are published and timed until the last result is in; SIGTERM stops the processes
Payloads are HaluEval QA rows (knowledge as context, question, right answer) when the data is
there, else synthetic ones. A real redis-server is started (the test suite's fixture), unless
``--redis-url`` names one already running; the streams are the run's own and are deleted after.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aclarai.agents.offline.evaluator import OfflineEvaluator  # noqa: E402
from aclarai.daemon.config import Config, load_config  # noqa: E402
from aclarai.daemon.service.api import build_server, create_app  # noqa: E402
from aclarai.daemon.service.consume import run_consumer  # noqa: E402
from aclarai.daemon.service.core import ServiceCore, assemble_core  # noqa: E402
from tests.fixtures.processes import dies_with_us  # noqa: E402
from tests.fixtures.redis_server import start_redis_server  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"


def load_payloads(data_dir: Path, limit: int = 500) -> list[dict[str, Any]]:
    """Evaluation requests built from HaluEval QA rows, or synthetic ones without the data."""
    rows: list[tuple[str, str, str]] = []
    path = data_dir / "halueval_qa_dev.jsonl"
    if path.exists():
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                row = json.loads(line)
                rows.append((row["question"], row["knowledge"], row["right_answer"]))
                rows.append((row["question"], row["knowledge"], row["hallucinated_answer"]))
                if len(rows) >= limit:
                    break
    else:
        context = "The Eiffel Tower in Paris is 330 metres tall. It was completed in 1889."
        rows = [
            ("How tall is the Eiffel Tower?", context, f"It is {n} metres tall.")
            for n in range(limit)
        ]
    return [
        {
            "event_id": f"bench-{n}",
            "event_type": "agent.answer",
            "agent": {"name": "bench", "type": "rag", "version": "1"},
            "interaction": {"user_query": q, "context": c, "answer": a},
        }
        for n, (q, c, a) in enumerate(rows)
    ]


def offline_core(config: Config) -> ServiceCore:
    """The service core on the offline scorer, whatever ``model.backend`` says."""
    return assemble_core(config.service, OfflineEvaluator())


@contextmanager
def serving(config: Config) -> Iterator[str]:
    core = offline_core(config)
    server = build_server(create_app(config, core), "127.0.0.1", 0)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        core.close()


def http_run(url: str, payloads: list[dict[str, Any]], requests: int, concurrency: int) -> str:
    latencies: list[float] = []
    lock = threading.Lock()
    counter = iter(range(requests))

    def worker() -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            while True:
                with lock:
                    n = next(counter, None)
                if n is None:
                    return
                started = time.perf_counter()
                response = client.post("/api/v1/evaluate", json=payloads[n % len(payloads)])
                elapsed = time.perf_counter() - started
                response.raise_for_status()
                with lock:
                    latencies.append(elapsed)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    cuts = statistics.quantiles(latencies, n=100)
    return (
        f"http  concurrency {concurrency:>2}: {len(latencies) / wall:7.1f} req/s   "
        f"p50 {cuts[49] * 1000:6.1f} ms   p95 {cuts[94] * 1000:6.1f} ms   "
        f"({len(latencies)} requests)"
    )


def consume_run(
    config: Config, payloads: list[dict[str, Any]], entries: int, processes: int
) -> str:
    client = redis.Redis.from_url(config.eval_stream.redis_url)
    client.delete(config.eval_stream.stream, config.eval_stream.results_stream)
    client.xgroup_create(config.eval_stream.stream, config.eval_stream.group, id="0", mkstream=True)
    overrides = json.dumps(_overrides(config))
    workers = [
        subprocess.Popen(
            [sys.executable, __file__, "--consume-worker", overrides, f"bench-{k}"],
            cwd=ROOT,
            preexec_fn=dies_with_us(),
        )
        for k in range(processes)
    ]
    # Time the steady state only: start the clock once every consumer has joined the group.
    while (
        len(client.xinfo_consumers(config.eval_stream.stream, config.eval_stream.group)) < processes
    ):
        time.sleep(0.05)
    started = time.perf_counter()
    pipe = client.pipeline(transaction=False)
    for n in range(entries):
        pipe.xadd(config.eval_stream.stream, {"payload": json.dumps(payloads[n % len(payloads)])})
    pipe.execute()
    while client.xlen(config.eval_stream.results_stream) < entries:
        time.sleep(0.01)
    wall = time.perf_counter() - started
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    for worker in workers:
        worker.wait(timeout=60)
    client.close()
    return (
        f"consume {processes} process{'es' if processes > 1 else '  '}: "
        f"{entries / wall:7.1f} entries/s   ({entries} entries in {wall:.1f} s)"
    )


def _overrides(config: Config) -> dict[str, Any]:
    return {f"eval_stream.{k}": v for k, v in config.eval_stream.model_dump().items()}


def consume_worker(overrides_json: str, name: str) -> None:
    with tempfile.TemporaryDirectory() as home:
        config = load_config(
            env={"XDG_CONFIG_HOME": home, "ACLARAI_STATE_DIR": home},
            overrides=json.loads(overrides_json),
        )
        core = offline_core(config)
        try:
            run_consumer(config, core=core, consumer=name)
        finally:
            core.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--redis-url", help="a running Redis instead of a fresh redis-server")
    parser.add_argument("--consume-worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.consume_worker:
        consume_worker(*args.consume_worker)
        return
    payloads = load_payloads(args.data)
    with tempfile.TemporaryDirectory() as home, ExitStack() as stack:
        redis_url = args.redis_url or stack.enter_context(start_redis_server()).url
        # Names of the run's own, so that a server in use loses nothing of anyone else's.
        run = f"bench-{uuid.uuid4().hex[:12]}"
        config = load_config(
            env={"XDG_CONFIG_HOME": home, "ACLARAI_STATE_DIR": home},
            overrides={
                "eval_stream.redis_url": redis_url,
                "eval_stream.block_s": 0.2,
                "eval_stream.stream": f"{run}-events",
                "eval_stream.group": f"{run}-group",
                "eval_stream.results_stream": f"{run}-results",
                "eval_stream.dead_letter_stream": f"{run}-dead-letter",
            },
        )
        print(f"{len(payloads)} distinct payloads, offline backend")
        with serving(config) as url:
            http_run(url, payloads, 20, 1)  # warm-up
            for concurrency, requests in ((1, args.requests), (16, args.requests * 2)):
                print(http_run(url, payloads, requests, concurrency), flush=True)
        try:
            for processes in (1, 2):
                print(consume_run(config, payloads, args.entries, processes), flush=True)
        finally:
            names = config.eval_stream
            with redis.Redis.from_url(redis_url) as client:
                client.delete(names.stream, names.results_stream, names.dead_letter_stream)


if __name__ == "__main__":
    main()
