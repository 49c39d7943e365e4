"""Fixtures for the daemon tests: vault factories, a real ``aclarai watch`` subprocess, and
checks that read the vault and the graph file the way a user would."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from aclarai.daemon.config import Config, load_config
from tests.helpers.cli import LOG_LINES_SHOWN, START_TIMEOUT_S, DaemonProcess, daemon_env
from tests.helpers.vault import SAMPLE_VAULT


@pytest.fixture
def vault(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    make_vault: Callable[[Mapping[str, str | bytes]], Path],
) -> Path:
    """A fresh vault: a copy of the project's ``sample_vault/``, or what the test or its module
    asks for with ``pytest.mark.vault(base=FOLDER, files={RELATIVE_PATH: TEXT})``: a copy of
    ``base`` (an empty folder for ``None``) with ``files`` written into it."""
    mark = request.node.get_closest_marker("vault")
    base: Path | None = mark.kwargs.get("base", SAMPLE_VAULT) if mark else SAMPLE_VAULT
    files: Mapping[str, str | bytes] = mark.kwargs.get("files", {}) if mark else {}
    target = tmp_path / "vault"
    if base is not None:
        shutil.copytree(base, target)
    return make_vault(files)


@pytest.fixture
def config(tmp_path: Path) -> Config:
    """The embedded defaults, with the test's own state folder."""
    return load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state")})


@pytest.fixture
def make_vault(tmp_path: Path) -> Callable[[Mapping[str, str | bytes]], Path]:
    """``make_vault({"a.md": text, ...})`` writes the files under a fresh vault folder."""

    def make(files: Mapping[str, str | bytes], name: str = "vault") -> Path:
        root = tmp_path / name
        root.mkdir(exist_ok=True)
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        return root

    return make


@pytest.fixture
def start_daemon() -> Iterator[Callable[..., DaemonProcess]]:
    """``start_daemon(vault, **env)``: a running daemon whose start-up reconcile is done."""
    started: list[DaemonProcess] = []

    def start(vault: Path, *, wait: bool = True, **env: str) -> DaemonProcess:
        daemon = DaemonProcess(vault, daemon_env(**env))
        started.append(daemon)
        if wait:
            daemon.wait_for_log("reconcile (start-up) done", timeout_s=START_TIMEOUT_S)
        return daemon

    yield start
    for daemon in started:
        daemon.kill()
        # Captured, so shown only when the test failed: what the daemon did says why it waited.
        print(f"--- log of the daemon on {daemon.vault} (last {LOG_LINES_SHOWN} lines) ---")
        print("\n".join(daemon.log.splitlines()[-LOG_LINES_SHOWN:]))


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """A datagram socket standing in for systemd's, collecting what it receives."""
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(0.2)
    received: list[str] = []
    stop = threading.Event()

    def receive() -> None:
        while not stop.is_set():
            try:
                received.append(sock.recv(4096).decode())
            except TimeoutError:
                continue

    thread = threading.Thread(target=receive, daemon=True)
    thread.start()
    yield path, received
    stop.set()
    thread.join()
    sock.close()
