"""Search latency, index size and what the index costs a cold resync, on a synthetic vault.

    python benchmarks/search_speed.py [--notes 10000] [--blocks-per-note 10] [--queries 200]

Generates the vault (benchmarks/vaultgen.py), resyncs it cold in process (offline scorer) and
reports the pass's time with the part spent embedding the blocks after their grades; then opens
the vault's search once and times each query warm, in process, as the HTTP and MCP servers serve
it (p50, p95, max); then the size on disk of the search index against the rest of the graph
(SQLite's ``dbstat``). Targets (2 cores, 100,000 blocks): search p95 <= 50 ms, index <= graph.

What the word index adds to a cold resync is the difference between this pass's time less its
embedding and the same pass at a commit before the index (``benchmarks/resync.py`` there).
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

QUERIES = (
    "Why was the billing job delayed?",
    "deploy failed in Frankfurt",
    "search index slowed down after 40 minutes",
    "which release was rolled back since v2.3",
    "payment task postponed before the audit",
    "staging cluster passed review twice this week",
    "what happened to the mobile release on June 6",
    "did the migration finish for 1,200 users",
    "API outage on Tuesday",
    "build broke",
)


def sizes(path: Path) -> tuple[int, int]:
    """Bytes of the search index's tables and of everything else in the store file."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
        search_tables = {
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_schema WHERE tbl_name LIKE 'search%'"
            )
        }
    finally:
        conn.close()
    index = sum(size for name, size in rows if name.startswith("search") or name in search_tables)
    return index, sum(size for _, size in rows) - index


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--blocks-per-note", type=int, default=10)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    from vaultgen import generate_vault

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        total = generate_vault(base / "vault", args.notes, args.blocks_per_note)
        print(f"generated {args.notes} notes / {total} blocks")
        os.environ["ACLARAI_STATE_DIR"] = str(base / "state")
        from aclarai.daemon.config import load_config
        from aclarai.daemon.loop.resync import resync
        from aclarai.daemon.search.session import VaultSearch

        config = load_config(None)
        started = time.perf_counter()
        summary = resync(config, base / "vault")
        seconds = time.perf_counter() - started
        search = summary.search
        assert search is not None
        print(
            f"cold resync of {total} blocks: {seconds:.1f} s, of which mending and embedding "
            f"{search.embedded} blocks {search.seconds:.1f} s; before embedding "
            f"{seconds - search.seconds:.1f} s ({total / (seconds - search.seconds):,.0f} blocks/s)"
        )
        rng = random.Random(0)
        queries = [rng.choice(QUERIES) for _ in range(args.queries)]
        with VaultSearch(config, base / "vault") as vault:
            opened = time.perf_counter()
            vault.search(QUERIES[0])
            first_ms = 1000 * (time.perf_counter() - opened)
            print(f"first search (loads {total} vectors): {first_ms:.0f} ms")
            times = []
            for query in queries:
                t0 = time.perf_counter()
                result = vault.search(query)
                times.append(1000 * (time.perf_counter() - t0))
                assert result.hits, query
        times.sort()
        p95 = times[int(len(times) * 0.95) - 1]
        print(
            f"search, warm, {len(times)} queries: p50 {statistics.median(times):.1f} ms, "
            f"p95 {p95:.1f} ms (target <= 50), max {times[-1]:.1f} ms"
        )
        index, graph = sizes(base / "state" / "graph.sqlite")
        print(
            f"on disk: search index {index / 2**20:.1f} MB, "
            f"rest of the graph {graph / 2**20:.1f} MB (index / graph {index / graph:.2f}, "
            "target <= 1)"
        )


if __name__ == "__main__":
    main()
