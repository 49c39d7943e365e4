"""The dashboard note: what the store knows about the vault's claims, as plain Markdown.

:func:`render_dashboard` is pure: it takes what the store and the queue answered
(:class:`DashboardData`) and returns the note's text, which Obsidian renders with no plugin:
wikilinks to block anchors (``[[folder/Note#^blk-id|Note › first words]]``), pipe tables and
Mermaid ``xychart-beta`` charts (Mermaid 10.5 and later, which every current Obsidian bundles).

The weak claims are grouped by their weakest score, which says what to fix (:data:`REASONS`).
Claims and block texts are shown as a reader of the note sees them
(:func:`aclarai.parsers.reading.reader_text`: ``[[Canvas|lærred]]`` reads ``lærred``), and all
text from notes (claims, block texts, justifications, errors) is escaped so that it renders as
that same plain text: no Markdown emphasis, no HTML, no accidental wikilink, tag, block anchor or
table cell boundary. A score is compared with the threshold as it is shown, to two decimals.

The first line after the title says when the note was written; :func:`same_dashboard` compares
two renderings without it, so a caller writes only when something else changed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from aclarai.parsers.model import SCORE_NAMES, SCORE_WORDS, named_scores
from aclarai.parsers.reading import reader_text

BINS = 10
"""Bars per score distribution: 0.0–0.1, …, 0.9–1.0 (1.0 counts in the last)."""
FIRST_WORDS = 6
"""Words of a block's text shown in a link to it."""
DAYS_SHOWN = 14
"""Days in the quality-over-time chart, the latest with scores: as many labels as fit side by
side in a note's width."""
NOTES_SHOWN = 500
"""Rows of the notes table, lowest mean quality first: a vault of 10,000 notes would otherwise
make a table no one reads and Obsidian renders slowly."""
CLAIM_CHARS = 160
"""Longest claim or justification shown before it is cut with an ellipsis."""
WRITTEN_PREFIX = "Written by aclarai at "

REASONS: Mapping[str, str] = {
    "entailed_score": "Not said by the note",
    "coverage_score": "Leaves out a name or number",
    "decontextualization_score": "Needs context",
}
"""The heading the weak claims are grouped under, by their weakest score: what to fix."""
BLOCK_SCORES_RULE = (
    "Grouped by their weakest score. A block's score comments hold, for each score, the lowest "
    "of its claims: a block whose claims scored 1.00 and 0.40 shows 0.40."
)
SCORE_TITLES: Mapping[str, str] = {
    "entailed_score": "Entailment",
    "coverage_score": "Coverage",
    "decontextualization_score": "Decontextualization",
}


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """One claim on one block, as the dashboard shows it."""

    claim_id: str
    text: str
    file: str
    """Vault-relative path of the note holding the block."""
    block_id: str
    block_text: str
    entailed_score: float | None = None
    coverage_score: float | None = None
    decontextualization_score: float | None = None
    quality: float | None = None
    verdict: str | None = None
    justification: str | None = None
    status: str = ""


@dataclass(frozen=True, slots=True)
class NoteStats:
    """One note's live blocks and the claims they originate."""

    file: str
    blocks: int
    claims: int
    scored: int
    """Claims with a non-null quality."""
    mean_quality: float | None
    weakest: ClaimRef | None
    """The claim of lowest quality (``block_text`` may be empty: the link shows the note)."""
    last_evaluated: str | None
    """ISO time of the latest evaluation of any of its claims."""
    below: int = 0
    """Claims whose quality is below the threshold."""


@dataclass(frozen=True, slots=True)
class DailyQuality:
    day: str
    """``YYYY-MM-DD`` (UTC) of the claims' latest evaluation."""
    mean_quality: float
    claims: int


@dataclass(frozen=True, slots=True)
class DeadLetter:
    block_id: str
    file: str
    error: str


