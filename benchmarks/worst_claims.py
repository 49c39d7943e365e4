"""How many of the worst claims of a real vault are false alarms.

    python benchmarks/worst_claims.py VAULT [--backend offline] [--worst 100] [--show 5]

Copies VAULT to a temporary folder and runs, as a user would, ``aclarai adopt`` and ``aclarai
resync`` on the copy (each timed), then ``aclarai claims --json --below 1.01`` (every scored claim,
worst first by the ``quality`` it gives). Of the ``--worst`` first, a **false alarm** is a claim
that is, as a reader sees it, one of the sentences of its own block (so the block says exactly
that), yet scored below 0.5 on entailment or on coverage. Prints the vault's blocks and claims,
the two times, how many claims restate a sentence of their block and their mean entailment, the
false alarms among the worst, and the first few of them with their block.
Goal: at most 5 of 100 on any real vault.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aclarai.parsers import ParseError, decode_note, parse_note, reader_text, split_sentences

FALSE_ALARM_BELOW = 0.5
"""Entailment or coverage under this, for a claim its block says word for word, is a false alarm."""
TARGET = 5
"""False alarms allowed among the 100 worst claims."""
# "alice: The deploy failed." in a Tier 1 block: the speaker is not part of the sentence said.
_SPEAKER = re.compile(r"^[\w .@'-]{1,40}:\s+")
_TRAILING = re.compile(r"[\s.!?…。]+$")


@dataclass(frozen=True)
class Claim:
    quality: float
    entailed: float
    coverage: float
    decontextualization: float
    file: str
    block_id: str
    text: str


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--backend", choices=["offline", "llm"], default="offline")
    parser.add_argument("--worst", type=int, default=100)
    parser.add_argument("--show", type=int, default=5, help="false alarms listed for a reader")
    args = parser.parse_args()
    source = args.vault.resolve()
    notes = sum(1 for _ in source.rglob("*.md"))
    print(f"worst claims of {source.name}: {notes} notes, {args.backend} backend")

    with tempfile.TemporaryDirectory(prefix="aclarai-worst-") as tmp:
        vault, state = Path(tmp) / "vault", Path(tmp) / "state"
        shutil.copytree(source, vault, ignore=shutil.ignore_patterns(".git"))
        env = {**os.environ, "ACLARAI_STATE_DIR": str(state)}
        adopt_s, _ = _timed(["adopt", str(vault)], env)
        resync_s, summary = _timed(["resync", str(vault), "--backend", args.backend], env)
        _, listing = _timed(["claims", str(vault), "--json", "--below", "1.01"], env)
        blocks = _block_texts(vault)
    claims = [_claim(json.loads(line)) for line in listing.splitlines() if line.strip()]
    scored = sorted((c for c in claims if c is not None), key=lambda c: c.quality)
    worst = scored[: args.worst]
    alarms = [c for c in worst if _false_alarm(c, blocks)]

    graph = re.search(r"^graph: blocks / claims +(\d+) / (\d+)$", summary, re.MULTILINE)
    print(f"blocks          {graph.group(1) if graph else len(blocks)}")
    print(f"claims          {graph.group(2) if graph else len(claims)}")
    print(f"adopt           {adopt_s:.2f} s")
    print(f"resync          {resync_s:.2f} s")
    for row in re.findall(r"^llm .+$", summary, re.MULTILINE):
        print(row)
    restated = [c for c in scored if _restates(c, blocks)]
    if restated:
        mean = sum(c.entailed for c in restated) / len(restated)
        print(f"restating       {len(restated)} claims, mean entailment {mean:.2f}")
    print(f"false alarms    {len(alarms)} of the {len(worst)} worst claims")
    allowed = TARGET * len(worst) / 100
    print(f"target <= {TARGET} of 100: {'met' if len(alarms) <= allowed else 'MISSED'}")
    for claim in alarms[: args.show]:
        print(
            f"  {claim.quality:.2f} [entailed {claim.entailed:.2f} coverage {claim.coverage:.2f}]"
            f" {claim.file}#^{claim.block_id}\n    claim: {claim.text}\n"
            f"    block: {_flat(blocks.get((claim.file, claim.block_id), ''))[:200]}"
        )
    return 0


def _timed(command: list[str], env: Mapping[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "aclarai.daemon.cli", *command],
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"aclarai {command[0]} exited {done.returncode}: {done.stderr[-2000:]}")
    return elapsed, done.stdout


def _block_texts(vault: Path) -> dict[tuple[str, str], str]:
    """Every block of the vault's notes, by (note path, block id)."""
    found: dict[tuple[str, str], str] = {}
    for path in sorted(vault.rglob("*.md")):
        try:
            note = parse_note(decode_note(path.read_bytes(), path=str(path)))
        except (OSError, ParseError) as exc:
            print(f"  skipped {path.relative_to(vault)}: {exc}", file=sys.stderr)
            continue
        rel = path.relative_to(vault).as_posix()
        for block in note.blocks:
            found.setdefault((rel, block.id), block.text)
    return found


def _claim(record: Mapping[str, object]) -> Claim | None:
    """A scored claim of ``aclarai claims --json``; ``None`` for a failed evaluation."""
    keys = ("quality", "entailed_score", "coverage_score", "decontextualization_score")
    scores = [record.get(key) for key in keys]
    numbers = [float(s) for s in scores if isinstance(s, int | float)]
    if len(numbers) < len(keys):
        return None
    quality, entailed, coverage, decontextualization = numbers
    where = str(record["file"]), str(record["block_id"])
    return Claim(quality, entailed, coverage, decontextualization, *where, str(record["claim"]))


def _false_alarm(claim: Claim, blocks: Mapping[tuple[str, str], str]) -> bool:
    if min(claim.entailed, claim.coverage) >= FALSE_ALARM_BELOW:
        return False
    return _restates(claim, blocks)


def _restates(claim: Claim, blocks: Mapping[tuple[str, str], str]) -> bool:
    """Whether the claim is, as a reader sees it, one of the sentences of its own block."""
    block = blocks.get((claim.file, claim.block_id))
    return block is not None and _key(claim.text) in _sentence_keys(block)


def _sentence_keys(block: str) -> set[str]:
    sentences = split_sentences(reader_text(block))
    return {_key(s) for s in sentences} | {_key(_SPEAKER.sub("", s, count=1)) for s in sentences}


def _key(text: str) -> str:
    """A sentence compared with a claim: as a reader sees it, case and final stop aside."""
    return _TRAILING.sub("", _flat(reader_text(text))).casefold()


def _flat(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
