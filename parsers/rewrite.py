"""Score write-back as a pure text transformation.

For each block given, the comment zone becomes: the id comment, then exactly one comment per
non-null score (``entailed_score``, ``coverage_score``, ``decontextualization_score``), then the
zone's other lines (``^anchor``, metadata) in their old order. An existing comment of the same
name anywhere in the zone, including the legacy placement above the id comment, is replaced. A
block whose zone would say the same thing (same values at two decimals, same order) is left
alone and keeps its ``ver``; every other changed block gets ``ver=N+1`` once. A block named in
``edited`` (its text changed since its comments were written) is rewritten whenever it has a
score or a score comment: it gets ``ver=N+1`` even when its comments read the same, and a score
it lacks loses its comment, since that comment described the old text.

In an adopted note, the lines of an emptied block (its id comment, score comments and own
``^anchor``: :func:`aclarai.parsers.marks.drop_emptied`) go with every rewrite, and make one.

Only the id comment line and the zone lines of changed blocks are rewritten; every other byte
(line endings, final newline or its absence, trailing spaces, frontmatter, other comments, code)
is kept. New lines use the note's line ending and the id line's indentation.

The new text is parsed again before it is returned (and that parse returned with it): it must give
the same blocks with the same hashes, and the planned zones. New comment lines can change Markdown
structure around them (an indented line that lazily continued an utterance becomes indented code
after an HTML comment line; a comment at column 0 ends a list), so in the rare note where they
would, each block is retried alone, then at column 0, and left alone (``skipped``) if it still
would.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace

from aclarai.parsers.blocks import Marker, NoteLayout, ZoneLine, scan_note
from aclarai.parsers.grammar import (
    format_id_comment,
    format_score_comment,
    format_score_value,
    next_version,
)
from aclarai.parsers.marks import drop_emptied
from aclarai.parsers.model import SCORE_NAMES, ParsedNote

_SCORE_KEYS = frozenset(SCORE_NAMES)


@dataclass(frozen=True, slots=True)
class RewriteResult:
    """The new note text and what changed in it.

    ``versions`` maps each block whose comments changed to its new ``ver``; ``changed`` lists
    those ids in note order; ``missing`` lists the ids asked for that name no block of the
    note; ``skipped`` lists blocks left unchanged because their new comment lines would have
    changed how the note parses.
    """

    text: str
    versions: dict[str, int] = field(default_factory=dict)
    changed: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    layout: NoteLayout | None = None
    """The parse of ``text`` made to check it, when it differs from the note given."""


@dataclass(frozen=True, slots=True)
class _Plan:
    marker: Marker
    given: Mapping[str, float]
    zone: list[ZoneLine | str]
    indent: str
    renew: bool = False


def _identity(layout: NoteLayout) -> tuple[str | None, list[tuple[str, str]]]:
    """What a rewrite must keep of a note: its own id, and its blocks with their hashes."""
    return layout.note.file_id, [(b.id, b.hash) for b in layout.note.blocks]


def apply_scores(
    text: str,
    scores: Mapping[str, Mapping[str, float | None]],
    *,
    edited: Collection[str] = (),
    layout: NoteLayout | None = None,
) -> RewriteResult:
    """Write block-level score comments into a note.

    Args:
        text: The note as read.
        scores: Block id → score name → value in 0..1, or ``None`` for a failed evaluation
            (writes no comment and removes none, unless the block is ``edited``).
        edited: Ids of blocks whose text changed since their comments were written: each gets
            ``ver=N+1`` once if it has a score or a score comment, and keeps only the comments
            of its non-null scores.
        layout: ``scan_note(text)`` when the caller has it, so the note is not parsed again.

    Returns:
        The rewritten text (``text`` itself when nothing changed) and the changed blocks.

    Raises:
        ValueError: A score name is not one of :data:`SCORE_NAMES`, or a value is NaN.
    """
    for values in scores.values():
        for name, value in values.items():
            if name not in _SCORE_KEYS:
                raise ValueError(f"unknown score name {name!r}; expected one of {SCORE_NAMES}")
            if value is not None:
                format_score_value(value)
    if layout is None:
        layout = scan_note(text)
    tidied = None
    if any(marker.emptied for marker in layout.markers):
        dropped = drop_emptied(text, layout)
        tidy = scan_note(dropped)
        # A note left with no adopted id reads a lone id comment as its own, or as a block of
        # the text above it: a rewrite must change neither, so then the emptied lines stay.
        if _identity(tidy) == _identity(layout):
            text, layout = dropped, tidy
            tidied = tidy
    plans: list[_Plan] = []
    found: set[str] = set()
    for marker in layout.markers:
        if marker.block is None or marker.block_id not in scores:
            continue
        found.add(marker.block_id)
        given = {k: v for k, v in scores[marker.block_id].items() if v is not None}
        renew = marker.block_id in edited
        zone = _new_zone(marker, given, renew=renew)
        if zone is not None:
            content = _content(layout.lines[marker.index])
            indent = content[: len(content) - len(content.lstrip())]
            plans.append(_Plan(marker, given, zone, indent, renew))
    missing = tuple(block_id for block_id in scores if block_id not in found)
    new_text = _build(layout.lines, plans) if plans else text
    skipped: tuple[str, ...] = ()
    after = _read_back(layout, new_text, plans) if plans else None
    if plans and after is None:
        plans, skipped = _plans_that_read_back(layout, plans)
        new_text = _build(layout.lines, plans) if plans else text
        after = scan_note(new_text) if plans else None
    versions = {plan.marker.block_id: next_version(plan.marker.version) for plan in plans}
    return RewriteResult(new_text, versions, tuple(versions), missing, skipped, after or tidied)


def _plans_that_read_back(
    layout: NoteLayout, plans: list[_Plan]
) -> tuple[list[_Plan], tuple[str, ...]]:
    """Add blocks one at a time, at their own indentation, else at column 0, else skip them."""
    kept: list[_Plan] = []
    skipped: list[str] = []
    for plan in plans:
        variants = [plan, replace(plan, indent="")] if plan.indent else [plan]
        for variant in variants:
            trial = [*kept, variant]
            if _read_back(layout, _build(layout.lines, trial), trial) is not None:
                kept.append(variant)
                break
        else:
            skipped.append(plan.marker.block_id)
    return kept, tuple(skipped)


def _read_back(layout: NoteLayout, text: str, plans: list[_Plan]) -> NoteLayout | None:
    """The parse of ``text`` if it gives the same note with exactly the planned zones."""
    after = scan_note(text)
    planned = {plan.marker.block_id: plan for plan in plans}
    if _signature(after.note, planned) != _signature(layout.note, planned):
        return None
    same = all(
        marker.version == next_version(planned[marker.block_id].marker.version)
        and _new_zone(marker, planned[marker.block_id].given) is None
        for marker in after.markers
        if marker.block is not None and marker.block_id in planned
    )
    return after if same else None


def _signature(note: ParsedNote, planned: Mapping[str, _Plan]) -> tuple[object, ...]:
    """What write-back must not change: blocks, hashes, other blocks' scores, header, file id."""
    blocks = [(b.id, b.hash, None if b.id in planned else b.scores) for b in note.blocks]
    return blocks, note.file_id, note.metadata