@dataclass(frozen=True, slots=True)
class DashboardData:
    """Everything the dashboard shows; see :func:`render_dashboard`."""

    threshold: float
    model: str
    low_quality: Sequence[ClaimRef] = ()
    """Worst first; at most what is to be shown."""
    low_quality_total: int = 0
    failed: Sequence[ClaimRef] = ()
    failed_total: int = 0
    notes: Sequence[NoteStats] = ()
    score_counts: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    """Per score name, how many claims have each value in hundredths (0–100)."""
    daily: Sequence[DailyQuality] = ()
    dead_letters: Sequence[DeadLetter] = ()
    queue_depth: int = 0
    paused: bool = False
    blocks: int = 0
    claims: int = 0
    scored: int = 0


def render_dashboard(data: DashboardData, written_at: str) -> str:
    """The dashboard note's Markdown.

    Args:
        data: What to show.
        written_at: The time line's value (the caller's clock, e.g. ``2024-06-03T09:00:00Z``).

    Returns:
        The note's text, ending with a newline.
    """
    parts = [
        "# aclarai dashboard",
        f"{WRITTEN_PREFIX}{written_at}. aclarai rewrites this note: edits to it are lost.",
        _overview(data),
        _low_quality(data),
        _notes_table(data.notes),
        _distributions(data.score_counts),
        _over_time(data.daily),
        _failed(data),
        _queue(data),
    ]
    return "\n\n".join(part.rstrip("\n") for part in parts) + "\n"


def same_dashboard(old: str, new: str) -> bool:
    """Whether two renderings differ only in the time they were written."""
    return _without_time(old) == _without_time(new)


def _without_time(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith(WRITTEN_PREFIX)]


# --- sections ----------------------------------------------------------------------------


def _overview(data: DashboardData) -> str:
    return "\n".join(
        [
            f"- blocks: {data.blocks}; claims: {data.claims}; scored: {data.scored}",
            f"- below quality {data.threshold:.2f}: {data.low_quality_total}",
            f"- failed evaluations: {data.failed_total}",
            f"- model: {escape_text(data.model)}",
        ]
    )


def _low_quality(data: DashboardData) -> str:
    lines = [f"## Claims below quality {data.threshold:.2f}", ""]
    if not data.low_quality:
        lines.append("None.")
        return "\n".join(lines)
    lines.append(_shown(len(data.low_quality), data.low_quality_total, "by reason, worst first"))
    lines.append("")
    lines.append(BLOCK_SCORES_RULE)
    groups: dict[str, list[ClaimRef]] = {name: [] for name in REASONS}
    for claim in data.low_quality:
        groups[weakest_score(claim)].append(claim)
    for name, claims in groups.items():
        if not claims:
            continue
        lines += ["", f"### {REASONS[name]} ({len(claims)})", ""]
        for claim in claims:
            lines.append(f"- **{_score(claim.quality)}** {_claim_line(claim)}")
            lines.append(f"    - {_scores_line(claim)}")
            if claim.verdict or claim.justification:
                lines.append(f"    - {verdict_text(claim.verdict, claim.justification)}")
    return "\n".join(lines)


def weakest_score(claim: ClaimRef) -> str:
    """The name of the claim's lowest score (a tie goes to the first of :data:`REASONS`)."""
    scores = {name: getattr(claim, name) for name in REASONS}
    known = {name: value for name, value in scores.items() if value is not None}
    return min(known, key=known.__getitem__) if known else next(iter(REASONS))


def _failed(data: DashboardData) -> str:
    lines = ["## Failed evaluations", ""]
    if not data.failed:
        lines.append("None.")
        return "\n".join(lines)
    lines.append(_shown(len(data.failed), data.failed_total, "retried on every resync"))
    lines.append("")
    for claim in data.failed:
        lines.append(f"- {_claim_line(claim)}")
        lines.append(f"    - {_scores_line(claim)}; status: {escape_text(claim.status or '?')}")
    return "\n".join(lines)


def _queue(data: DashboardData) -> str:
    lines = [
        "## Queue",
        "",
        f"- queue depth: {data.queue_depth}",
        f"- paused: {'yes' if data.paused else 'no'}",
        f"- dead letters: {len(data.dead_letters)}",
    ]
    for dead in data.dead_letters:
        link = block_link(dead.file, dead.block_id, "")
        lines.append(f"    - {link}: {escape_text(_cut(dead.error))}")
    return "\n".join(lines)


