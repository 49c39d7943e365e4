"""The ``aclarai`` command line as the tests call it: in this process (its exit status and
output, for a test of what a command does) or as a process of its own (for a test of what only a
process shows: signals, the daemon, a fresh environment)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.fixtures.processes import dies_with_us

LOG_LINES_SHOWN = 200
QUIET_S = 0.3
GRACE_S = 1.0
START_TIMEOUT_S = 60.0
"""Start-up imports take seconds on a loaded two-core machine."""
CLI_ARGV = (sys.executable, "-m", "aclarai.daemon.cli")
"""The ``aclarai`` command as a process of its own: this interpreter running the module."""


@contextmanager
def _as_a_process_sees_it(env: Mapping[str, str] | None, stdin: bytes) -> Iterator[list[bytes]]:
    """``env`` as the whole environment and fresh standard streams, restored after; yields the
    list that receives what was written to stdout and stderr."""
    saved_env = dict(os.environ)
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    out, err = io.BytesIO(), io.BytesIO()
    written: list[bytes] = []
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    # Left open: the logging handler a command sets up keeps writing to its stream.
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    try:
        yield written
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        written[:] = [out.getvalue(), err.getvalue()]
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        if env is not None:
            os.environ.clear()
            os.environ.update(saved_env)


def run_cli(
    *args: str, env: Mapping[str, str] | None = None, stdin: bytes | str = b"", text: bool = True
) -> subprocess.CompletedProcess[Any]:
    """``aclarai ARGS`` through :func:`aclarai.daemon.cli.main`, in this process, with ``env``
    (when given) as its whole environment and ``stdin`` as its input: what a shell would see of
    it, as :func:`subprocess.run` gives it."""
    from aclarai.daemon.cli import main

    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    with _as_a_process_sees_it(env, data) as written:
        try:
            code = main(list(args))
        except SystemExit as exc:
            # argparse's usage errors exit 2, as the installed command does.
            code = exc.code if isinstance(exc.code, int) else 1
    out, err = written
    if text:
        return subprocess.CompletedProcess(["aclarai", *args], code, out.decode(), err.decode())
    return subprocess.CompletedProcess(["aclarai", *args], code, out, err)


def cli(*args: str, env: Mapping[str, str] | None = None) -> str:
    """``aclarai ARGS`` in this process; return its stdout, fail on a non-zero exit."""
    done = run_cli(*args, env=env)
    assert done.returncode == 0, f"aclarai {' '.join(args)} exited {done.returncode}: {done.stderr}"
    return done.stdout


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
            [*CLI_ARGV, "watch", str(vault)],
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


def run_cli_process(
    *args: str, env: Mapping[str, str], timeout_s: float = 90
) -> subprocess.CompletedProcess[str]:
    """``aclarai ARGS`` as a process of its own, with ``env`` as its whole environment, run to
    its end; the caller checks its exit status (:func:`run_cli` runs it in this process)."""
    return subprocess.run(
        [*CLI_ARGV, *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
