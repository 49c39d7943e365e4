"""Synthetic Tier 1 vaults for benchmarks and load tests."""

from __future__ import annotations

import random
from pathlib import Path

SPEAKERS = ("alice", "bob", "carol", "dana", "erik", "frank", "gina", "hana")
SUBJECTS = (
    "The deploy",
    "The migration",
    "Our API",
    "The search index",
    "The build",
    "The billing job",
    "The staging cluster",
    "The mobile release",
)
VERBS = ("failed", "finished", "slowed down", "was rolled back", "passed review", "was delayed")
TAILS = (
    "on Tuesday",
    "after 40 minutes",
    "in Frankfurt",
    "for 1,200 users",
    "since v2.3",
    "twice this week",
    "before the audit",
    "on June 6",
)


def utterance(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(1, 3)):
        sentences.append(f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(TAILS)}.")
    if rng.random() < 0.15:
        sentences.append("Can someone check?")
    return f"{rng.choice(SPEAKERS)}: " + " ".join(sentences)


def note_text(index: int, blocks: int, rng: random.Random) -> str:
    lines = [
        f"<!-- aclarai:title=Synthetic note {index} -->",
        "<!-- aclarai:created_at=2024-06-03T09:00:00Z -->",
        "",
    ]
    for b in range(blocks):
        block_id = f"blk-{index:05d}-{b:03d}"
        lines += [utterance(rng), f"<!-- aclarai:id={block_id} ver=1 -->", f"^{block_id}", ""]
    return "\n".join(lines)


def generate_vault(root: Path, notes: int, blocks_per_note: int = 10, seed: int = 1) -> int:
    """Write ``notes`` notes into ``root`` (100 per folder); return the number of blocks."""
    rng = random.Random(seed)
    for i in range(notes):
        folder = root / f"folder-{i // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{i:05d}.md").write_text(note_text(i, blocks_per_note, rng))
    return notes * blocks_per_note