def _notes_table(notes: Sequence[NoteStats]) -> str:
    lines = ["## Notes", ""]
    if not notes:
        lines.append("No notes with aclarai blocks yet.")
        return "\n".join(lines)
    # Unscored notes last, then by path, so the order is stable from one write to the next.
    ordered = sorted(notes, key=lambda n: (n.mean_quality is None, n.mean_quality or 0.0, n.file))
    shown = ordered[:NOTES_SHOWN]
    if len(shown) < len(ordered):
        lines += [f"The {len(shown)} of {len(ordered)} notes of lowest mean quality.", ""]
    else:
        lines += ["Lowest mean quality first.", ""]
    lines.append("| note | blocks | claims | mean quality | weakest claim | last evaluated |")
    lines.append("| --- | ---: | ---: | ---: | --- | --- |")
    for note in shown:
        weakest = ""
        if note.weakest is not None:
            w = note.weakest
            link = block_link(w.file, w.block_id, w.block_text, in_table=True)
            weakest = f"{_score(w.quality)} {escape_text(_cut(reader_text(w.text), 80))} {link}"
        cells = [
            note_link(note.file),
            str(note.blocks),
            str(note.claims),
            _score(note.mean_quality) if note.mean_quality is not None else "",
            weakest,
            unbroken_time(note.last_evaluated or ""),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _distributions(score_counts: Mapping[str, Mapping[int, int]]) -> str:
    lines = ["## Score distributions", ""]
    if not any(score_counts.get(name) for name in SCORE_NAMES):
        lines.append("No scores yet.")
        return "\n".join(lines)
    labels = ", ".join(f'"{i / BINS:.1f}"' for i in range(BINS))
    for name in SCORE_NAMES:
        counts = bin_counts(score_counts.get(name, {}))
        top = max(max(counts), 1)
        lines += [
            "```mermaid",
            "xychart-beta",
            f'    title "{SCORE_TITLES[name]}"',
            f"    x-axis [{labels}]",
            f'    y-axis "claims" 0 --> {top}',
            f"    bar [{', '.join(str(c) for c in counts)}]",
            "```",
            "",
        ]
    return "\n".join(lines)


def _over_time(daily: Sequence[DailyQuality]) -> str:
    lines = ["## Quality over time", ""]
    if not daily:
        lines.append("No scores yet.")
        return "\n".join(lines)
    shown = daily[-DAYS_SHOWN:]
    # Month-day labels stay legible side by side; the year is needed only when it changes.
    one_year = len({d.day[:4] for d in shown}) == 1
    days = ", ".join(f'"{d.day[5:] if one_year else d.day}"' for d in shown)
    means = ", ".join(f"{d.mean_quality:.3f}" for d in shown)
    # Mermaid draws a line between points: one point alone draws nothing, a bar does.
    series = "line" if len(shown) > 1 else "bar"
    latest = shown[-1]
    lines += [
        f"Daily mean quality of the claims, by the day they were last evaluated ({shown[0].day} "
        f"to {latest.day}). Latest: {latest.day}, {latest.mean_quality:.2f} over "
        f"{latest.claims} claims.",
        "",
        "```mermaid",
        "xychart-beta",
        '    title "Mean claim quality per day"',
        f"    x-axis [{days}]",
        '    y-axis "quality" 0 --> 1',
        f"    {series} [{means}]",
        "```",
    ]
    return "\n".join(lines)


# --- pieces ------------------------------------------------------------------------------


def bin_counts(hundredths: Mapping[int, int], bins: int = BINS) -> list[int]:
    """Fold counts per value in hundredths (0–100) into ``bins`` equal bins over [0, 1].

    A value on a boundary goes to the bin above it (0.10 is in 0.1–0.2); 1.00 goes to the last.
    Values outside 0–100 are clamped.
    """
    counts = [0] * bins
    for value, n in hundredths.items():
        index = min(max(value, 0) * bins // 100, bins - 1)
        counts[index] += n
    return counts


def wikilink_target(file: str) -> str:
    """The vault-relative path as Obsidian links it: without ``.md``."""
    return file[:-3] if file.endswith(".md") else file


def note_link(file: str) -> str:
    """A link to a note (no display text: nothing to escape in a table)."""
    return f"[[{wikilink_target(file)}]]"


def block_link(file: str, block_id: str, block_text: str, *, in_table: bool = False) -> str:
    """``[[folder/Note#^blk-id|Note › first words]]``: a link that jumps to the block.

    Inside a table the display separator is written ``\\|``, as Obsidian requires there.
    """
    name = wikilink_target(file).rsplit("/", 1)[-1]
    read = reader_text(block_text).split()
    words = " ".join(read[:FIRST_WORDS])
    if len(read) > FIRST_WORDS:
        words += " …"
    display = escape_link_text(f"{name} › {words}" if words else name)
    separator = "\\|" if in_table else "|"
    return f"[[{wikilink_target(file)}#^{block_id}{separator}{display}]]"


# Characters a wikilink's display text cannot hold as they are: ``|`` ends the target, ``]]``
# the link, and ``#``/``^`` read as heading and block references. Look-alikes keep it readable.
_LINK_TEXT = str.maketrans({"|": "¦", "[": "⟦", "]": "⟧", "#": "＃", "^": "ˆ"})


def escape_link_text(text: str) -> str:
    """Display text that cannot end or redirect a wikilink."""
    return " ".join(text.split()).translate(_LINK_TEXT)


# ASCII punctuation that can start Markdown or Obsidian syntax inline (emphasis, code, links,
# HTML, tags, block anchors, highlights, comments, math, table cells).
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~=^%$&])")


