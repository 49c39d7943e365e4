"""Retrieval quality of ``aclarai search`` on labelled questions, against plain word overlap.

    python benchmarks/retrieval.py [FILE ...] [--kepano PATH] [--ranking words=0.55,vectors=0.45]
        [--show N] [--json PATH]

FILE: question files of benchmarks/retrieval/ (default: tune.jsonl; see its FORMAT.md). Each
question's vault is copied to a temporary folder, adopted and resynced as a user would (offline
scorer), then every question is searched in process, warm, as the servers serve it.

Per file and question kind, for each ranker, the share of questions whose answer is in the top 5
by note (``note@5``) and by block (``block@5``), and the mean reciprocal rank of the answering
block (``MRR``):

- ``overlap``: the baseline, plain IDF-weighted word overlap on the block text (no titles, no
  scores, no vectors);
- ``words``: the index alone, no vectors (BM25 finds the candidates; the share of the
  question's words each holds, titles, headings, claims and nearby text included, ranks them);
- ``vectors``: the block vectors alone;
- ``hybrid``: both, without quality;
- ``search``: what ``aclarai search`` does (hybrid, quality tipping the order).

And what the quality filter does: with ``--min-quality 0.5``, block@5 and the mean quality of the
top 5 hits' claims, against no filter. ``none`` questions (the vault does not answer them) give
the best hit's relevance, which ``search.relevant_above`` must stay above for answered questions
and below for these.

Held-out files (heldout.jsonl, kepano.jsonl): print totals only, and do not tune on them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "benchmarks" / "retrieval"
KEPANO = ROOT.parent / "shared" / "data" / "vaults" / "kepano-obsidian"
TOP = 5
_WORD = re.compile(r"\w+")


@dataclass
class Question:
    id: str
    vault: str
    kind: str
    question: str
    answers: list[dict[str, str]]


@dataclass
class Tally:
    n: int = 0
    note: int = 0
    block: int = 0
    in_blocks: int = 0
    """Questions whose answer is a block (a callout or table is not): block@5 counts these."""
    rr: float = 0.0
    top_scores: list[float] = field(default_factory=list)

    def add(
        self, note_rank: int | None, block_rank: int | None, top: float, in_blocks: bool = True
    ) -> None:
        self.n += 1
        self.in_blocks += in_blocks
        self.note += note_rank is not None and note_rank < TOP
        self.block += block_rank is not None and block_rank < TOP
        self.rr += 1.0 / (block_rank + 1) if block_rank is not None else 0.0
        self.top_scores.append(top)

    def row(self) -> str:
        if not self.n:
            return "–"
        blocks = max(self.in_blocks, 1)
        return f"{self.note}/{self.n} {self.block}/{self.in_blocks} {self.rr / blocks:.2f}"


def load(path: Path) -> list[Question]:
    return [Question(**json.loads(line)) for line in path.read_text().splitlines() if line]


def vault_path(name: str, kepano: Path) -> Path:
    return kepano if name == "kepano-obsidian" else ROOT / name


def graded_copy(source: Path, work: Path) -> tuple[Path, dict[str, str]]:
    """The vault copied, adopted and resynced; its environment for in-process search."""
    vault = work / "vault"
    shutil.copytree(source, vault, ignore=shutil.ignore_patterns(".obsidian", ".git"))
    env = {**os.environ, "ACLARAI_STATE_DIR": str(work / "state")}
    cli = [sys.executable, "-m", "aclarai.daemon.cli"]
    for args in (["adopt", str(vault)], ["resync", str(vault)]):
        done = subprocess.run([*cli, *args], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed: {done.stderr.strip()}")
    return vault, env


def answer_blocks(store: object, question: Question) -> set[tuple[str, str]]:
    """(file, block id) of the blocks holding each answer's quote."""
    found = set()
    for answer in question.answers:
        for block in store.blocks_of_file(answer["file"]):  # type: ignore[attr-defined]
            if answer["quote"] in block.text:
                found.add((block.file, block.block_id))
    return found


class Overlap:
    """The baseline: IDF-weighted word overlap of question and block text."""

    def __init__(self, blocks: Sequence[tuple[str, str, str]]) -> None:
        self.blocks = [(f, b, set(_WORD.findall(t.lower()))) for f, b, t in blocks]
        df = Counter(w for _, _, words in self.blocks for w in words)
        n = len(self.blocks)
        self.idf = {w: math.log((n + 1) / (c + 0.5)) for w, c in df.items()}

    def rank(self, query: str) -> list[tuple[str, str]]:
        words = set(_WORD.findall(query.lower()))
        scored = [(sum(self.idf.get(w, 0.0) for w in words & bw), f, b) for f, b, bw in self.blocks]
        scored = [s for s in scored if s[0] > 0]
        scored.sort(key=lambda s: -s[0])
        return [(f, b) for _, f, b in scored[: TOP * 4]]


def ranks(
    ranked: Sequence[tuple[str, str]], files: set[str], blocks: set[tuple[str, str]]
) -> tuple[int | None, int | None]:
    note = next((i for i, (f, _) in enumerate(ranked) if f in files), None)
    block = next((i for i, hit in enumerate(ranked) if hit in blocks), None)
    return note, block


