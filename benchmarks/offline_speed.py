"""Throughput of the offline claim extractor, evaluator and sentence splitter on one core.

    python benchmarks/offline_speed.py [--blocks 20000] [--repeat 3]

Utterances are synthetic Tier 1 blocks (speaker prefix, one to three sentences with names,
numbers and pronouns). The evaluator is timed twice: on bare (claim, source) pairs in batches
of 64, and as the consumer calls it, one batch per note of ten blocks with each claim's window
(three utterances before its block and one after) as context. Each figure is the best of
``--repeat`` runs, since other work on the machine only ever slows a run down. Last, the
evaluator runs in one process per core (``eval.processes``), in batches of 256.
Targets: extractor >= 5,000 blocks/s, evaluator >= 5,000 claims/s per core.
pysbd, the other splitter considered, is timed on the same text for comparison.
``reader_text``, which every block and claim passes through before it is graded, is timed on
the paragraphs of the real vault vendored in ``tests/data/vaults/kepano-obsidian``.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import time
from collections.abc import Callable
from pathlib import Path

from aclarai.agents import (
    Claim,
    EvalItem,
    ExtractionInput,
    OfflineClaimExtractor,
    OfflineEvaluator,
    Utterance,
)
from aclarai.agents.pool import PooledEvaluator
from aclarai.parsers import reader_text, split_sentences

REAL_VAULT = Path(__file__).resolve().parent.parent / "tests/data/vaults/kepano-obsidian"

SPEAKERS = ("alice", "bob", "carol", "dana", "erik")
SENTENCES = (
    "I rolled back to v{major}.{minor} and it is stable now.",
    "The deploy to staging failed {n} times on Tuesday.",
    "We lost roughly {n},200 orders during the outage in Frankfurt.",
    "The migration to Kubernetes took {n} minutes.",
    "Can someone look at the logs?",
    "Thanks, sounds good!",
    "He said it would be done by Friday.",
    "Our monitoring checks certificate expiry only once a week.",
    "The staging cluster runs Postgres 15.{minor} on {n} nodes.",
    "I think it is fine.",
)


def utterances(count: int, seed: int = 7) -> list[str]:
    """Deterministic synthetic Tier 1 utterances."""
    rng = random.Random(seed)
    made = []
    for _ in range(count):
        body = " ".join(
            rng.choice(SENTENCES).format(n=rng.randint(2, 99), major=2, minor=rng.randint(0, 9))
            for _ in range(rng.randint(1, 3))
        )
        made.append(f"{rng.choice(SPEAKERS)}: {body}")
    return made


NOTE_BLOCKS = 10
WINDOW_BEFORE, WINDOW_AFTER = 3, 1


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}/s ({1e6 * seconds / count:.1f} µs each)"


def best_of(repeat: int, run: Callable[[], object]) -> float:
    """Shortest wall time of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def windowed_batches(texts: list[str], claims: list[list[Claim]]) -> list[list[EvalItem]]:
    """One batch per note of :data:`NOTE_BLOCKS` blocks, each claim with its block's window."""
    batches = []
    for start in range(0, len(texts), NOTE_BLOCKS):
        note = texts[start : start + NOTE_BLOCKS]
        batch = []
        for i, text in enumerate(note):
            window = (*note[max(0, i - WINDOW_BEFORE) : i], *note[i + 1 : i + 1 + WINDOW_AFTER])
            batch += [EvalItem(c.text, text, window, c.id) for c in claims[start + i]]
        batches.append(batch)
    return batches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure, best one kept")
    args = parser.parse_args(argv)
    texts = utterances(args.blocks)

    seconds = best_of(args.repeat, lambda: [split_sentences(text) for text in texts])
    print(f"split_sentences  {rate(len(texts), seconds)} utterances")
    try:
        import pysbd
    except ImportError:
        print("pysbd            not installed")
    else:
        segmenter = pysbd.Segmenter(language="en", clean=False)
        sample = texts[:1000]
        seconds = best_of(args.repeat, lambda: [segmenter.segment(text) for text in sample])
        print(f"pysbd            {rate(len(sample), seconds)} utterances")
    paragraphs = [
        paragraph
        for note in sorted(REAL_VAULT.rglob("*.md"))
        for paragraph in re.split(r"\n[ \t]*\n", note.read_text(encoding="utf-8"))
        if paragraph.strip()
    ]
    seconds = best_of(args.repeat, lambda: [reader_text(p) for p in paragraphs])
    print(f"reader_text      {rate(len(paragraphs), seconds)} paragraphs of a real vault")

    extractor = OfflineClaimExtractor()
    inputs = [ExtractionInput(Utterance(f"blk-{i}", t)) for i, t in enumerate(texts)]
    seconds = best_of(args.repeat, lambda: extractor.extract_batch(inputs))
    print(f"extractor        {rate(len(inputs), seconds)} blocks")

    claims = extractor.extract_batch(inputs)
    items = [
        EvalItem(claim.text, text)
        for text, block_claims in zip(texts, claims, strict=True)
        for claim in block_claims
    ]
    evaluator = OfflineEvaluator()
    seconds = best_of(
        args.repeat,
        lambda: [evaluator.evaluate_batch(items[i : i + 64]) for i in range(0, len(items), 64)],
    )
    print(f"evaluator        {rate(len(items), seconds)} claims")
    batches = windowed_batches(texts, claims)
    seconds = best_of(args.repeat, lambda: [evaluator.evaluate_batch(b) for b in batches])
    print(f"  with windows   {rate(len(items), seconds)} claims")
    workers = os.cpu_count() or 1
    with PooledEvaluator(OfflineEvaluator, workers, start_after=0) as pooled:
        pooled.evaluate_batch(items[:64])  # the workers start outside the timing
        seconds = best_of(
            args.repeat,
            lambda: [pooled.evaluate_batch(items[i : i + 256]) for i in range(0, len(items), 256)],
        )
    print(
        f"  {workers} processes    {rate(len(items), seconds)} claims (eval.processes: {workers})"
    )
    print(f"({len(items)} claims from {len(inputs)} blocks)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
