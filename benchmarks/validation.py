"""``aclarai validate`` on human-annotated public data: the report benchmarks/README.md quotes.

Builds the two kinds of labelled lines from the public sets in the data folder and runs the
configured evaluator (offline by default) through ``aclarai validate``'s own code:

- answer events from HaluEval QA: each question with its knowledge as the context, the right
  answer annotated ``pass`` and the hallucinated one ``fail`` (the annotation is HaluEval's);
- claim pairs from the six TRUE sets (labels 1/0) and WiCE dev (supported / partially / not
  supported).

    python benchmarks/validation.py [--data DIR] [--limit N] [--report FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from labelled_data import data_dir, load_true, true_sets

from aclarai.daemon.config import load_config
from aclarai.daemon.service.core import build_service_core
from aclarai.daemon.service.validate import format_report, validate


def halueval_events(folder: Path, limit: int | None) -> list[bytes]:
    lines: list[bytes] = []
    with (folder / "halueval_qa_dev.jsonl").open(encoding="utf-8") as handle:
        for number, raw in enumerate(handle):
            if limit is not None and number >= limit:
                break
            row = json.loads(raw)
            for kind, human in (("right_answer", "pass"), ("hallucinated_answer", "fail")):
                event = {
                    "event_id": f"halueval-{number}-{human}",
                    "event_type": "agent_response",
                    "agent": {"name": "halueval", "type": "qa", "version": "1"},
                    "interaction": {
                        "user_query": row["question"],
                        "context": row["knowledge"],
                        "answer": row[kind],
                    },
                    "human_annotation": human,
                }
                lines.append(json.dumps(event).encode())
    return lines


def claim_pairs(folder: Path, limit: int | None) -> dict[str, list[bytes]]:
    sets: dict[str, list[bytes]] = {}
    for name in true_sets(folder):
        pairs = load_true(folder, name)[:limit]
        sets[name] = [
            json.dumps({"source": p.source, "claim": p.claim, "label": p.label == "1"}).encode()
            for p in pairs
        ]
    wice: list[bytes] = []
    with (folder / "wice" / "oracle_claim_dev.jsonl").open(encoding="utf-8") as handle:
        for raw in list(handle)[:limit]:
            row = json.loads(raw)
            record = {"source": " ".join(row["evidence"]), "claim": row["claim"]}
            wice.append(json.dumps({**record, "label": row["label"]}).encode())
    sets["wice"] = wice
    return sets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="folder with true/, wice/, halueval_qa_dev.jsonl")
    parser.add_argument("--limit", type=int, help="at most N rows of each set")
    parser.add_argument("--report", type=Path, help="write the JSON reports to FILE")
    args = parser.parse_args()
    folder = data_dir(args.data)
    if folder is None:
        return 0
    config = load_config()
    core = build_service_core(config)
    reports = {}
    try:
        started = time.monotonic()
        report = validate(
            halueval_events(folder, args.limit),
            core,
            claim_threshold=config.threshold.claim_quality,
            workers=4,
        )
        print(f"== HaluEval QA answer events ({time.monotonic() - started:.1f} s)")
        print(format_report(report))
        reports["halueval"] = report.as_dict()
        for name, lines in claim_pairs(folder, args.limit).items():
            started = time.monotonic()
            report = validate(lines, core, claim_threshold=config.threshold.claim_quality)
            print(f"\n== {name} claim pairs ({time.monotonic() - started:.1f} s)")
            print(format_report(report))
            reports[name] = report.as_dict()
    finally:
        core.close()
    if args.report:
        args.report.write_text(json.dumps(reports, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
