"""Labelled answer events for ``aclarai validate``: HaluEval QA plus hand-written ones.

Each line is an evaluation-service request (the body of ``POST /api/v1/evaluate``) with a
``"human_annotation"`` of ``pass``, ``review`` or ``fail``:

- from HaluEval QA dev (``--data DIR``): the question with its knowledge as the context, a right
  answer annotated ``pass`` and a hallucinated one ``fail`` (HaluEval's own labels). Hallucinated
  answers are much longer than right ones, so length alone would tell them apart: the right
  answers are drawn among those of 3 to 8 words, and for each, ``--fail-per-pass`` hallucinated
  answers of the same number of words, from other rows;
- from ``benchmarks/data/answer_events_written.jsonl``: answers written by hand, ``review``
  (partly right, incomplete, hedged) and ``pass`` (right, grounded, in full sentences).

``--split tune`` or ``holdout`` keeps one half, drawn per label with ``--seed``, so that a prompt
tuned on one half is measured on the other.

    python benchmarks/answer_events.py [--data DIR] [--split all|tune|holdout] --out FILE
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from labelled_data import data_dir

WRITTEN = Path(__file__).resolve().parent / "data" / "answer_events_written.jsonl"
MIN_WORDS, MAX_WORDS = 3, 8
"""Right HaluEval answers of this many words are drawn: enough to be an answer, few enough that
hallucinated answers of the same length exist."""


def event(event_id: str, query: str, context: str, answer: str, human: str) -> dict[str, Any]:
    """One labelled request in the service's shape."""
    return {
        "event_id": event_id,
        "event_type": "agent_response",
        "agent": {"name": "halueval", "type": "qa", "version": "1"},
        "interaction": {"user_query": query, "context": context, "answer": answer},
        "human_annotation": human,
    }


def halueval_events(
    folder: Path, passes: int, fail_per_pass: int, rng: random.Random
) -> list[dict[str, Any]]:
    """Right answers (``pass``) and as many times ``fail_per_pass`` hallucinated ones (``fail``)
    of the same lengths in words, no row giving both."""
    with (folder / "halueval_qa_dev.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    right = [
        n
        for n, row in enumerate(rows)
        if MIN_WORDS <= len(row["right_answer"].split()) <= MAX_WORDS
    ]
    chosen = rng.sample(right, min(passes, len(right)))
    by_length: defaultdict[int, list[int]] = defaultdict(list)
    for n, row in enumerate(rows):
        if n not in chosen:
            by_length[len(row["hallucinated_answer"].split())].append(n)
    events = []
    used: set[int] = set()
    for n in chosen:
        row = rows[n]
        events.append(
            event(
                f"halueval-{n}-pass", row["question"], row["knowledge"], row["right_answer"], "pass"
            )
        )
        pool = [m for m in by_length[len(row["right_answer"].split())] if m not in used]
        for m in rng.sample(pool, min(fail_per_pass, len(pool))):
            used.add(m)
            wrong = rows[m]
            events.append(
                event(
                    f"halueval-{m}-fail",
                    wrong["question"],
                    wrong["knowledge"],
                    wrong["hallucinated_answer"],
                    "fail",
                )
            )
    return events


def split(events: list[dict[str, Any]], part: str, seed: int) -> list[dict[str, Any]]:
    """Half of each label's events (``tune``), the other half (``holdout``), or all."""
    if part == "all":
        return events
    rng = random.Random(seed)
    tune: set[str] = set()
    for label in ("pass", "review", "fail"):
        ids = [e["event_id"] for e in events if e["human_annotation"] == label]
        tune.update(rng.sample(ids, len(ids) // 2))
    return [e for e in events if (e["event_id"] in tune) == (part == "tune")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="folder with halueval_qa_dev.jsonl")
    parser.add_argument("--written", type=Path, default=WRITTEN, help="hand-written events")
    parser.add_argument("--passes", type=int, default=7, help="right HaluEval answers")
    parser.add_argument("--fail-per-pass", type=int, default=2, help="hallucinated per right")
    parser.add_argument("--split", choices=("all", "tune", "holdout"), default="all")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--out", type=Path, required=True, help="write the events to FILE")
    args = parser.parse_args()
    folder = data_dir(args.data)
    if folder is None:
        return 0
    rng = random.Random(args.seed)
    events = halueval_events(folder, args.passes, args.fail_per_pass, rng)
    with args.written.open(encoding="utf-8") as handle:
        events += [json.loads(line) for line in handle if line.strip()]
    events = split(events, args.split, args.seed)
    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events)
    args.out.write_text(text, encoding="utf-8")
    print(f"answer events ({args.split}, seed {args.seed}): {len(events)} written to {args.out}")
    for label in ("pass", "review", "fail"):
        words = [
            len(e["interaction"]["answer"].split())
            for e in events
            if e["human_annotation"] == label
        ]
        mean = sum(words) / max(1, len(words))
        print(f"{label:<8}{len(words):>4}  (answers of {mean:.1f} words on average)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
