"""The ``aclarai`` command line as the tests call it: in this process (its exit status and
output, for a test of what a command does) or as a process of its own (for a test of what only a
process shows: signals, the daemon, a fresh environment)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any


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