def escape_text(text: str) -> str:
    """Text from a note shown as the same plain text on one line."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def shown_threshold(threshold: float) -> float:
    """The quality under which a claim's score, shown to two decimals, reads below ``threshold``.

    A claim of quality 0.697 is shown as 0.70, so it is not listed below 0.70: a reader compares
    what is shown. ``quality < shown_threshold(t)`` holds exactly when ``f"{quality:.2f}"`` is
    below ``t`` (taken to two decimals too).
    """
    edge = Decimal(str(round(threshold, 2))) - Decimal("0.005")
    bound = float(edge)
    # No float is the edge itself: the first float above it is the first shown at the threshold.
    return bound if Decimal(bound) > edge else math.nextafter(bound, math.inf)


def verdict_text(verdict: str | None, justification: str | None) -> str:
    """``Supported: 100% of …``: the verdict and why, the verdict said once (an evaluator's
    justification may start with it already)."""
    label = (verdict or "").replace("_", " ").strip().capitalize()
    why = " ".join((justification or "").split())
    if label and why.lower().startswith(label.lower() + ":"):
        why = why[len(label) + 1 :].lstrip()
    elif why.startswith(_SCORE_OPENINGS):
        label = ""  # "coverage 0.00: leaves out X. Supported: …" says the verdict itself
    text = f"{label}: {why}" if label and why else label or why
    return escape_text(_cut(text))


_SCORE_OPENINGS = tuple(f"{word} " for word in SCORE_WORDS.values())
_ISO_MINUTE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d:\d\d)")


def unbroken_time(iso: str) -> str:
    """An ISO time as ``2024‑06‑03 09:00 UTC`` that a table cell cannot wrap: non-breaking
    hyphens (U+2011) and spaces (U+00A0) where a browser would break the line."""
    match = _ISO_MINUTE.match(iso)
    if match is None:
        return escape_text(iso).replace(" ", "\u00a0")
    year, month, day, minute = match.groups()
    return f"{year}\u2011{month}\u2011{day}\u00a0{minute}\u00a0UTC"


def _cut(text: str, limit: int = CLAIM_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _score(value: float | None) -> str:
    return "null" if value is None else f"{value:.2f}"


def _scores_line(claim: ClaimRef) -> str:
    return " · ".join(
        f"{name.removesuffix('_score')} {_score(value)}"
        for name, value in named_scores(claim).items()
    )


def _claim_line(claim: ClaimRef) -> str:
    link = block_link(claim.file, claim.block_id, claim.block_text)
    return f"{escape_text(_cut(reader_text(claim.text)))} ({link})"


def _shown(shown: int, total: int, order: str) -> str:
    if shown >= total:
        return f"{total}, {order}."
    return f"The first {shown} of {total}, {order} (`aclarai claims` lists them all)."
