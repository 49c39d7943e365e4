"""Resync throughput on a synthetic vault.

    python benchmarks/resync.py [--notes 10000] [--blocks-per-note 10]
    python benchmarks/resync.py --one-note 10000     # one note of 10,000 blocks

``--one-note N`` is the long-note case: one note of N blocks, whose cost per block must be the
same as in many short notes (claims/s and CPU s are printed next to blocks/s).

Phases, each in its own process so peak RSS is per phase:
  scan   cold parse + store sync (+ enqueue), no evaluation
  full   cold end to end on a fresh copy: parse, sync, extract, evaluate (offline), write back
  warm   a second resync over the unchanged vault
The full pass's time includes embedding every block for search once its grades are written;
the line after the table says how long that took.
Targets (2 cores, 10,000 notes / 100,000 blocks): scan >= 25,000 blocks/s, full >= 1,500
blocks/s, warm >= 150,000 blocks/s, RSS <= 250 MB.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def run_phase(phase: str, vault: Path, state: Path) -> dict[str, float]:
    from aclarai.daemon.config import load_config
    from aclarai.daemon.factory import build_queue, build_store, build_vault
    from aclarai.daemon.loop.resync import resync
    from aclarai.daemon.vault.notesync import NoteSync

    config = load_config(env={"ACLARAI_STATE_DIR": str(state)})
    started = time.perf_counter()
    cpu_started = time.process_time()
    claims = 0
    search_s = 0.0
    if phase == "scan":
        store = build_store(config, state)
        queue = build_queue(config, state)
        report = NoteSync(build_vault(config, vault), store, queue).sync_vault()
        blocks = report.blocks_seen
        store.close()
        queue.close()
    else:
        summary = resync(config, vault)
        blocks = summary.counts.blocks if summary.counts else 0
        claims = summary.drain.claims_evaluated
        search_s = summary.search.seconds if summary.search else 0.0
        if phase == "warm":
            assert summary.synced.files_parsed == 0 and summary.drain.files_written == 0, summary
    elapsed = time.perf_counter() - started
    cpu_s = time.process_time() - cpu_started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "blocks": blocks,
        "claims": claims,
        "seconds": elapsed,
        "cpu_s": cpu_s,
        "blocks_per_s": blocks / elapsed,
        "claims_per_s": claims / elapsed,
        "rss_mb": usage.ru_maxrss / 1024,
        "search_s": search_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--blocks-per-note", type=int, default=10)
    parser.add_argument(
        "--one-note", type=int, metavar="N", help="one note of N blocks (the long-note case)"
    )
    parser.add_argument("--phase", choices=["scan", "full", "warm"])
    parser.add_argument("--vault", type=Path)
    parser.add_argument("--state", type=Path)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(run_phase(args.phase, args.vault, args.state)))
        return

    from vaultgen import generate_vault

    if args.one_note:
        args.notes, args.blocks_per_note = 1, args.one_note
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        t0 = time.perf_counter()
        total = generate_vault(base / "vault", args.notes, args.blocks_per_note)
        print(f"generated {args.notes} notes / {total} blocks in {time.perf_counter() - t0:.1f} s")
        shutil.copytree(base / "vault", base / "vault2")
        results = {}
        for phase, vault, state in (
            ("scan", base / "vault", base / "state-scan"),
            ("full", base / "vault2", base / "state-full"),
            ("warm", base / "vault2", base / "state-full"),
        ):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--phase",
                    phase,
                    "--vault",
                    str(vault),
                    "--state",
                    str(state),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            results[phase] = json.loads(out.stdout.strip().splitlines()[-1])
        targets = {"scan": 25_000, "full": 1_500, "warm": 150_000}
        print(
            f"{'phase':<6} {'blocks':>8} {'seconds':>8} {'CPU s':>7} {'blocks/s':>10}"
            f" {'target':>8} {'claims/s':>9} {'RSS MB':>7}"
        )
        for phase, r in results.items():
            print(
                f"{phase:<6} {r['blocks']:>8.0f} {r['seconds']:>8.2f} {r['cpu_s']:>7.2f}"
                f" {r['blocks_per_s']:>10.0f} {targets[phase]:>8} {r['claims_per_s']:>9.0f}"
                f" {r['rss_mb']:>7.0f}"
            )
        print(
            f"of the full pass, {results['full']['search_s']:.2f} s embedded the blocks for "
            "search, after their grades were written"
        )


if __name__ == "__main__":
    main()
