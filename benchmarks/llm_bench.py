"""``make llm-bench``: our LLM evaluator against a one-line prompt, side by side, on one model.

For each labelled set (TRUE's ``begin``, ``q2`` and ``paws`` by default) it draws ``--n`` pairs,
half supported and half not, with a fixed seed, sorted by source, and scores them twice, each
time on a freshly started llama.cpp server (see ``llm_server.py``) so that neither method profits
from the prompt cache the other left:

1. **baseline**, built in: one call per pair with the one-line prompt of :data:`SYSTEM`, a
   one-field JSON schema, temperature 0; the score is the number in the reply (clamped to 0..1),
   and a reply that does not parse is a failure;
2. **ours**: ``aclarai validate --backend llm --json`` on the same pairs, in a fresh state folder,
   with a config that sets nothing but ``model.llm.api_base`` and the model's name: what a user
   with a local model sets.

It prints, for each set and method, the pairs, AUROC (failed pairs left out, as ``validate``
does), failures, seconds, calls, prompt tokens (and how many of them the server's prompt cache
answered), completion tokens, and ours' seconds over the baseline's. For ours it also prints
ours' AUROC minus the baseline's on the pairs both scored, with a 95% paired bootstrap interval:
an interval that contains 0 is a tie. It spans about 0.13 at 100 pairs and 0.09 at the
default 200 (about 25 minutes for the three sets on 2 cores).

    python benchmarks/llm_bench.py [--data DIR] [--sets begin,q2,paws] [--n 200] [--json FILE]
    python benchmarks/llm_bench.py --api-base http://127.0.0.1:8080/v1 [--model NAME] ...

``--api-base`` runs both against a server that is already serving (then nothing is restarted).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path

from labelled_data import Pair, data_dir, load_true
from llm_server import DEFAULT_CACHE, MODEL_NAME, install, serving

from aclarai.agents import claim_agreement

DEFAULT_SETS = ("begin", "q2", "paws")
SEED = 23
SYSTEM = 'You judge whether a source text entails a claim. Answer with JSON {"score": s}'
SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}},
    "required": ["score"],
}
MAX_TOKENS = 64
CALL_TIMEOUT_S = 600.0
BOOTSTRAP_ROUNDS = 2000
ROW = "{:<10} {:<9} {:>5} {:>6} {:>8} {:>8} {:>6} {:>10} {:>8} {:>10} {:>7} {:>22}"


@dataclass
class Figures:
    """One method on one set."""

    set: str
    method: str
    pairs: int
    auroc: float | None
    failures: int
    seconds: float
    calls: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    seconds_vs_baseline: float | None = None
    """Ours' seconds over the baseline's on the same set (ours only)."""
    auroc_vs_baseline: tuple[float, float, float] | None = None
    """Ours' AUROC minus the baseline's on the pairs both scored, and its 95% bootstrap interval
    (ours only)."""
    scores: list[float | None] | None = None
    """Each pair's score (``None``: failed); not printed."""


