"""``aclarai status``, ``pause``/``resume``, dead letters, ``install-service`` and sd_notify, each
through the real command line beside a real daemon."""

from __future__ import annotations

import os
import shlex
import signal
import socket
from collections.abc import Callable
from pathlib import Path

from aclarai.daemon.config import load_config
from aclarai.daemon.loop.systemd import sd_notify
from aclarai.parsers import parse_note
from tests.helpers.cli import QUIET_S, DaemonProcess, cli, daemon_env, wait_until
from tests.helpers.vault import note_text, state_dir

StartDaemon = Callable[..., DaemonProcess]
MakeVault = Callable[..., Path]

ALICE = "alice: The deploy to staging failed twice on Tuesday."
ERIN = "erin: The database migration took 40 minutes on Friday."


def block_scores(path: Path, block_id: str) -> dict[str, float]:
    blocks = {b.id: b for b in parse_note(path.read_text(encoding="utf-8")).blocks}
    return dict(blocks[block_id].scores)


def append_block(path: Path, block_id: str, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"{text}\n<!-- aclarai:id={block_id} ver=1 -->\n")


def status_of(vault: Path) -> dict[str, str]:
    lines = cli("status", str(vault)).splitlines()
    return {line[:12].strip(): line[13:] for line in lines if not line.startswith("  ")}


def test_status_shows_the_daemon_its_heartbeat_and_counts(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    vault = make_vault({"a.md": note_text([("blk-s1", ALICE), ("blk-s2", ERIN)])})
    daemon = start_daemon(vault)
    status = status_of(vault)
    assert status["daemon"] == f"running ({daemon.proc.pid} daemon)"
    assert status["heartbeat"].endswith(f"(pid {daemon.proc.pid}, running)")
    assert status["queue depth"] == "0"
    assert status["blocks"].startswith("2 ")
    assert status["scored"] == "2"
    assert status["last resync"] != "never"
    assert daemon.stop() == 0
    status = status_of(vault)
    assert status["daemon"] == "not running"
    assert status["heartbeat"].endswith(f"(pid {daemon.proc.pid}, stopped)")


def test_pause_keeps_queueing_and_resume_writes(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    vault = make_vault({"a.md": note_text([("blk-p1", ALICE)])})
    daemon = start_daemon(vault)
    note = vault / "a.md"
    assert cli("pause", str(vault)).startswith("paused")
    daemon.wait_for_log("paused: no evaluation")
    append_block(note, "blk-p2", ERIN)
    daemon.wait_for_log("a.md changed", timeout_s=QUIET_S + 5)
    status = status_of(vault)
    assert status["paused"] == "yes"
    assert int(status["queue depth"]) >= 1
    assert "paused)" in status["heartbeat"]
    assert block_scores(note, "blk-p2") == {}
    assert cli("resume", str(vault)).strip() == "resumed"
    wait_until(lambda: block_scores(note, "blk-p2"), timeout_s=5)
    assert status_of(vault)["queue depth"] == "0"


def test_a_paused_marker_file_pauses_and_resume_removes_it(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    vault = make_vault({"a.md": note_text([("blk-m1", ALICE)])})
    daemon = start_daemon(vault)
    marker = state_dir() / "PAUSED"
    marker.touch()
    daemon.wait_for_log("paused: no evaluation")
    cli("resume", str(vault))
    assert not marker.exists()
    daemon.wait_for_log("resumed")


def test_a_note_that_turns_unreadable_ends_as_listed_dead_letters(
    make_vault: MakeVault, start_daemon: StartDaemon
) -> None:
    vault = make_vault({"a.md": note_text([("blk-d1", ALICE)]), "b.md": note_text([])})
    daemon = start_daemon(vault, ACLARAI_QUEUE__MAX_ATTEMPTS="1")
    note = vault / "a.md"
    cli("pause", str(vault))
    daemon.wait_for_log("paused: no evaluation")
    append_block(note, "blk-d2", ERIN)
    daemon.wait_for_log("a.md changed", timeout_s=QUIET_S + 5)
    note.write_bytes(b"\xff\xfe\x00 not text any more \x00")
    daemon.wait_for_log("a.md", after=len(daemon.lines), timeout_s=QUIET_S + 5)
    cli("resume", str(vault))
    daemon.wait_for_log("dead letter: block blk-d2")
    append_block(vault / "b.md", "blk-d3", ALICE)  # the poison note blocks nothing else
    wait_until(lambda: block_scores(vault / "b.md", "blk-d3"), timeout_s=QUIET_S + 5)
    out = cli("status", str(vault))
    assert "dead letters 1" in out
    assert "  blk-d2 in a.md: a.md:" in out


def test_install_service_prints_and_writes_the_user_unit(tmp_path: Path) -> None:
    vault = tmp_path / "my vault 100%"
    vault.mkdir()
    config_home = tmp_path / "xdg-config"
    env = daemon_env(XDG_CONFIG_HOME=str(config_home))
    printed = cli("install-service", str(vault), "--print", env=env)
    unit = config_home / "systemd" / "user" / "aclarai.service"
    assert not unit.exists()
    for line in (
        "Type=notify",
        "Restart=on-failure",
        "Nice=10",
        "IOSchedulingClass=idle",
        f"EnvironmentFile=-{config_home}/aclarai/aclarai.env",
        "WatchdogSec=60",
        "WantedBy=default.target",
    ):
        assert line in printed.splitlines()
    exec_line = next(x for x in printed.splitlines() if x.startswith("ExecStart="))
    words = [w.replace("%%", "%") for w in shlex.split(exec_line.removeprefix("ExecStart="))]
    assert words[1:] == ["-m", "aclarai.daemon.cli", "watch", str(vault)]
    assert Path(words[0]).exists()
    out = cli("install-service", str(vault), env=env)
    assert str(unit) in out
    assert unit.read_text(encoding="utf-8") == printed


def test_the_daemon_speaks_sd_notify(
    make_vault: MakeVault, start_daemon: StartDaemon, notify_socket: tuple[str, list[str]]
) -> None:
    path, received = notify_socket
    vault = make_vault({"a.md": note_text([("blk-n1", ALICE)])})
    daemon = start_daemon(vault, NOTIFY_SOCKET=path, WATCHDOG_USEC="1500000")
    wait_until(lambda: any(m.startswith("READY=1") for m in received), timeout_s=5)
    wait_until(lambda: received.count("WATCHDOG=1") >= 3, timeout_s=5)
    assert daemon.stop(signal.SIGTERM) == 0
    wait_until(lambda: any(m.startswith("STOPPING=1") for m in received), timeout_s=2)


def test_sd_notify_reaches_an_abstract_socket_and_is_silent_outside_systemd() -> None:
    name = f"aclarai-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        assert sd_notify("@" + name, "READY=1")
        assert sock.recv(64) == b"READY=1"
    assert not sd_notify(None, "READY=1")


def test_a_watchdog_meant_for_another_process_is_not_ours() -> None:
    env = {"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "2000000"}
    assert load_config(env=env).systemd_notify() == ("/run/x", 2.0)
    mine = load_config(env={**env, "WATCHDOG_PID": str(os.getpid())})
    assert mine.systemd_notify() == ("/run/x", 2.0)
    other = load_config(env={**env, "WATCHDOG_PID": str(os.getpid() + 1)})
    assert other.systemd_notify() == ("/run/x", None)
