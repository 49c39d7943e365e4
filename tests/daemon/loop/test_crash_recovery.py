"""kill -9 the daemon at random moments of a resync, restart it, and compare with a run that
was never interrupted: no torn note, no lost queue entry, the same final state.

The killed daemons are forked from the test process, which has already imported everything:
a fresh interpreter spends seconds importing on this machine, and twenty kills would not fit
in the time budget. Each child runs the real :func:`run_daemon` (its own process, signal
handlers, observer threads and SQLite connections) and dies by SIGKILL. The last restart is a
real ``python -m aclarai.daemon.cli watch`` subprocess.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
import time
from pathlib import Path

import pytest

from aclarai.daemon.config import load_config
from aclarai.daemon.loop.daemon import run_daemon
from aclarai.daemon.loop.resync import resync
from aclarai.daemon.vault.queue import DurableQueue
from aclarai.daemon.vault.writer import TEMP_PREFIX
from aclarai.graph import block_key, key_block_id
from aclarai.graph.sqlite import SqliteStore
from aclarai.parsers import parse_note
from tests.helpers.cli import DaemonProcess, daemon_env, wait_until
from tests.helpers.vault import generated_vault, user_bytes

pytestmark = pytest.mark.slow

MIN_KILLS_DURING_WORK = 20
MAX_TRIALS = 60


def notes_of(root: Path) -> dict[str, bytes]:
    """Every note's bytes; not the dashboard, which is not a note and tells the time."""
    found = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))}
    found.pop("aclarai/Dashboard.md", None)
    return found


def _child(vault: str, env: dict[str, str]) -> None:
    os._exit(run_daemon(load_config(env=env), Path(vault)))


def block_state(root: Path, store: SqliteStore) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Block id -> (hash, claim ids) as the store holds it, for every block of the vault (the
    generated vault gives each id to one note)."""
    keys = [
        block_key(rel, b.id)
        for rel, data in notes_of(root).items()
        for b in parse_note(data.decode()).blocks
    ]
    stored = store.get_blocks(keys)
    claims = store.claims_of_blocks(keys)
    return {
        key_block_id(key): (stored[key].hash, tuple(sorted(c.id for c in claims[key])))
        for key in keys
        if key in stored
    }


class Chain:
    """One vault under repeated kills, until its daemon gets to finish the work."""

    def __init__(self, base: Path, original: Path, number: int) -> None:
        self.vault = base / f"vault-{number}"
        self.state = base / f"state-{number}"
        shutil.copytree(original, self.vault)
        self.env = daemon_env(ACLARAI_STATE_DIR=str(self.state))

    def run_and_kill(self, delay_s: float) -> None:
        child = multiprocessing.get_context("fork").Process(
            target=_child, args=(str(self.vault), self.env)
        )
        child.start()
        time.sleep(delay_s)
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(timeout=10)
        assert child.exitcode == -signal.SIGKILL

    def unfinished(self, ref_notes: dict[str, bytes], ref_blocks: dict[str, object]) -> list[str]:
        """Blocks whose work is not done, after checking that none of them was lost."""
        with SqliteStore(self.state / "graph.sqlite") as store:
            mine = block_state(self.vault, store)
        queue = DurableQueue(self.state / "queue.sqlite")
        try:
            queued = {key_block_id(e.block_id) for e in queue.entries()}
        finally:
            queue.close()
        notes = notes_of(self.vault)
        pending: list[str] = []
        for rel, data in notes.items():
            ref = {b.id: b for b in parse_note(ref_notes[rel].decode()).blocks}
            for block in parse_note(data.decode()).blocks:
                done = mine.get(block.id) == ref_blocks[block.id] and block.scores == (
                    ref[block.id].scores
                )
                if done:
                    continue
                pending.append(block.id)
                if block.id in mine and mine[block.id][0] == block.hash:
                    # The store already took this text: only the queue still knows the work.
                    assert block.id in queued, f"{rel}:{block.id} lost from the queue"
        return pending


def test_kill_9_at_random_moments_then_restart_reaches_the_uninterrupted_state(
    tmp_path: Path,
) -> None:
    rng = random.Random(20240603)
    original = tmp_path / "original"
    generated_vault(original, rng)
    reference = tmp_path / "reference"
    shutil.copytree(original, reference)
    ref_env = daemon_env(ACLARAI_STATE_DIR=str(tmp_path / "ref-state"))
    started = time.monotonic()
    resync(load_config(env=ref_env), reference)
    ref_duration = time.monotonic() - started
    ref_notes = notes_of(reference)
    with SqliteStore(tmp_path / "ref-state" / "graph.sqlite") as store:
        ref_blocks = block_state(reference, store)
        ref_counts = store.counts()
    originals = {rel: user_bytes(data.decode()) for rel, data in notes_of(original).items()}

    chains = [Chain(tmp_path, original, 0)]
    kills_during_work = trials = 0
    while kills_during_work < MIN_KILLS_DURING_WORK and trials < MAX_TRIALS:
        trials += 1
        chain = chains[-1]
        chain.run_and_kill(rng.uniform(0.05, 0.3 + ref_duration / 4))
        notes = notes_of(chain.vault)
        # No torn note: every note is whole, the user's text intact, only our comments differ.
        assert {rel: user_bytes(data.decode()) for rel, data in notes.items()} == originals
        if chain.unfinished(ref_notes, ref_blocks):
            kills_during_work += 1
        else:
            assert notes == ref_notes
            chains.append(Chain(tmp_path, original, len(chains)))
    assert kills_during_work >= MIN_KILLS_DURING_WORK, f"{trials} trials"

    # The last chain's restart is the real command, run to the end.
    chain = chains[-1]
    daemon = DaemonProcess(chain.vault, chain.env)
    try:
        daemon.wait_for_log("reconcile (start-up) done", timeout_s=60)
        wait_until(lambda: notes_of(chain.vault) == ref_notes, timeout_s=20)
        assert daemon.stop() == 0
    finally:
        daemon.kill()
    assert not list(chain.vault.rglob(f"{TEMP_PREFIX}*"))
    assert chain.unfinished(ref_notes, ref_blocks) == []
    with SqliteStore(chain.state / "graph.sqlite") as store:
        assert store.counts() == ref_counts
    queue = DurableQueue(chain.state / "queue.sqlite")
    try:
        assert queue.depth() == 0
        assert queue.dead_letters() == []
    finally:
        queue.close()
