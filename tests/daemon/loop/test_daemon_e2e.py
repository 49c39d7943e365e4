"""``aclarai watch`` as a real subprocess on a real vault: edits, moves, deletes, a user typing
beside it, bad input, hand-offs and signals."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aclarai.daemon.config import load_config
from aclarai.daemon.loop.daemon import run_daemon
from aclarai.daemon.vault.lock import is_held
from aclarai.parsers import parse_note
from tests.helpers.cli import GRACE_S, QUIET_S, DaemonProcess, cli, daemon_env, wait_until
from tests.helpers.vault import note_text, open_store, score_problems, state_dir, user_bytes

StartDaemon = Callable[..., DaemonProcess]
MakeVault = Callable[..., Path]

ALICE = "alice: The deploy to staging failed twice on Tuesday."
BOB = "bob: I rolled back to v2.3 and it is stable now."
VAGUE = "alice: It broke there again after that."
ERIN = "erin: The database migration took 40 minutes on Friday."


def scores_in(path: Path) -> dict[str, dict[str, float]]:
    return {b.id: dict(b.scores) for b in parse_note(path.read_text(encoding="utf-8")).blocks}


def test_edit_rescore_move_and_delete(make_vault: MakeVault, start_daemon: StartDaemon) -> None:
    vault = make_vault({"a.md": note_text([("blk-a1", ALICE), ("blk-a2", BOB)])})
    daemon = start_daemon(vault)
    note = vault / "a.md"
    with open_store() as store:
        assert score_problems(vault, store) == []
    first = scores_in(note)
    assert set(first["blk-a1"]) == {"entailed_score", "coverage_score", "decontextualization_score"}

    # A new block: its score comments appear within the quiet period plus a few seconds.
    with note.open("a", encoding="utf-8") as handle:
        handle.write(f"{ERIN}\n<!-- aclarai:id=blk-a3 ver=1 -->\n^blk-a3\n")
    took = wait_until(lambda: scores_in(note).get("blk-a3"), timeout_s=QUIET_S + 5)
    assert took >= QUIET_S

    # Editing again re-scores: a vaguer sentence loses decontextualization.
    note.write_text(note.read_text(encoding="utf-8").replace(ALICE, VAGUE), encoding="utf-8")
    wait_until(
        lambda: (
            scores_in(note)["blk-a1"]["decontextualization_score"]
            < first["blk-a1"]["decontextualization_score"]
        ),
        timeout_s=QUIET_S + 5,
    )
    with open_store() as store:
        wait_until(lambda: score_problems(vault, store) == [], timeout_s=5)
    assert "ver=2" in note.read_text(encoding="utf-8")  # one bump per changing write-back

    # A move keeps the blocks, their ids and their scores.
    scored = note.read_text(encoding="utf-8")
    (vault / "sub").mkdir()
    moved = vault / "sub" / "b.md"
    os.rename(note, moved)
    with open_store() as store:
        wait_until(
            lambda: (
                {b.file for b in store.live_blocks_with_ids(["blk-a1", "blk-a2", "blk-a3"])}
                == {"sub/b.md"}
            ),
            timeout_s=QUIET_S + 5,
        )
        time.sleep(GRACE_S + 1)
        blocks = store.get_blocks(f"blk-a{i}@sub/b.md" for i in (1, 2, 3))
        assert len(blocks) == 3 and all(b.deleted_at is None for b in blocks.values())
        assert score_problems(vault, store) == []
    assert moved.read_text(encoding="utf-8") == scored

    # A delete marks the blocks deleted, but only after the grace period.
    moved.unlink()
    gone_line = daemon.wait_for_log("sub/b.md is gone", timeout_s=QUIET_S + 5)
    deleted_line = daemon.wait_for_log("block(s) marked deleted", after=gone_line)
    assert deleted_line > gone_line
    with open_store() as store:
        blocks = store.get_blocks(f"blk-a{i}@sub/b.md" for i in (1, 2, 3))
        assert len(blocks) == 3 and all(b.deleted_at is not None for b in blocks.values())


def test_delete_then_create_with_the_same_ids_within_the_grace_is_a_move(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    text = note_text([("blk-m1", ALICE), ("blk-m2", BOB)])
    vault = make_vault({"old.md": text})
    daemon = start_daemon(vault, ACLARAI_WATCH__DELETE_GRACE_S="3")
    scored = (vault / "old.md").read_text(encoding="utf-8")
    (vault / "old.md").unlink()
    time.sleep(QUIET_S * 2)  # the delete settles on its own first
    (vault / "new.md").write_text(scored, encoding="utf-8")
    with open_store() as store:
        wait_until(
            lambda: (
                {b.file for b in store.live_blocks_with_ids(["blk-m1", "blk-m2"])} == {"new.md"}
            ),
            timeout_s=QUIET_S + 5,
        )
        time.sleep(3.5)
        blocks = store.get_blocks(["blk-m1@new.md", "blk-m2@new.md"])
        assert len(blocks) == 2 and all(b.deleted_at is None for b in blocks.values())
        assert score_problems(vault, store) == []
    assert daemon.count("block(s) marked deleted") == 0


def test_offline_edits_are_picked_up_at_start(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    vault = make_vault({"a.md": note_text([("blk-o1", ALICE)])})
    daemon = start_daemon(vault)
    assert daemon.stop() == 0
    note = vault / "a.md"
    note.write_text(note.read_text(encoding="utf-8").replace(ALICE, VAGUE), encoding="utf-8")
    (vault / "b.md").write_text(note_text([("blk-o2", ERIN)]), encoding="utf-8")
    start_daemon(vault)
    with open_store() as store:
        assert score_problems(vault, store) == []


USER_SCRIPT = r"""
import json, os, random, sys, time
vault, log_path, duration, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
notes = sorted(n for n in os.listdir(vault) if n.endswith(".md"))
sentences = ["The deploy to staging failed twice on Tuesday.", "It broke there again.",
             "The database migration took 40 minutes on Friday.", "We shipped v2.4 to production.",
             "Carol reviewed the incident report yesterday.", "The cache hit rate rose to 93%."]