def sample_pairs(pairs: Sequence[Pair], n: int, seed: int = SEED) -> list[Pair]:
    """``n`` pairs, half labelled ``"1"`` and half ``"0"`` (as many as the set has), drawn with
    ``seed`` and sorted by source, so that pairs on one source follow each other."""
    rng = random.Random(seed)
    positives = [p for p in pairs if p.label == "1"]
    negatives = [p for p in pairs if p.label == "0"]
    drawn = rng.sample(positives, min(n // 2, len(positives)))
    drawn += rng.sample(negatives, min(n - n // 2, len(negatives)))
    return sorted(drawn, key=lambda p: (p.source, p.claim))


def parse_score(content: str) -> float | None:
    """The baseline's score: the reply's ``score``, clamped to 0..1; ``None`` if there is none."""
    try:
        reply = json.loads(content)
    except json.JSONDecodeError:
        return None
    score = reply.get("score") if isinstance(reply, dict) else None
    if isinstance(score, bool) or not isinstance(score, int | float):
        return None
    return min(max(float(score), 0.0), 1.0)


def paired_difference(
    labels: Sequence[bool],
    ours: Sequence[float | None],
    base: Sequence[float | None],
    rounds: int = BOOTSTRAP_ROUNDS,
    seed: int = SEED,
) -> tuple[float, float, float] | None:
    """``AUROC(ours) - AUROC(base)`` on the pairs both scored, and the 2.5th and 97.5th
    percentiles of that difference over ``rounds`` resamples of those pairs (a resample with one
    label only is drawn again); ``None`` where the pairs hold one label only."""
    from sklearn.metrics import roc_auc_score

    kept = [
        (label, a, b)
        for label, a, b in zip(labels, ours, base, strict=True)
        if a is not None and b is not None
    ]
    if len({label for label, _, _ in kept}) < 2:
        return None

    def difference(rows: Sequence[tuple[bool, float, float]]) -> float:
        truth = [label for label, _, _ in rows]
        return float(
            roc_auc_score(truth, [a for _, a, _ in rows])
            - roc_auc_score(truth, [b for _, _, b in rows])
        )

    rng = random.Random(seed)
    spread: list[float] = []
    while len(spread) < rounds:
        drawn = [kept[rng.randrange(len(kept))] for _ in kept]
        if len({label for label, _, _ in drawn}) == 2:
            spread.append(difference(drawn))
    spread.sort()
    return difference(kept), spread[int(0.025 * rounds)], spread[int(0.975 * rounds) - 1]


def cached_tokens(body: dict[str, object]) -> int:
    """Prompt tokens the server's cache answered: OpenAI's ``prompt_tokens_details``, else
    llama.cpp's ``timings.cache_n``; 0 where the server says neither."""
    usage = body.get("usage")
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
        return int(details["cached_tokens"])
    timings = body.get("timings")
    if isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
        return int(timings["cache_n"])
    return 0


def ask_baseline(api_base: str, model: str, pair: Pair) -> tuple[float | None, dict[str, object]]:
    """One baseline call: the score (``None``: failed) and the server's reply body."""
    request = {
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Source: {pair.source}\n\nClaim: {pair.claim}"},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "score", "schema": SCORE_SCHEMA},
        },
        "temperature": 0,
        "max_tokens": MAX_TOKENS,
    }
    posted = urllib.request.Request(
        f"{api_base.rstrip('/')}/chat/completions",
        json.dumps(request).encode(),
        {"Content-Type": "application/json", "Authorization": "Bearer local"},
    )
    try:
        with urllib.request.urlopen(posted, timeout=CALL_TIMEOUT_S) as response:
            body = json.loads(response.read())
    except (OSError, json.JSONDecodeError) as exc:
        # A refused prompt (over the context size, say) is a failed pair, as it is for ours.
        print(f"  baseline call failed: {exc}", file=sys.stderr)
        return None, {}
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None, body
    return parse_score(content or ""), body


def run_baseline(name: str, api_base: str, model: str, pairs: Sequence[Pair]) -> Figures:
    """The one-line prompt on every pair, one call each."""
    started = time.monotonic()
    scores: list[float | None] = []
    usage = {"prompt_tokens": 0, "cached_tokens": 0, "completion_tokens": 0}
    for pair in pairs:
        score, body = ask_baseline(api_base, model, pair)
        scores.append(score)
        reported = body.get("usage")
        if isinstance(reported, dict):
            usage["prompt_tokens"] += int(reported.get("prompt_tokens") or 0)
            usage["completion_tokens"] += int(reported.get("completion_tokens") or 0)
        usage["cached_tokens"] += cached_tokens(body)
    seconds = time.monotonic() - started
    agreement = claim_agreement([p.label == "1" for p in pairs], scores, 0.5)
    return Figures(
        name, "baseline", len(pairs), agreement.auroc, agreement.failed, seconds, len(pairs),
        **usage, scores=scores,
    )  # fmt: skip


def run_ours(name: str, api_base: str, model: str, pairs: Sequence[Pair], work: Path) -> Figures:
    """``aclarai validate --backend llm`` on the pairs, configured as a user would."""
    work.mkdir(parents=True)
    data = work / "pairs.jsonl"
    data.write_text(
        "".join(
            json.dumps({"source": p.source, "claim": p.claim, "label": p.label}) + "\n"
            for p in pairs
        ),
        encoding="utf-8",
    )
    config = work / "config" / "aclarai" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "model:\n"
        f"  llm:\n    api_base: {json.dumps(api_base)}\n"
        f"  claimify:\n    default: {json.dumps(model)}\n",
        encoding="utf-8",
    )
    # Only what a user sets: none of the caller's ACLARAI_* settings leak into the run.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACLARAI_")}
    env |= {"ACLARAI_STATE_DIR": str(work / "state"), "XDG_CONFIG_HOME": str(work / "config")}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "aclarai.daemon.cli", "validate", "--backend", "llm", "--json",
         str(data)],
        env=env,
        capture_output=True,
        text=True,
    )  # fmt: skip
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"aclarai validate exited {done.returncode}:\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout)
    claims, usage = report["claims"], report["usage"]
    return Figures(
        name,
        "ours",
        claims["n"],
        claims["auroc"],
        claims["failed"],
        seconds,
        usage["calls"],
        usage["prompt_tokens"],
        usage.get("cached_tokens", 0),
        usage["completion_tokens"],
        scores=report["claim_scores"],
    )