def run_file(
    path: Path, kepano: Path, ranking_over: dict[str, float], show: int
) -> dict[str, dict[str, Tally]]:
    from aclarai.daemon.config import load_config
    from aclarai.daemon.search import Ranking, SearchFilter
    from aclarai.daemon.search.session import VaultSearch

    questions = load(path)
    by_vault: dict[str, list[Question]] = {}
    for q in questions:
        by_vault.setdefault(q.vault, []).append(q)
    print(f"retrieval on {path.name}: {len(questions)} questions, {len(by_vault)} vault(s)")
    tallies: dict[str, dict[str, Tally]] = {}
    quality = {"none": [0.0, 0], "filtered": [0.0, 0]}
    for name, group in by_vault.items():
        with tempfile.TemporaryDirectory(prefix="aclarai-retrieval-") as tmp:
            vault, env = graded_copy(vault_path(name, kepano), Path(tmp))
            os.environ["ACLARAI_STATE_DIR"] = env["ACLARAI_STATE_DIR"]
            config = load_config(None)
            with VaultSearch(config, vault) as search:
                base = replace(Ranking(), **ranking_over)
                store = search.store
                overlap = Overlap([(b.file, b.block_id, b.text) for b in store.live_blocks()])
                rankers: dict[str, Callable[[str], list[tuple[str, str]]]] = {
                    "overlap": overlap.rank,
                }
                variants = {
                    "words": replace(base, vectors=0.0, quality=0.0),
                    "vectors": replace(base, coverage=0.0, words=0.0, quality=0.0),
                    "hybrid": replace(base, quality=0.0),
                    "search": base,
                }
                scores: dict[str, float] = {}

                def ranker(
                    ranking: Ranking, key: str, scores: dict[str, float] = scores
                ) -> Callable[[str], list[tuple[str, str]]]:
                    def run(query: str) -> list[tuple[str, str]]:
                        search.engine.ranking = ranking
                        result = search.search(query, limit=TOP * 4)
                        scores[key] = result.hits[0].score if result.hits else 0.0
                        return [(h.file, h.block_id) for h in result.hits]

                    return run

                for key, ranking in variants.items():
                    rankers[key] = ranker(ranking, key)
                for q in group:
                    files = {a["file"] for a in q.answers}
                    blocks = answer_blocks(store, q)
                    for key, rank in rankers.items():
                        ranked = rank(q.question)
                        note, block = ranks(ranked, files, blocks)
                        top = scores.get(key, 0.0)
                        in_blocks = bool(blocks) or not q.answers
                        tallies.setdefault(key, {}).setdefault(q.kind, Tally()).add(
                            note, block, top, in_blocks
                        )
                        tallies[key].setdefault("all answered", Tally())
                        if q.kind != "none":
                            tallies[key]["all answered"].add(note, block, top, in_blocks)
                        if (
                            key == "search"
                            and show
                            and q.kind != "none"
                            and (note is None or note >= TOP)
                        ):
                            show -= 1
                            print(f"  miss {q.id}: {q.question}\n    top: {ranked[:3]}")
                    if q.kind != "none":
                        search.engine.ranking = base
                        for label, where in (
                            ("none", SearchFilter()),
                            ("filtered", SearchFilter(min_quality=0.5)),
                        ):
                            hits = search.search(q.question, limit=TOP, where=where).hits
                            graded = [h.quality for h in hits if h.quality is not None]
                            quality[label][0] += sum(graded)
                            quality[label][1] += len(graded)
                            if label == "filtered":
                                ranked = [(h.file, h.block_id) for h in hits]
                                _, block = ranks(ranked, files, blocks)
                                tallies.setdefault("search ≥0.5", {}).setdefault(
                                    "all answered", Tally()
                                ).add(None, block, 0.0, bool(blocks))
    for label, (total, n) in quality.items():
        print(f"mean quality of top-{TOP} claims, filter {label}: {total / max(n, 1):.3f} ({n})")
    return tallies


def print_table(name: str, tallies: dict[str, dict[str, Tally]]) -> None:
    kinds = ["keyword", "paraphrase", "all answered", "none"]
    print(f"\n{name}: note@5, block@5 (of the answers that are blocks), MRR (block)")
    print("| ranker | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for key, by_kind in tallies.items():
        cells = [by_kind[k].row() if k in by_kind else "–" for k in kinds]
        print(f"| {key} | " + " | ".join(cells) + " |")
    search = tallies.get("search", {})
    answered = search.get("all answered")
    none = search.get("none")
    if answered and none and none.n:
        a = sorted(answered.top_scores)
        print(
            f"best-hit relevance: answered median {a[len(a) // 2]:.2f}, "
            f"10th pct {a[len(a) // 10]:.2f}; none: max {max(none.top_scores):.2f}, "
            f"median {sorted(none.top_scores)[len(none.top_scores) // 2]:.2f}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--kepano", type=Path, default=KEPANO)
    parser.add_argument("--ranking", default="", help="e.g. words=0.6,vectors=0.4,quality=0.1")
    parser.add_argument("--show", type=int, default=0, help="paraphrase misses to print")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    over = {
        k: (int(v) if k == "candidates" else float(v))
        for k, v in (pair.split("=") for pair in args.ranking.split(",") if pair)
    }
    report = {}
    for path in args.files or [QUESTIONS / "tune.jsonl"]:
        held_out = path.name != "tune.jsonl"
        tallies = run_file(path, args.kepano, over, 0 if held_out else args.show)
        print_table(path.name, tallies)
        report[path.name] = {
            key: {kind: vars(t) for kind, t in by_kind.items()} for key, by_kind in tallies.items()
        }
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
