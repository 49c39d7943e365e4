"""How many of the worst claims are false alarms, on one vault or on a labelled set of vaults.

    python benchmarks/worst_claims.py VAULT [--backend offline] [--worst 100] [--show 5]
    python benchmarks/worst_claims.py SET [--langs en,de] [--styles help,hub] [--backend offline]
        [--sample-blocks N] [--seed 0] [--worst 100] [--show 5] [--json PATH]

Copies the notes to a temporary folder and runs, as a user would, ``aclarai adopt`` and ``aclarai
resync`` on the copy (each timed), then ``aclarai claims --json --below 1.01`` (every scored claim,
worst first by the ``quality`` it gives) and ``aclarai claims --json --null`` (failed evaluations).

VAULT, a plain vault: of the ``--worst`` first, a **false alarm** is a claim that is, as a reader
sees it, one of the sentences of its own block (so the block says exactly that), yet scored below
0.5 on entailment or on coverage. Prints the vault's blocks and claims, the two times, how many
claims restate a sentence of their block and their mean entailment, the false alarms among the
worst, and the first few of them with their block. Goal: at most 5 of 100 on any real vault.

SET, a labelled set (its sub-folders, one a language, hold ``labels.json``; see
benchmarks/vaults/FORMAT.md), e.g. benchmarks/vaults/tune: each language's style folders are graded
as one vault (with ``--sample-blocks N``, only the first notes of each style, about N blocks for
the language: the ``llm`` backend is slow). One table, a row per language and style and a row
"all" per language:

- blocks, claims; share: blocks giving at least one claim / blocks; vs en: that share over the
  English share of the same style (``--langs`` must include en for it);
- weak: claims of quality under 0.70;
- false alarms: of the ``--worst`` weakest, those restating a sentence of their block that score
  under 0.5 on entailment or coverage, or whose weakest score is decontextualization and whose
  only want of context is a generic "you" (du/Sie, vous, tú, 你, あなた, ...); N/M and per 100;
- no-claim %: of min(300, all) claims (``--no-claim-sample N``; 0 takes every claim) drawn
  with ``random.Random(--seed)``, those whose closest labelled sentence of their note (token
  F1, characters for zh and ja; the sentence also read without a leading "Note:" label) has F1
  >= 0.6 and is labelled no claim, or that are a fragment:
  less than half of a claim sentence, F1 under 0.6 (and 0.3 or more, unless 80% of the claim's
  tokens are in it). Other claims matching nothing (F1 under 0.3) are counted as unmatched, not as
  no-claims; "no-claim kinds" counts the no-claims by their label's kind, fragments apart, and
  how many of the fragments the offline rules would take for a claim on their own (an atomic
  claim split off a longer sentence, as a model makes them, rather than a broken piece);
- recall: of the sentences labelled claim in the row's notes, the share some claim of the same
  note restates (F1 >= 0.6): what filtering out no-claims must not lose;
- unexplained: weak claims whose justification does not open with their weakest score, as in
  "coverage 0.00: leaves out File.base".

Then up to ``--show`` examples of false alarms, no-claims, unexplained claims and fragments, and
which rows meet the targets: at most 5 false alarms per 100 weak claims, at most 5% no-claims, a
share 0.6 to 1.5 times the English one, no unexplained claim. ``--json`` also writes the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from itertools import chain, zip_longest
from pathlib import Path
from typing import TypeVar

from claim_labels import (
    Label,
    Match,
    best_match,
    count_blocks,
    explained,
    found_claims,
    generic_you_only,
    load_labels,
    select_notes,
    verdict,
    weakest,
)

from aclarai.agents.offline.extractor import sentence_to_claim
from aclarai.parsers import (
    SCORE_NAMES,
    ParseError,
    decode_note,
    parse_note,
    reader_text,
    split_sentences,
)

FALSE_ALARM_BELOW = 0.5
"""Entailment or coverage under this, for a claim its block says word for word, is a false alarm."""
TARGET = 5
"""False alarms allowed among the 100 worst claims."""
WEAK = 0.70
"""Quality under which a claim is weak."""
SAMPLE = 300
"""Claims drawn per row to count the no-claims."""
NO_CLAIM_TARGET = 5.0
"""Per cent of no-claims allowed."""
VS_EN = (0.6, 1.5)
"""Allowed share of blocks giving a claim, relative to English."""
BASELINE = "en"
"""The language every other one's share is compared with."""
EXAMPLES = ("false alarms", "no-claims", "unexplained", "fragments")
# "alice: The deploy failed." in a Tier 1 block: the speaker is not part of the sentence said.
_SPEAKER = re.compile(r"^[\w .@'-]{1,40}:\s+")
_TRAILING = re.compile(r"[\s.!?…。]+$")

