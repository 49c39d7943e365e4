"""Save-to-score latency of the running daemon, and its memory.

    python benchmarks/latency.py [--notes 500] [--edits 200] [--quiet 0.5] [--interval 0.25]

Starts ``aclarai watch`` (a real subprocess, offline evaluator) on a generated vault, waits for
its start-up reconcile, then saves ``--edits`` edits, each appending a new block to a note no
other edit is pending on, one every ``--interval`` seconds. For each edit it measures the time
from the save until the note holds the new block's score comments, and reports p50/p95/max of
that latency minus the quiet period (the wait the daemon imposes on purpose), plus the daemon's
RSS. Target: p95 <= 0.3 s.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vaultgen import generate_vault, utterance

from aclarai.agents.pool import die_with_parent
from aclarai.daemon.vault.queue import DurableQueue
from aclarai.parsers import Block, parse_note

POLL_S = 0.005


def rss_mb(pid: int) -> tuple[float, float]:
    """Current and peak resident memory of a process, in MB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values["VmRSS"], values["VmHWM"]


def start_daemon(vault: Path, state: Path, quiet_s: float, log: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "ACLARAI_STATE_DIR": str(state),
        "ACLARAI_WATCH__QUIET_PERIOD_S": str(quiet_s),
        "ACLARAI_LOGGING__LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "aclarai.daemon.cli", "watch", str(vault)],
        env=env,
        stderr=log.open("w"),
        text=True,
        # A benchmark stopped by Ctrl-C or kill leaves no daemon holding the vault.
        preexec_fn=functools.partial(die_with_parent, os.getpid()),
    )


def wait_scored(
    path: Path, block_id: str, saved_at: float, out: list[float], missed: list[str]
) -> None:
    """Poll the note until ``block_id`` carries scores; record the seconds since the save, or
    the block's text in ``missed`` when it has none after 60 s."""
    last = None
    blocks: tuple[Block, ...] = ()
    while True:
        try:
            st = path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp != last:
                last = stamp
                blocks = parse_note(path.read_text(encoding="utf-8")).blocks
                if any(b.id == block_id and b.scores for b in blocks):
                    out.append(time.monotonic() - saved_at)
                    return
        except (OSError, UnicodeDecodeError):
            pass
        if time.monotonic() - saved_at > 60:
            text = next((b.text for b in blocks if b.id == block_id), "(block not found)")
            missed.append(f"{block_id}: {text}")
            return
        time.sleep(POLL_S)


def wait_for_start(state: Path) -> float:
    """Seconds until the start-up reconcile is done and the queue is empty."""
    started = time.monotonic()
    while True:
        if (state / "queue.sqlite").exists():
            queue = DurableQueue(state / "queue.sqlite")
            try:
                if queue.get_meta("last_resync") and queue.depth() == 0:
                    return time.monotonic() - started
            finally:
                queue.close()
        if time.monotonic() - started > 600:
            raise SystemExit("start-up reconcile did not finish within 600 s")
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=500)
    parser.add_argument("--blocks-per-note", type=int, default=10)
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--quiet", type=float, default=0.5, help="watch.quiet_period_s")
    parser.add_argument("--interval", type=float, default=0.25, help="seconds between saves")
    args = parser.parse_args()

    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="aclarai-latency-") as tmp:
        vault, state = Path(tmp) / "vault", Path(tmp) / "state"
        blocks = generate_vault(vault, args.notes, args.blocks_per_note)
        log = Path(tmp) / "daemon.log"
        daemon = start_daemon(vault, state, args.quiet, log)
        try:
            startup_s = wait_for_start(state)
            rss_start, _ = rss_mb(daemon.pid)
            # The generated notes only: the dashboard note is aclarai's, rewritten on refresh.
            notes = sorted(vault.glob("folder-*/*.md"))
            latencies: list[float] = []
            missed: list[str] = []
            waiters: list[threading.Thread] = []
            for i in range(args.edits):
                note = notes[i % len(notes)]
                block_id = f"blk-edit-{i:04d}"
                with note.open("a", encoding="utf-8") as handle:
                    handle.write(f"\n{utterance(rng)}\n<!-- aclarai:id={block_id} ver=1 -->\n")
                waiter = threading.Thread(
                    target=wait_scored, args=(note, block_id, time.monotonic(), latencies, missed)
                )
                waiter.start()
                waiters.append(waiter)
                time.sleep(args.interval)
            for waiter in waiters:
                waiter.join()
            rss_now, rss_peak = rss_mb(daemon.pid)
        finally:
            daemon.terminate()
            daemon.wait(timeout=15)
            warnings = log.read_text().count(" WARNING ")
    beyond = sorted(max(0.0, x - args.quiet) for x in latencies)
    p50 = statistics.median(beyond)
    p95 = beyond[int(0.95 * (len(beyond) - 1))]
    print(f"vault: {args.notes} notes, {blocks} blocks; quiet period {args.quiet:.2f} s")
    print(f"start-up reconcile (cold, whole vault scored): {startup_s:.1f} s")
    print(f"edits: {args.edits}, one every {args.interval:.2f} s; scored: {len(beyond)}")
    for line in missed:
        print(f"  no score comments after 60 s: {line}")
    print(
        f"save->score minus quiet period: p50 {p50:.3f} s  p95 {p95:.3f} s  max {beyond[-1]:.3f} s"
    )
    print(f"target p95 <= 0.300 s: {'met' if p95 <= 0.3 else 'MISSED'}")
    print(f"daemon warnings logged: {warnings}")
    print(
        f"daemon RSS: {rss_start:.0f} MB after start-up, {rss_now:.0f} MB at the end, "
        f"peak {rss_peak:.0f} MB"
    )


if __name__ == "__main__":
    main()
