"""Throughput of the offline claim extractor, evaluator and sentence splitter on one core.

    python benchmarks/offline_speed.py [--blocks 20000]

Utterances are synthetic Tier 1 blocks (speaker prefix, one to three sentences with names,
numbers and pronouns). Targets: extractor >= 5,000 blocks/s, evaluator >= 1,000 claims/s.
pysbd, the other splitter considered, is timed on the same text for comparison.
"""

from __future__ import annotations

import argparse
import random
import time

from aclarai.agents import (
    EvalItem,
    ExtractionInput,
    OfflineClaimExtractor,
    OfflineEvaluator,
    Utterance,
)
from aclarai.parsers import split_sentences

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


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}/s ({1e6 * seconds / count:.1f} µs each)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=20_000)
    args = parser.parse_args(argv)
    texts = utterances(args.blocks)

    started = time.perf_counter()
    for text in texts:
        split_sentences(text)
    print(f"split_sentences  {rate(len(texts), time.perf_counter() - started)} utterances")
    try:
        import pysbd
    except ImportError:
        print("pysbd            not installed")
    else:
        segmenter = pysbd.Segmenter(language="en", clean=False)
        sample = texts[:1000]
        started = time.perf_counter()
        for text in sample:
            segmenter.segment(text)
        print(f"pysbd            {rate(len(sample), time.perf_counter() - started)} utterances")

    extractor = OfflineClaimExtractor()
    inputs = [ExtractionInput(Utterance(f"blk-{i}", t)) for i, t in enumerate(texts)]
    started = time.perf_counter()
    claims = extractor.extract_batch(inputs)
    print(f"extractor        {rate(len(inputs), time.perf_counter() - started)} blocks")

    items = [
        EvalItem(claim.text, text)
        for text, block_claims in zip(texts, claims, strict=True)
        for claim in block_claims
    ]
    evaluator = OfflineEvaluator()
    started = time.perf_counter()
    for start in range(0, len(items), 64):
        evaluator.evaluate_batch(items[start : start + 64])
    print(f"evaluator        {rate(len(items), time.perf_counter() - started)} claims")
    print(f"({len(items)} claims from {len(inputs)} blocks)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
