"""Property tests: write-back never changes what the parser sees, nor any non-aclarai text."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import example, given, settings
from hypothesis import strategies as st

from aclarai.parsers import (
    SCORE_NAMES,
    ParsedNote,
    apply_scores,
    drop_emptied,
    parse_note,
    scan_note,
)
from aclarai.parsers.grammar import format_score_value
from tests.helpers.notes import without_aclarai_comments

IDS = ("a", "b", "blk-1", "x_2")

words = st.text(alphabet="abc xyz.,:*#>-_`~^<!=\t", min_size=0, max_size=12)
block_id = st.sampled_from(IDS)
spacing = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def id_comment(draw: st.DrawFn) -> str:
    version = draw(st.one_of(st.none(), st.integers(0, 20)))
    ver = "" if version is None else f"{draw(spacing)} ver={version}"
    return f"<!--{draw(spacing)}aclarai:id={draw(block_id)}{ver}{draw(spacing)}-->"


@st.composite
def score_comment(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(SCORE_NAMES))
    value = draw(st.one_of(st.floats(0, 1).map(lambda v: f"{v:.3f}"), st.just("bad")))
    return f"<!-- aclarai:{name}={value} -->"


line = st.one_of(
    words,
    st.just(""),
    id_comment(),
    st.builds(lambda t, c, s: f"{t} {c}{s}", words, id_comment(), spacing),
    st.builds(lambda s, c: s + c, st.sampled_from(["", "  ", "    "]), id_comment()),
    score_comment(),
    block_id.map(lambda i: f"^{i}"),
    st.just("<!-- aclarai:reviewed=yes -->"),
    st.sampled_from(["```", "~~~", "    indented code"]),
    st.builds(lambda s, c: f"{s}code {c}", st.sampled_from(["    ", "\t", "  \t"]), id_comment()),
    st.sampled_from(["- item", "> quote", "# heading", "<!-- plain -->", "---"]),
    st.sampled_from(["<!-- aclarai:id=q ver=1", "<!-- aclarai:id=bad id -->", "x^2 "]),
)

header = st.sampled_from(
    ["", "---\ntitle: t\n---\n", "<!-- aclarai:title=T -->\n\n", "\ufeff", "\ufeff---\nk: v\n---\n"]
)


ENDINGS = ("", "\n", "\r\n", "\r")
"""How a note may end; a lone CR inside the note is part of its line (only LF splits lines)."""


@st.composite
def notes(draw: st.DrawFn) -> str:
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    lines = draw(st.lists(line, max_size=25))
    # Most lines take the note's ending, some a stray one (mixed endings, lone CRs); the last
    # ends in any way a note can end.
    endings = [
        draw(st.sampled_from([eol, eol, eol, "\n", "\r\n", "\r\r\n", "\r"])) for _ in lines[1:]
    ]
    endings += [draw(st.sampled_from(ENDINGS))] if lines else []
    body = "".join(line + ending for line, ending in zip(lines, endings, strict=True))
    return draw(header).replace("\n", eol) + body


score_value = st.one_of(st.none(), st.floats(-0.5, 1.5, allow_nan=False))
score_sets = st.dictionaries(
    st.sampled_from((*IDS, "missing")),
    st.dictionaries(st.sampled_from(SCORE_NAMES), score_value, max_size=3),
    max_size=5,
)


def seen(parsed: ParsedNote) -> list[tuple[str, str, str]]:
    return [(block.id, block.text, block.hash) for block in parsed.blocks]


@settings(max_examples=300, deadline=None)
@given(notes(), score_sets)
# Found by this test: dropping an emptied block's lines left a note with no adopted id, which
# read the id after it as the note's own id, or as a block of the empty list item above it.
@example("^-\n<!--aclarai:id=blk-1-->\n^blk-1\n<!--aclarai:id=a-->", {})
@example("-\n<!--aclarai:id=blk-1-->\n^blk-1\n<!--aclarai:id=a-->", {})
def test_rewrite_keeps_blocks_texts_hashes_and_header(
    text: str, scores: Mapping[str, Mapping[str, float | None]]
) -> None:
    before = parse_note(text)
    result = apply_scores(text, scores)
    after = parse_note(result.text)
    assert seen(after) == seen(before)
    assert after.metadata == before.metadata
    assert after.file_id == before.file_id
    for block in after.blocks:
        old = next(b for b in before.blocks if b.id == block.id)
        assert block.version == result.versions.get(block.id, old.version)
        if block.id in result.skipped:
            continue
        for name, value in scores.get(block.id, {}).items():
            if value is not None:
                assert block.scores[name] == float(format_score_value(value))


@settings(max_examples=300, deadline=None)
@given(notes(), score_sets)
def test_rewrite_is_idempotent(text: str, scores: Mapping[str, Mapping[str, float | None]]) -> None:
    once = apply_scores(text, scores)
    twice = apply_scores(once.text, scores)
    assert twice.text == once.text
    assert twice.versions == {}


def _identity(text: str) -> tuple[str | None, list[tuple[str, str]]]:
    note = scan_note(text).note
    return note.file_id, [(b.id, b.hash) for b in note.blocks]


@settings(max_examples=300, deadline=None)
@given(notes(), score_sets)
# Found by this test: dropping the emptied block's score comment would make the id below it the
# note's own, so the lines stay.
@example("<!-- aclarai:entailed_score=0.000 -->\n<!--aclarai:id=a-->\n^a", {})
def test_rewrite_never_changes_non_aclarai_text(
    text: str, scores: Mapping[str, Mapping[str, float | None]]
) -> None:
    result = apply_scores(text, scores)
    # An adopted note's emptied blocks leave nothing behind, their own ^anchor included, unless
    # dropping them would change the note's own id or its blocks.
    dropped = drop_emptied(text, scan_note(text))
    expected = dropped if _identity(dropped) == _identity(text) else text
    assert without_aclarai_comments(result.text) == without_aclarai_comments(expected)
    if not result.changed:
        assert result.text == expected
