"""Fixtures for the daemon tests: vault factories, a real ``aclarai watch`` subprocess, and
checks that read the vault and the graph file the way a user would."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from aclarai.daemon.config import Config, load_config
from aclarai.graph import block_key, block_scores
from aclarai.graph.sqlite import SqliteStore
from aclarai.parsers import CommentKind, format_id_comment, parse_note, scan_line
from tests.fixtures.processes import dies_with_us

LOG_LINES_SHOWN = 200
QUIET_S = 0.3
GRACE_S = 1.0
START_TIMEOUT_S = 60.0
"""Start-up imports take seconds on a loaded two-core machine."""


def note_text(blocks: Sequence[tuple[str, str]], *, title: str = "Standup") -> str:
    """A Tier 1 note: one ``speaker: text`` utterance per block, id comment and anchor after."""
    header = f"<!-- aclarai:title={title} -->\n\n"
    body = "".join(f"{text}\n<!-- aclarai:id={bid} ver=1 -->\n^{bid}\n\n" for bid, text in blocks)
    return header + body


def user_bytes(text: str) -> str:
    """A note without what the daemon owns: score comment lines dropped, id comments written
    with version 0 (the daemon bumps ``ver``)."""
    kept = []
    for line in text.splitlines(keepends=True):
        comments = scan_line(line).comments
        if (
            len(comments) == 1
            and comments[0].kind is CommentKind.SCORE
            and (line[: comments[0].start] + line[comments[0].end :]).strip() == ""
        ):
            continue
        for c in reversed([c for c in comments if c.kind is CommentKind.ID]):
            line = line[: c.start] + format_id_comment(str(c.value), 0) + line[c.end :]
        kept.append(line)
    return "".join(kept)


def wait_until(
    predicate: Callable[[], object], *, timeout_s: float, interval_s: float = 0.05
) -> float:
    """Poll until ``predicate()`` is truthy; return the seconds it took, fail on timeout."""
    started = time.monotonic()
    while True:
        if predicate():
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"condition not met within {timeout_s} s")
        time.sleep(interval_s)


SAMPLE_VAULT = Path(__file__).resolve().parents[2] / "sample_vault"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A copy of the project's ``sample_vault/`` (a module that needs another vault says so)."""
    target = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, target)
    return target


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


def daemon_env(**overrides: str) -> dict[str, str]:
    """The test's environment (state dir under tmp_path) with a short quiet period."""
    env = dict(os.environ)
    env.update(
        {
            "ACLARAI_WATCH__QUIET_PERIOD_S": str(QUIET_S),
            "ACLARAI_WATCH__DELETE_GRACE_S": str(GRACE_S),
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(overrides)
    return env


class DaemonProcess:
    """``python -m aclarai.daemon.cli watch VAULT`` with its log lines collected as they come."""

    def __init__(self, vault: Path, env: Mapping[str, str]) -> None:
        self.vault = vault
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "aclarai.daemon.cli", "watch", str(vault)],
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=dies_with_us(),
        )
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()

    @property
    def log(self) -> str:
        with self._cond:
            return "\n".join(self.lines)

    def count(self, text: str) -> int:
        with self._cond:
            return sum(text in line for line in self.lines)

    def wait_for_log(self, text: str, *, timeout_s: float = 20.0, after: int = 0) -> int:
        """Index of the first log line from ``after`` on containing ``text``."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                for i in range(after, len(self.lines)):
                    if text in self.lines[i]:
                        return i
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"no log line with {text!r}; log:\n{self.log_tail()}")
                self._cond.wait(min(left, 0.2))

    def log_tail(self, n: int = 60) -> str:
        return "\n".join(self.lines[-n:])

    def send(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM, *, timeout_s: float = 15.0) -> int:
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=timeout_s)
        self._reader.join(timeout=5)
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(timeout=5)


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


def state_dir() -> Path:
    return Path(os.environ["ACLARAI_STATE_DIR"])


def open_store() -> SqliteStore:
    return SqliteStore(state_dir() / "graph.sqlite")


def score_problems(vault: Path, store: SqliteStore) -> list[str]:
    """Why the vault's scores are not current (empty when every block is in step).

    Current: the store holds each block with the note's hash, every claim of the block was
    evaluated against that hash, and the note's score comments say the block's values.
    """
    problems: list[str] = []
    for path in sorted(vault.rglob("*.md")):
        rel = path.relative_to(vault).as_posix()
        if any(part.startswith(".") for part in rel.split("/")) or not path.is_file():
            continue
        try:
            blocks = parse_note(path.read_text(encoding="utf-8")).blocks
        except (UnicodeDecodeError, OSError):
            continue
        keys = {b.id: block_key(rel, b.id) for b in blocks}
        stored = store.get_blocks(keys.values())
        claims = store.claims_of_blocks(keys.values())
        for block in blocks:
            old = stored.get(keys[block.id])
            if old is None or old.hash != block.hash or old.file != rel or old.deleted_at:
                problems.append(f"{rel}:{block.id}: store not in step ({old})")
                continue
            stale = [
                c.id
                for c in claims[keys[block.id]]
                if c.score is None or c.score.evaluated_hash != block.hash
            ]
            if stale:
                problems.append(f"{rel}:{block.id}: claims not evaluated for this text: {stale}")
                continue
            want = {
                k: round(v, 2)
                for k, v in block_scores(claims[keys[block.id]]).items()
                if v is not None
            }
            have = {k: round(v, 2) for k, v in block.scores.items()}
            if want != have:
                problems.append(f"{rel}:{block.id}: note says {have}, graph says {want}")
    return problems


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
