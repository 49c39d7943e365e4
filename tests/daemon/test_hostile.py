"""Issue 15, as a hostile user would try it: each case against real files, the real ``aclarai``
command line and the real daemon (subprocesses)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aclarai.daemon.config import load_config
from aclarai.daemon.loop.resync import resync
from aclarai.daemon.vault.control import read_heartbeat
from aclarai.daemon.vault.queue import DurableQueue
from aclarai.parsers import parse_note
from tests.helpers.cli import QUIET_S, DaemonProcess, daemon_env, wait_until
from tests.helpers.vault import note_text, state_dir

StartDaemon = Callable[..., DaemonProcess]
MakeVault = Callable[..., Path]

ALICE = "alice: The deploy to staging failed twice on Tuesday."
BOB = "bob: I rolled back to v2.3 and it is stable now."
ERIN = "erin: The database migration took 40 minutes on Friday."


def aclarai(
    *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "aclarai.daemon.cli", *args],
        env=env or daemon_env(),
        input=stdin,
        capture_output=True,
        timeout=90,
        check=False,
    )


def scored(path: Path) -> bool:
    blocks = parse_note(path.read_text(encoding="utf-8")).blocks
    return bool(blocks) and all("entailed_score" in b.scores for b in blocks)


def heartbeat_age_s() -> float:
    queue = DurableQueue(state_dir() / "queue.sqlite")
    try:
        beat = read_heartbeat(queue)
    finally:
        queue.close()
    assert beat is not None
    return beat.age_s


def test_resync_with_a_symlink_loop_logs_each_link_once_and_scores_the_rest(
    make_vault: MakeVault,
) -> None:
    vault = make_vault({"good.md": note_text([("blk-g1", ALICE)])})
    os.symlink("b.md", vault / "a.md")
    os.symlink("a.md", vault / "b.md")
    done = aclarai("resync", str(vault))
    stderr = done.stderr.decode()
    assert done.returncode in (0, 1), stderr
    assert "Traceback" not in stderr
    assert [line.split("/")[-1] for line in stderr.splitlines()] == [
        "a.md: a symlink loop",
        "b.md: a symlink loop",
    ]
    assert scored(vault / "good.md")


@pytest.mark.slow
def test_symlink_loop_made_while_watching_logs_once_and_edits_elsewhere_are_scored(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    vault = make_vault({"good.md": note_text([("blk-g1", ALICE)])})
    daemon = start_daemon(vault)
    os.symlink("b.md", vault / "a.md")
    os.symlink("a.md", vault / "b.md")
    daemon.wait_for_log("b.md is a symlink loop", timeout_s=QUIET_S + 10)
    (vault / "later.md").write_text(note_text([("blk-l1", ERIN)]), encoding="utf-8")
    wait_until(lambda: scored(vault / "later.md"), timeout_s=QUIET_S + 10)
    # Long enough for a stuck loop to have logged many times and missed a heartbeat.
    time.sleep(6)
    assert daemon.count("a.md is a symlink loop") == 1
    assert daemon.count("b.md is a symlink loop") == 1
    assert daemon.count("Traceback") == 0
    assert heartbeat_age_s() < 6
    assert daemon.proc.poll() is None


def test_resync_with_an_absurd_ver_reports_it_and_scores_the_rest(make_vault: MakeVault) -> None:
    bad = "bob: it broke on Monday.\n<!-- aclarai:id=blk-big ver=99999999999999999999 -->\n"
    vault = make_vault({"good.md": note_text([("blk-g1", ALICE)]), "bad.md": bad})
    done = aclarai("resync", str(vault))
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and "bad.md:2" in lines[0] and "ver=" in lines[0]
    assert scored(vault / "good.md")
    assert (vault / "bad.md").read_text(encoding="utf-8") == bad


def test_evaluate_reads_a_file_and_stdin_the_same_way_one_error_record_per_bad_line(
    tmp_path: Path,
) -> None:
    good = b'{"id": 1, "source": "The deploy failed on Tuesday.", "claim": "The deploy failed."}\n'
    data = good + b'{"id": 2, "source": "caf\xe9 menu", "claim": "x"}\n' + good.replace(b"1", b"3")
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    from_file = aclarai("evaluate", str(path))
    from_stdin = aclarai("evaluate", "-", stdin=data)
    assert from_file.returncode == from_stdin.returncode == 0, from_file.stderr
    assert from_file.stdout == from_stdin.stdout
    records = [json.loads(line) for line in from_file.stdout.decode().splitlines()]
    assert [r["status"] for r in records] == [
        "ok",
        "error: line 2: not UTF-8: invalid byte 0xe9 at column 25",
        "ok",
    ]


def test_evaluate_refuses_lone_surrogates_and_echoes_any_id_as_valid_json() -> None:
    line = b'{"id": "\\ud800", "source": "a b \\udfff", "claim": "a"}\n'
    done = aclarai("evaluate", "-", stdin=line)
    assert done.returncode == 0
    record = json.loads(done.stdout)
    assert record["id"] == "\ud800"
    assert record["status"] == "error: line 1: field 'source' holds a lone surrogate escape"


def test_status_into_a_closed_pipe_ends_quietly_with_141(make_vault: MakeVault) -> None:
    vault = make_vault({"good.md": note_text([("blk-g1", ALICE)])})
    proc = subprocess.Popen(
        [sys.executable, "-m", "aclarai.daemon.cli", "status", str(vault)],
        env=daemon_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first write, like `| head -0`
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert stderr == b""


def test_evaluate_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    claim = {"source": "The deploy failed on Tuesday.", "claim": "The deploy failed."}
    lines = "".join(json.dumps({"id": n, **claim}) + "\n" for n in range(5000))
    (tmp_path / "in.jsonl").write_text(lines, encoding="utf-8")
    command = f"{shlex.quote(sys.executable)} -m aclarai.daemon.cli evaluate in.jsonl | head -1"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=tmp_path,
        env=daemon_env(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 141
    assert json.loads(done.stdout)["id"] == 0
    assert done.stderr == b""


def test_second_daemon_with_another_state_dir_is_refused_naming_the_first(
    make_vault: MakeVault, start_daemon: StartDaemon, tmp_path: Path
) -> None:
    vault = make_vault({"good.md": note_text([("blk-g1", ALICE)])})
    first = start_daemon(vault)
    other = daemon_env(ACLARAI_STATE_DIR=str(tmp_path / "other-state"))
    for command in (("watch", str(vault)), ("resync", str(vault))):
        done = aclarai(*command, env=other)
        stderr = done.stderr.decode()
        assert done.returncode == 75, stderr
        assert stderr.count("\n") == 1 and "another aclarai holds this vault" in stderr
        assert f"pid {first.proc.pid} (" in stderr and " watch " in stderr
        assert str(state_dir()) in stderr
    assert first.proc.poll() is None


def test_a_long_note_is_read_parsed_and_written_once_per_resync(make_vault: MakeVault) -> None:
    sentences = (ALICE, BOB, ERIN)
    blocks = [(f"blk-{i}", sentences[i % 3]) for i in range(600)]
    vault = make_vault({"long.md": note_text(blocks)})
    summary = resync(load_config(env={"ACLARAI_STATE_DIR": str(state_dir())}), vault)
    assert summary.drain.blocks_processed == 600
    assert summary.drain.files_processed == 1
    assert scored(vault / "long.md")
