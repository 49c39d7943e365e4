"""How long writing the dashboard note takes on a large vault.

    python benchmarks/dashboard.py [--notes 10000] [--blocks-per-note 10] [--repeat 5]

Generates a synthetic vault (``vaultgen``), resyncs it once with the offline evaluator (real
claims and scores in the embedded store), then times ``write_dashboard``: the store's queries,
the rendering and the write, with the note absent (a full write) and with it present and
unchanged (the no-churn path, which renders and compares but writes nothing). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--blocks-per-note", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from vaultgen import generate_vault

    from aclarai.daemon.config import load_config
    from aclarai.daemon.factory import build_queue, build_store
    from aclarai.daemon.loop.resync import resync
    from aclarai.daemon.reports.dashboard import write_dashboard

    with tempfile.TemporaryDirectory(prefix="aclarai-bench-") as tmp:
        vault, state = Path(tmp) / "vault", Path(tmp) / "state"
        blocks = generate_vault(vault, args.notes, args.blocks_per_note)
        config = load_config(env={"ACLARAI_STATE_DIR": str(state)})
        started = time.perf_counter()
        summary = resync(config, vault)
        resync_s = time.perf_counter() - started
        assert summary.counts is not None and summary.dashboard is not None
        store, queue = build_store(config, state), build_queue(config, state)
        full, unchanged = [], []
        try:
            for _ in range(args.repeat):
                summary.dashboard.path.unlink()
                started = time.perf_counter()
                result = write_dashboard(config, vault, store, queue, model="offline")
                full.append(time.perf_counter() - started)
                assert result is not None and result.written
                started = time.perf_counter()
                result = write_dashboard(config, vault, store, queue, model="offline")
                unchanged.append(time.perf_counter() - started)
                assert result is not None and not result.written
            size = summary.dashboard.path.stat().st_size
        finally:
            store.close()
            queue.close()
    print(
        json.dumps(
            {
                "blocks": blocks,
                "claims": summary.counts.claims,
                "below_threshold": summary.counts.low_quality,
                "resync_s": round(resync_s, 1),
                "dashboard_bytes": size,
                "write_s_median": round(statistics.median(full), 3),
                "write_s_max": round(max(full), 3),
                "unchanged_s_median": round(statistics.median(unchanged), 3),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
