"""How often ``aclarai check`` agrees with labelled answers.

    python benchmarks/check_agreement.py [--split tune] [--kepano PATH] [--limit N]
        [--backend llm [--cache .venv-llm] [--threads 2]]

Reads ``benchmarks/retrieval/check_answers.jsonl`` (see its FORMAT.md): answers written for the
retrieval questions and labelled ``consistent`` (the note backs them), ``inconsistent`` (the note
contradicts them: a wrong number, name, date, step) or ``unanswerable`` (the vault has nothing on
the question). Each split's vault is copied, adopted and resynced as in ``retrieval.py``; each
answer is checked in process with the offline judges, or with ``--backend llm`` by the judges of
the real local model of ``make llm-smoke`` (Qwen2.5-Coder-1.5B on llama.cpp, installed into
``--cache`` the first time); the vault is graded offline either way.

Per split and label, the verdicts (pass / review / fail / no_evidence), and agreement:
consistent answers that pass, inconsistent ones that do not, unanswerable ones said to have no
evidence. The heldout and kepano splits are held out: report totals only, do not tune on them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from retrieval import KEPANO, QUESTIONS, graded_copy, vault_path

VERDICTS = ("pass", "review", "fail", "no_evidence")
AGREES = {
    "consistent": {"pass"},
    "inconsistent": {"review", "fail", "no_evidence"},
    "unanswerable": {"no_evidence"},
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", action="append", help="tune, heldout, kepano (default: all)")
    parser.add_argument("--kepano", type=Path, default=KEPANO)
    parser.add_argument("--limit", type=int, help="at most N answers a split")
    parser.add_argument("--backend", choices=["offline", "llm"], default="offline")
    parser.add_argument("--cache", type=Path, help="where the local model is (llm_server.py)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with ExitStack() as stack:
        judges: dict[str, str] = {}
        if args.backend == "llm":
            import llm_server

            installed = llm_server.install(args.cache or llm_server.DEFAULT_CACHE)
            api_base = stack.enter_context(
                llm_server.serving(installed.binary, installed.model, threads=args.threads)
            )
            judges = {
                "model.backend": "llm",
                "model.llm.api_base": api_base,
                "model.claimify.default": llm_server.MODEL_NAME,
            }
            os.environ.setdefault("OPENAI_API_KEY", "local")
        return run(args, judges)


def run(args: argparse.Namespace, judges: dict[str, str]) -> int:
    rows = [json.loads(line) for line in (QUESTIONS / "check_answers.jsonl").open()]
    splits = args.split or list(dict.fromkeys(r["split"] for r in rows))
    backend = judges.get("model.backend", "offline")
    print(
        f"check agreement: {len(rows)} labelled answers, splits {', '.join(splits)}, "
        f"{backend} judges"
    )

    from aclarai.daemon.config import load_config
    from aclarai.daemon.search.session import VaultSearch
    from aclarai.daemon.service.check import check_answer
    from aclarai.daemon.service.core import build_service_core

    for split in splits:
        chosen = [r for r in rows if r["split"] == split][: args.limit]
        if not chosen:
            continue
        verdicts: dict[str, Counter[str]] = {label: Counter() for label in AGREES}
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="aclarai-check-") as tmp:
            vault, env = graded_copy(vault_path(chosen[0]["vault"], args.kepano), Path(tmp))
            os.environ["ACLARAI_STATE_DIR"] = env["ACLARAI_STATE_DIR"]
            config = load_config(None)
            core = build_service_core(load_config(None, overrides=judges))
            try:
                with VaultSearch(config, vault) as search:
                    for row in chosen:
                        result = check_answer(search, core, row["question"], row["answer"])
                        verdicts[row["label"]][result.verdict] += 1
            finally:
                core.close()
        print(f"\n{split}: verdicts by label, and agreement")
        print("| label | " + " | ".join(VERDICTS) + " | agrees |")
        print("|---|" + "---|" * (len(VERDICTS) + 1))
        agreed = total = 0
        for label, counts in verdicts.items():
            n = sum(counts.values())
            if not n:
                continue
            ok = sum(counts[v] for v in AGREES[label])
            agreed, total = agreed + ok, total + n
            cells = " | ".join(str(counts[v]) for v in VERDICTS)
            print(f"| {label} | {cells} | {ok}/{n} |")
        print(
            f"{split}: agreement {agreed}/{total} ({agreed / total:.0%}), "
            f"{time.perf_counter() - started:.0f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