def _build(lines: list[str], plans: list[_Plan]) -> str:
    eol = "\r\n" if len(lines) > 1 and lines[0].endswith("\r") else "\n"
    replacements: dict[int, list[tuple[str, str]]] = {}
    for plan in plans:
        _replace_zone(lines, plan, replacements, eol)
    return _assemble(lines, replacements)


def _new_zone(
    marker: Marker, given: Mapping[str, float], *, renew: bool = False
) -> list[ZoneLine | str] | None:
    """The lines to follow the id comment (new comments as text), or ``None`` if unchanged.

    ``renew``: the block's text changed, so its old score comments are dropped and a block with
    anything to say about scores is rewritten even if it would read the same.
    """
    if renew:
        had_scores = any(line.score is not None for line in (*marker.above, *marker.below))
        if not given and not had_scores:
            return None
    elif not given:
        return None
    zone: list[ZoneLine | str] = []
    for name in SCORE_NAMES:
        if name in given:
            zone.append(format_score_comment(name, given[name]))
        elif not renew:
            zone.extend(line for line in marker.below if line.score == name)
    zone.extend(line for line in marker.below if line.score is None)
    if renew:
        return zone
    moves_legacy = any(line.score in given for line in marker.above)
    if not moves_legacy and _same_zone(marker.below, zone, given):
        return None
    return zone


def _same_zone(
    old: tuple[ZoneLine, ...], new: list[ZoneLine | str], given: Mapping[str, float]
) -> bool:
    if len(old) != len(new):
        return False
    for before, after in zip(old, new, strict=True):
        if isinstance(after, ZoneLine):
            if after is not before:
                return False
        elif (
            before.score is None
            or before.score not in given
            or before.value is None
            or format_score_value(before.value) != format_score_value(given[before.score])
        ):
            return False
    return True


def _replace_zone(
    lines: list[str],
    plan: _Plan,
    replacements: dict[int, list[tuple[str, str]]],
    eol: str,
) -> None:
    """Plan one block's new lines: legacy lines it rewrites dropped, id line and zone rewritten.

    Kept lines keep their own line ending and new lines get the note's, except that the last
    line of the group takes the ending of the last line it replaces, so a missing final newline
    stays missing.
    """
    marker = plan.marker
    for line in marker.above:
        if line.score in plan.given or (plan.renew and line.score is not None):
            replacements[line.index] = []
    for line in marker.below:
        replacements[line.index] = []
    id_content = _content(lines[marker.index])
    new_id = format_id_comment(marker.block_id, next_version(marker.version))
    contents = [id_content[: marker.start] + new_id + id_content[marker.end :]]
    endings = [_own_eol(lines, marker.index)]
    for item in plan.zone:
        if isinstance(item, str):
            contents.append(plan.indent + item)
            endings.append("")
        else:
            contents.append(_content(lines[item.index]))
            endings.append(_own_eol(lines, item.index))
    last = marker.below[-1].index if marker.below else marker.index
    # Every line but the group's last needs a line break; only the note's last line can end in
    # nothing or in a lone CR, and that ending moves to the group's new last line.
    endings = [e if e.endswith("\n") else eol for e in endings[:-1]] + [_own_eol(lines, last)]
    replacements[marker.index] = list(zip(contents, endings, strict=True))


def _content(line: str) -> str:
    return line[:-1] if line.endswith("\r") else line


def _own_eol(lines: list[str], index: int) -> str:
    """The ending a line had: CRLF, LF; the note's last line has none, or a lone CR."""
    cr = "\r" if lines[index].endswith("\r") else ""
    return cr if index == len(lines) - 1 else cr + "\n"


def _assemble(lines: list[str], replacements: dict[int, list[tuple[str, str]]]) -> str:
    parts: list[str] = []
    for index, line in enumerate(lines):
        planned = replacements.get(index)
        if planned is None:
            parts.append(line)
            parts.append("\n" if index < len(lines) - 1 else "")
            continue
        for content, ending in planned:
            parts.append(content)
            parts.append(ending)
    return "".join(parts)