counter = 0
with open(log_path, "w") as log:
    end = time.monotonic() + duration
    while time.monotonic() < end:
        name = rng.choice(notes)
        path = os.path.join(vault, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        counter += 1
        if rng.random() < 0.5:
            new_id = f"blk-u{seed}x{counter}"
            text += f"\nbob: {rng.choice(sentences)}\n<!-- aclarai:id={new_id} ver=1 -->\n"
        else:
            lines = text.split("\n")
            spoken = [i for i, line in enumerate(lines) if line.startswith(("alice:", "bob:"))]
            i = rng.choice(spoken)
            lines[i] = lines[i].split(":")[0] + ": " + rng.choice(sentences) + f" ({counter})"
            text = "\n".join(lines)
        if rng.random() < 0.5:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            tmp = os.path.join(vault, "." + name + ".swp")
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        log.write(json.dumps({"note": name, "text": text, "at": time.time()}) + "\n")
        log.flush()
        time.sleep(rng.uniform(0.1, 0.5))
"""


@pytest.mark.timeout(240)
@pytest.mark.slow
def test_a_user_editing_beside_the_daemon_loses_nothing(
    make_vault: MakeVault, start_daemon: StartDaemon, tmp_path: Path
) -> None:
    """A second process edits notes every 100-500 ms for 60 s while the daemon runs."""
    files = {
        f"n{i}.md": note_text([(f"blk-n{i}a", ALICE), (f"blk-n{i}b", BOB)], title=f"N{i}")
        for i in range(4)
    }
    vault = make_vault(files)
    daemon = start_daemon(vault)
    written_at_start = daemon.count("scores written for")
    log_path = tmp_path / "user-writes.jsonl"
    user = subprocess.run(
        [sys.executable, "-c", USER_SCRIPT, str(vault), str(log_path), "60", "7"],
        timeout=120,
        check=True,
    )
    assert user.returncode == 0
    writes = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert len(writes) >= 100
    last = {w["note"]: w["text"] for w in writes}
    with open_store() as store:
        # Every block is now left alone: all get current scores within quiet period + seconds.
        wait_until(lambda: score_problems(vault, store) == [], timeout_s=QUIET_S + 15)
    for name, text in last.items():
        assert user_bytes((vault / name).read_text(encoding="utf-8")) == user_bytes(text), name
    # The daemon wrote back while the user kept editing (in the notes' quiet moments).
    assert daemon.count("scores written for") > written_at_start + 4
    assert daemon.proc.poll() is None
    assert daemon.count("Traceback") == 0


def test_bad_input_is_logged_and_the_rest_is_served(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    vault = make_vault({"good.md": note_text([("blk-g1", ALICE)])})
    daemon = start_daemon(vault)
    (vault / "binary.md").write_bytes(b"\x00\x01\x02\xff\xfe binary \x00" * 50)
    (vault / "empty.md").write_bytes(b"")
    (vault / "flash.md").write_text(note_text([("blk-f1", BOB)]))
    (vault / "flash.md").unlink()  # deleted between the event and the read
    # Tests run as root, which reads any file whatever its mode: a FIFO and a folder named like
    # notes stand in for "permission denied" (paths that cannot be read as a note).
    os.mkfifo(vault / "pipe.md")
    (vault / "folder.md").mkdir()
    (vault / "folder.md" / "inner.md").write_text(note_text([("blk-i1", ERIN)]))
    daemon.wait_for_log("binary.md", timeout_s=QUIET_S + 10)
    daemon.wait_for_log("pipe.md is not a regular file", timeout_s=QUIET_S + 10)
    (vault / "later.md").write_text(note_text([("blk-l1", ERIN)]))
    wait_until(lambda: scores_in(vault / "later.md").get("blk-l1"), timeout_s=QUIET_S + 8)
    wait_until(
        lambda: scores_in(vault / "folder.md" / "inner.md").get("blk-i1"), timeout_s=QUIET_S + 8
    )
    assert (vault / "empty.md").read_bytes() == b""
    assert daemon.proc.poll() is None
    assert daemon.count("Traceback") == 0


def test_resync_while_the_daemon_runs_is_handed_to_it(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    vault = make_vault({"a.md": note_text([("blk-r1", ALICE)])})
    daemon = start_daemon(vault)
    results: list[subprocess.CompletedProcess[str]] = []

    def resync() -> None:
        results.append(
            subprocess.run(
                [sys.executable, "-m", "aclarai.daemon.cli", "resync", str(vault)],
                env=daemon_env(),
                capture_output=True,
                text=True,
                timeout=90,
                check=False,
            )
        )

    clients = [threading.Thread(target=resync) for _ in range(2)]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    assert [r.returncode for r in results] == [0, 0]
    assert all(f"pid {daemon.proc.pid}" in r.stdout for r in results)
    assert daemon.count("answered") == 2
    # Never two reconciles at once: every start is followed by its own end.
    marks = [line for line in daemon.lines if "reconcile (" in line]
    kinds = ["started" if "started" in line else "done" for line in marks]
    assert kinds == ["started", "done"] * (len(kinds) // 2)


def test_sigterm_exits_zero_within_ten_seconds_while_busy(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    rng = random.Random(3)
    files = {
        f"n{i:03}.md": note_text(
            [(f"blk-s{i}x{j}", rng.choice([ALICE, BOB, ERIN])) for j in range(10)]
        )
        for i in range(150)
    }
    vault = make_vault(files)
    daemon = start_daemon(vault, wait=False)
    daemon.wait_for_log("reconcile (start-up) started", timeout_s=60)
    started = time.monotonic()
    rc = daemon.stop(signal.SIGTERM, timeout_s=12)
    assert rc == 0
    assert time.monotonic() - started < 10
    assert daemon.count("SIGTERM: stopping") == 1


def test_a_clean_stop_is_no_error(make_vault: MakeVault, start_daemon: StartDaemon) -> None:
    vault = make_vault({"a.md": note_text([("blk-c1", ALICE)])})
    daemon = start_daemon(vault)
    # Long enough for the consumer to be idle and the main loop to tick on.
    time.sleep(1.5)
    assert daemon.stop(signal.SIGTERM) == 0
    assert " ERROR " not in daemon.log, daemon.log_tail()
    assert daemon.count("stopped") == 1
    status = json.loads(cli("status", str(vault), "--json"))
    assert (status["last_error"], status["running"]) == (None, False)


def test_a_second_signal_exits_at_once(make_vault: MakeVault, start_daemon: StartDaemon) -> None:
    files = {
        f"n{i:03}.md": note_text([(f"blk-q{i}x{j}", ALICE if j % 2 else ERIN) for j in range(10)])
        for i in range(300)
    }
    daemon = start_daemon(make_vault(files), wait=False)
    daemon.wait_for_log("reconcile (start-up) started", timeout_s=60)
    daemon.send(signal.SIGTERM)
    daemon.wait_for_log("SIGTERM: stopping", timeout_s=5)
    daemon.send(signal.SIGINT)
    rc = daemon.proc.wait(timeout=10)
    assert rc == 128 + signal.SIGINT, daemon.log_tail()
    assert daemon.count("second SIGINT: exiting now") == 1


def test_one_daemon_per_vault(make_vault: MakeVault, start_daemon: StartDaemon) -> None:
    vault = make_vault({"a.md": note_text([("blk-l1", ALICE)])})
    start_daemon(vault)
    second = subprocess.run(
        [sys.executable, "-m", "aclarai.daemon.cli", "watch", str(vault)],
        env=daemon_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert second.returncode == 75
    assert "another aclarai holds this vault" in second.stderr


def test_run_daemon_in_process_stops_on_its_event(make_vault: MakeVault) -> None:
    vault = make_vault({"a.md": note_text([("blk-i1", ALICE)])})
    config = load_config(env=daemon_env())
    stop = threading.Event()
    codes: list[int] = []
    runner = threading.Thread(
        target=lambda: codes.append(run_daemon(config, vault, stop_event=stop))
    )
    runner.start()
    try:
        wait_until(lambda: scores_in(vault / "a.md")["blk-i1"], timeout_s=20)
        with (vault / "a.md").open("a", encoding="utf-8") as handle:
            handle.write(f"{ERIN}\n<!-- aclarai:id=blk-i2 ver=1 -->\n")
        wait_until(lambda: scores_in(vault / "a.md").get("blk-i2"), timeout_s=QUIET_S + 5)
    finally:
        stop.set()
        runner.join(timeout=10)
    assert codes == [0]
    assert not is_held(state_dir())