def print_table(rows: Sequence[Figures]) -> None:
    print(ROW.format("set", "method", "pairs", "AUROC", "failures", "seconds", "calls",
                     "prompt tok", "cached", "completion", "ours/bl",
                     "AUROC - bl (95% CI)"))  # fmt: skip
    for r in rows:
        print(
            ROW.format(
                r.set,
                r.method,
                r.pairs,
                "-" if r.auroc is None else f"{r.auroc:.3f}",
                r.failures,
                f"{r.seconds:.1f}",
                r.calls,
                f"{r.prompt_tokens:,}",
                f"{r.cached_tokens:,}",
                f"{r.completion_tokens:,}",
                "" if r.seconds_vs_baseline is None else f"{r.seconds_vs_baseline:.2f}x",
                ""
                if r.auroc_vs_baseline is None
                else "{:+.3f} ({:+.3f}, {:+.3f})".format(*r.auroc_vs_baseline),
            )
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the labelled sets (default ../shared/data)")
    parser.add_argument("--sets", default=",".join(DEFAULT_SETS), help="TRUE sets, comma-separated")
    parser.add_argument("--n", type=int, default=200, help="pairs per set, half of each label")
    parser.add_argument("--api-base", help="an OpenAI-compatible endpoint already serving")
    parser.add_argument("--model", help=f"the model's name (default {MODEL_NAME})")
    parser.add_argument("--threads", type=int, default=2, help="llama-server -t")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="server and model")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    args = parser.parse_args(argv)
    folder = data_dir(args.data)
    if folder is None:
        return 1
    sets = [name for name in args.sets.split(",") if name]
    model = args.model or MODEL_NAME
    print(f"llm bench: {', '.join(sets)}, {args.n} pairs each, model {model}")
    if args.api_base:
        restarted = None
    else:
        installed = install(args.cache)
        restarted = (installed.binary, installed.model)
    work = Path(tempfile.mkdtemp(prefix="aclarai-llm-bench-"))

    def server() -> AbstractContextManager[str]:
        if restarted is None:
            return nullcontext(args.api_base)
        return serving(*restarted, threads=args.threads, log=work / "server.log")

    rows = []
    for name in sets:
        pairs = sample_pairs(load_true(folder, name), args.n)
        with server() as api_base:
            base = run_baseline(name, api_base, model, pairs)
        with server() as api_base:
            ours = run_ours(name, api_base, model, pairs, work / name)
        ours.seconds_vs_baseline = ours.seconds / base.seconds if base.seconds else None
        if ours.scores is not None and base.scores is not None:
            labels = [p.label == "1" for p in pairs]
            ours.auroc_vs_baseline = paired_difference(labels, ours.scores, base.scores)
        rows += [base, ours]
        print(f"  {name}: done", file=sys.stderr)
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