T = TypeVar("T")
BlockKey = tuple[str, str]
Examples = dict[str, list[tuple["Extracted", str]]]
"""A row's claims for each of :data:`EXAMPLES`, each with a note for the reader."""


@dataclass(frozen=True)
class Extracted:
    file: str
    block_id: str
    text: str

    @property
    def style(self) -> str:
        return _style(self.file)


@dataclass(frozen=True)
class Claim(Extracted):
    """A claim with its scores."""

    quality: float
    entailed: float
    coverage: float
    decontextualization: float
    justification: str | None

    def scores(self) -> dict[str, float]:
        return {
            "entailment": self.entailed,
            "coverage": self.coverage,
            "decontextualization": self.decontextualization,
        }


@dataclass(frozen=True)
class Graded:
    """One run of adopt, resync and claims on a copy of the notes."""

    adopt_s: float
    resync_s: float
    summary: str
    claims: list[Extracted]
    """Scored claims (:class:`Claim`, worst first), then failed evaluations."""
    blocks: dict[BlockKey, str]


@dataclass(frozen=True)
class Row:
    lang: str
    style: str
    blocks: int
    claims: int
    share: float | None
    weak: int
    examined: int
    false_alarms: int
    sampled: int
    no_claims: int
    """Of the sample, fragments included."""
    kinds: dict[str, int]
    """No-claims by their label's kind, and fragments."""
    unmatched: int
    unexplained: int
    found: tuple[int, int] = (0, 0)
    """Labelled claim sentences of the row's notes that some claim restates, of how many."""
    vs_en: float | None = None

    @property
    def per_100(self) -> float | None:
        return 100 * self.false_alarms / self.examined if self.examined else None

    @property
    def no_claim_pct(self) -> float | None:
        return 100 * self.no_claims / self.sampled if self.sampled else None

    @property
    def recall(self) -> float | None:
        return self.found[0] / self.found[1] if self.found[1] else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path, help="a vault, or a labelled set of language folders")
    parser.add_argument("--backend", choices=["offline", "llm"], default="offline")
    parser.add_argument("--worst", type=int, default=100)
    parser.add_argument("--show", type=int, default=5, help="examples listed for a reader")
    parser.add_argument("--langs", type=_names, help="labelled set: these languages (en,de,...)")
    parser.add_argument("--styles", type=_names, help="labelled set: these styles (help,hub,...)")
    parser.add_argument("--sample-blocks", type=int, metavar="N", help="labelled set: N a language")
    parser.add_argument("--seed", type=int, default=0, help="labelled set: the no-claim sample")
    parser.add_argument(
        "--no-claim-sample",
        type=_count,
        default=SAMPLE,
        metavar="N",
        help="labelled set: claims drawn for the no-claim share (default 300; 0: every claim)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="labelled set: write the rows")
    args = parser.parse_args()
    source = args.vault.resolve()
    languages = _labelled_languages(source)
    if not languages:
        return _report_vault(source, args)
    if args.langs:
        languages = [lang for lang in languages if lang in args.langs]
    return _report_set(source, languages, args)


def _count(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value} is below 0")
    return number


def _names(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


def _report_vault(source: Path, args: argparse.Namespace) -> int:
    notes = sum(1 for _ in source.rglob("*.md"))
    print(f"worst claims of {source.name}: {notes} notes, {args.backend} backend")
    copy = shutil.ignore_patterns(".git")
    graded = _grade(lambda vault: shutil.copytree(source, vault, ignore=copy), args.backend)
    blocks = graded.blocks
    scored = [c for c in graded.claims if isinstance(c, Claim)]
    worst = scored[: args.worst]
    alarms = [c for c in worst if _false_alarm(c, blocks)]

    graph = re.search(r"^graph: blocks / claims +(\d+) / (\d+)$", graded.summary, re.MULTILINE)
    print(f"blocks          {graph.group(1) if graph else len(blocks)}")
    print(f"claims          {graph.group(2) if graph else len(graded.claims)}")
    print(f"adopt           {graded.adopt_s:.2f} s")
    print(f"resync          {graded.resync_s:.2f} s")
    for row in _llm_lines(graded.summary):
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


def _report_set(source: Path, languages: Sequence[str], args: argparse.Namespace) -> int:
    print(f"worst claims of the labelled set {source.name}: {args.backend} backend")
    rows: list[Row] = []
    examples: dict[str, Examples] = {}
    blocks_by_lang: dict[str, dict[BlockKey, str]] = {}
    for lang in languages:
        try:
            labels = load_labels(source / lang / "labels.json")
        except ValueError as exc:
            print(f"  skipped {lang}: labels.json: {exc}", file=sys.stderr)
            continue
        styles, notes = _notes(source / lang, args.styles, args.sample_blocks)
        if not notes:
            print(f"  skipped {lang}: no notes", file=sys.stderr)
            continue
        graded = _grade(partial(_copy, source / lang, notes), args.backend)
        print(
            f"{lang}: {len(notes)} notes in {', '.join(styles)}; adopt {graded.adopt_s:.2f} s,"
            f" resync {graded.resync_s:.2f} s"
        )
        for line in _llm_lines(graded.summary):
            print(f"  {line}")
        blocks = {key: text for key, text in graded.blocks.items() if _style(key[0]) in styles}
        claims = [c for c in graded.claims if c.style in styles]
        for style in styles:
            row, _ = _row(
                lang,
                style,
                {key: text for key, text in blocks.items() if _style(key[0]) == style},
                [c for c in claims if c.style == style],
                labels,
                args.worst,
                args.seed,
                args.no_claim_sample,
            )
            rows.append(row)
        row, examples[lang] = _row(
            lang, "all", blocks, claims, labels, args.worst, args.seed, args.no_claim_sample
        )
        rows.append(row)
        blocks_by_lang[lang] = blocks
    rows = with_vs_en(rows)

    print()
    for line in format_table(rows):
        print(line)
    _print_examples(examples, blocks_by_lang, args.show)
    print()
    for line in target_lines(rows):
        print(line)
    if args.json:
        args.json.write_text(json.dumps(_rows_json(source, rows, args), indent=1) + "\n")
    return 0


def _labelled_languages(folder: Path) -> list[str]:
    """The language folders of a labelled set, English first; none for a plain vault."""
    found = sorted(d.name for d in folder.iterdir() if (d / "labels.json").is_file())
    return sorted(found, key=lambda lang: lang != BASELINE)


def _notes(
    folder: Path, styles: Sequence[str] | None, sample_blocks: int | None
) -> tuple[list[str], list[str]]:
    """A language folder's styles and the notes (relative paths) to grade."""
    by_style = {
        d.name: sorted(p.relative_to(folder).as_posix() for p in d.rglob("*.md"))
        for d in sorted(folder.iterdir())
        if d.is_dir() and not d.name.startswith(".") and (styles is None or d.name in styles)
    }
    by_style = {style: notes for style, notes in by_style.items() if notes}
    if sample_blocks is None:
        return list(by_style), [note for notes in by_style.values() for note in notes]
    counted = {
        style: [(note, count_blocks((folder / note).read_text(encoding="utf-8"))) for note in notes]
        for style, notes in by_style.items()
    }
    return list(by_style), select_notes(counted, sample_blocks)


def _copy(folder: Path, notes: Iterable[str], vault: Path) -> None:
    for note in notes:
        target = vault / note
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / note, target)


def _grade(fill: Callable[[Path], object], backend: str) -> Graded:
    """``fill`` a temporary vault, then adopt, resync and list its claims as a user would."""
    with tempfile.TemporaryDirectory(prefix="aclarai-worst-") as tmp:
        vault, state = Path(tmp) / "vault", Path(tmp) / "state"
        fill(vault)
        env = {**os.environ, "ACLARAI_STATE_DIR": str(state)}
        adopt_s, _ = _timed(["adopt", str(vault)], env)
        resync_s, summary = _timed(["resync", str(vault), "--backend", backend], env)
        _, listing = _timed(["claims", str(vault), "--json", "--below", "1.01"], env)
        _, failed = _timed(["claims", str(vault), "--json", "--null"], env)
        blocks = _block_texts(vault)
    scored = [_claim(json.loads(line)) for line in listing.splitlines() if line.strip()]
    worst_first = sorted((c for c in scored if c is not None), key=_quality)
    unscored = [_extracted(json.loads(line)) for line in failed.splitlines() if line.strip()]
    return Graded(adopt_s, resync_s, summary, [*worst_first, *unscored], blocks)


def _quality(claim: Claim) -> float:
    return claim.quality


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


def _llm_lines(summary: str) -> list[str]:
    return re.findall(r"^llm .+$", summary, re.MULTILINE)


def _block_texts(vault: Path) -> dict[BlockKey, str]:
    """Every block of the vault's notes, by (note path, block id)."""
    found: dict[BlockKey, str] = {}
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


def _extracted(record: Mapping[str, object]) -> Extracted:
    return Extracted(str(record["file"]), str(record["block_id"]), str(record["claim"]))


def _claim(record: Mapping[str, object]) -> Claim | None:
    """A scored claim of ``aclarai claims --json``; ``None`` for a failed evaluation."""
    keys = ("quality", *SCORE_NAMES)
    scores = [record.get(key) for key in keys]
    numbers = [float(s) for s in scores if isinstance(s, int | float)]
    if len(numbers) < len(keys):
        return None
    quality, *values = numbers
    named = dict(zip(SCORE_NAMES, values, strict=True))
    justification = record.get("justification")
    return Claim(
        **asdict(_extracted(record)),
        quality=quality,
        entailed=named["entailed_score"],
        coverage=named["coverage_score"],
        decontextualization=named["decontextualization_score"],
        justification=justification if isinstance(justification, str) else None,
    )


def _row(
    lang: str,
    style: str,
    blocks: Mapping[BlockKey, str],
    claims: Sequence[Extracted],
    labels: Mapping[str, Sequence[Label]],
    worst: int,
    seed: int,
    sample_size: int = SAMPLE,
) -> tuple[Row, Examples]:
    """One row of the table, from the blocks and claims (scored ones worst first) it covers."""
    giving = {(c.file, c.block_id) for c in claims} & blocks.keys()
    weak = [c for c in claims if isinstance(c, Claim) and c.quality < WEAK]
    examined = weak[:worst]
    alarms = [c for c in examined if _false_alarm(c, blocks, lang)]
    # Sorted first so that the sample depends on the seed only, not on the listing's order
    # nor on the block ids adopt drew for this copy.
    pool = sorted(claims, key=lambda c: (c.file, c.text, c.block_id))
    sample = random.Random(seed).sample(pool, min(sample_size or len(pool), len(pool)))
    judged = [(c, best_match(c.text, labels.get(c.file, ()), lang)) for c in sample]
    outcomes = [(c, m, verdict(m)) for c, m in judged]
    no_claims = [(c, m) for c, m, v in outcomes if v == "no-claim" and m is not None]
    fragments = [(c, m) for c, m, v in outcomes if v == "fragment" and m is not None]
    whole = sum(_whole_sentence(c.text, lang) for c, _ in fragments)
    kinds = Counter(m.label.kind for _, m in no_claims) + Counter(
        {"fragment": len(fragments), "of them whole sentences": whole}
    )
    unexplained = [c for c in weak if not explained(c.justification, c.scores())]
    hits = [
        found_claims(labels.get(note, ()), [c.text for c in claims if c.file == note], lang)
        for note in sorted({file for file, _ in blocks})
    ]
    row = Row(
        lang=lang,
        style=style,
        blocks=len(blocks),
        claims=len(claims),
        share=len(giving) / len(blocks) if blocks else None,
        weak=len(weak),
        examined=len(examined),
        false_alarms=len(alarms),
        sampled=len(sample),
        no_claims=len(no_claims) + len(fragments),
        kinds=dict(kinds.most_common()),
        unmatched=sum(v == "unmatched" for _, _, v in outcomes),
        unexplained=len(unexplained),
        found=(sum(h for h, _ in hits), sum(n for _, n in hits)),
    )
    examples: Examples = {
        "false alarms": [(c, "") for c in alarms],
        "no-claims": [(c, _matched(m.label.kind, m)) for c, m in no_claims],
        "unexplained": [(c, "") for c in unexplained],
        "fragments": [(c, _matched("a fragment of", m)) for c, m in fragments],
    }
    return row, examples


def _whole_sentence(text: str, lang: str) -> bool:
    """Whether a fragment is a sentence the offline rules would take for a claim on its own: an
    atomic claim split off a longer sentence (as a model makes them), not a broken piece."""
    return sentence_to_claim(text, None, lang) is not None


def _matched(what: str, match: Match) -> str:
    return f'{what} "{match.label.text}", F1 {match.f1:.2f}'


def with_vs_en(rows: Sequence[Row]) -> list[Row]:
    """The rows with their share relative to the English row of the same style."""
    english = {row.style: row.share for row in rows if row.lang == BASELINE}
    return [
        replace(row, vs_en=row.share / base)
        if row.lang != BASELINE and row.share is not None and (base := english.get(row.style))
        else row
        for row in rows
    ]


def misses(row: Row) -> list[str]:
    """The targets a row misses."""
    missed = []
    if row.per_100 is not None and row.per_100 > TARGET:
        missed.append(f"false alarms {row.per_100:.1f}/100")
    if row.no_claim_pct is not None and row.no_claim_pct > NO_CLAIM_TARGET:
        missed.append(f"no-claims {row.no_claim_pct:.1f}%")
    if row.vs_en is not None and not VS_EN[0] <= row.vs_en <= VS_EN[1]:
        missed.append(f"vs en {row.vs_en:.2f}")
    if row.unexplained:
        missed.append(f"unexplained {row.unexplained}")
    return missed


_COLUMNS = (
    "lang",
    "style",
    "blocks",
    "claims",
    "share",
    "vs en",
    "weak",
    "false alarms",
    "per 100",
    "no-claim %",
    "recall",
    "unmatched",
    "unexplained",
    "target",
    "no-claim kinds",
)
_LEFT = {"lang", "style", "target", "no-claim kinds"}


def format_table(rows: Sequence[Row]) -> list[str]:
    """The table's lines: a header, then a row each."""
    cells = [list(_COLUMNS), *(_cells(row) for row in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(_COLUMNS))]
    return [
        "  ".join(
            cell.ljust(width) if name in _LEFT else cell.rjust(width)
            for name, cell, width in zip(_COLUMNS, line, widths, strict=True)
        ).rstrip()
        for line in cells
    ]


def _cells(row: Row) -> list[str]:
    vs_en = "?" if row.vs_en is None else f"{row.vs_en:.2f}"
    return [
        row.lang,
        row.style,
        str(row.blocks),
        str(row.claims),
        _fixed(row.share, 2),
        "-" if row.lang == BASELINE else vs_en,
        str(row.weak),
        f"{row.false_alarms}/{row.examined}",
        _fixed(row.per_100, 1),
        _fixed(row.no_claim_pct, 1),
        _fixed(row.recall, 2),
        str(row.unmatched),
        str(row.unexplained),
        "MISSED" if misses(row) else "met",
        ", ".join(f"{kind} {n}" for kind, n in row.kinds.items()),
    ]


def _fixed(value: float | None, decimals: int) -> str:
    return "-" if value is None else f"{value:.{decimals}f}"


def target_lines(rows: Sequence[Row]) -> list[str]:
    """The targets, how many rows meet them, and what each other row misses."""
    missed = [(row, misses(row)) for row in rows]
    met = sum(not m for _, m in missed)
    lines = [
        f"target: <= {TARGET} false alarms per 100 weak claims, <= {NO_CLAIM_TARGET:g}% no-claims,"
        f" share vs en {VS_EN[0]}-{VS_EN[1]}, 0 unexplained: met on {met} of {len(rows)} rows"
    ]
    lines += [f"  MISSED {row.lang} {row.style}: {', '.join(m)}" for row, m in missed if m]
    return lines


def _print_examples(
    examples: Mapping[str, Examples], blocks: Mapping[str, Mapping[BlockKey, str]], show: int
) -> None:
    for title in EXAMPLES:
        groups = [[(lang, *found) for found in ex[title]] for lang, ex in examples.items()]
        chosen = interleave(groups, show)
        if chosen:
            print(f"\n{title}:")
        for lang, claim, note in chosen:
            print(_example(lang, claim, note, blocks[lang]))


def interleave(groups: Sequence[Sequence[T]], limit: int) -> list[T]:
    """Up to ``limit`` items taken from each group in turn, so every language shows."""
    turns = chain.from_iterable(zip_longest(*groups))
    return [item for item in turns if item is not None][:limit]


def _example(lang: str, claim: Extracted, note: str, blocks: Mapping[BlockKey, str]) -> str:
    scores = ""
    if isinstance(claim, Claim):
        scores = (
            f" {claim.quality:.2f} [entailed {claim.entailed:.2f} coverage {claim.coverage:.2f}"
            f" decontextualization {claim.decontextualization:.2f}]"
        )
    lines = [
        f"  [{lang}]{scores} {claim.file}#^{claim.block_id}" + (f"  ({note})" if note else ""),
        f"    claim: {claim.text}",
    ]
    if isinstance(claim, Claim):
        lines.append(f"    why:   {claim.justification}")
    lines.append(f"    block: {_flat(blocks.get((claim.file, claim.block_id), ''))[:200]}")
    return "\n".join(lines)


def _rows_json(source: Path, rows: Sequence[Row], args: argparse.Namespace) -> dict[str, object]:
    return {
        "set": str(source),
        "backend": args.backend,
        "sample_blocks": args.sample_blocks,
        "seed": args.seed,
        "rows": [
            {
                **asdict(row),
                "per_100": row.per_100,
                "no_claim_pct": row.no_claim_pct,
                "recall": row.recall,
                "missed": misses(row),
            }
            for row in rows
        ],
    }


def _false_alarm(claim: Claim, blocks: Mapping[BlockKey, str], lang: str | None = None) -> bool:
    """A faithful sentence of its block scored low: on entailment or coverage, or (given the
    language) on decontextualization for a generic "you" alone."""
    if not _restates(claim, blocks):
        return False
    if min(claim.entailed, claim.coverage) < FALSE_ALARM_BELOW:
        return True
    return (
        lang is not None
        and "decontextualization" in weakest(claim.scores())
        and generic_you_only(claim.text, lang)
    )


def _restates(claim: Claim, blocks: Mapping[BlockKey, str]) -> bool:
    """Whether the claim is, as a reader sees it, one of the sentences of its own block."""
    block = blocks.get((claim.file, claim.block_id))
    return block is not None and _key(claim.text) in _sentence_keys(block)


def _sentence_keys(block: str) -> set[str]:
    sentences = split_sentences(reader_text(block))
    return {_key(s) for s in sentences} | {_key(_SPEAKER.sub("", s, count=1)) for s in sentences}


def _key(text: str) -> str:
    """A sentence compared with a claim: as a reader sees it, case and final stop aside."""
    return _TRAILING.sub("", _flat(reader_text(text))).casefold()


def _style(path: str) -> str:
    """The style of a note of a language folder: its first folder."""
    return path.split("/", 1)[0]


def _flat(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
