"""Issue 21, items 4 and 5 in the pure text functions: what adopt never marks, and adopted notes
that their user goes on editing (a paragraph typed between two blocks, a paragraph deleted)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hypothesis import assume, given
from hypothesis import strategies as st

from aclarai.parsers import (
    ParseError,
    adopt_note,
    apply_scores,
    drop_emptied,
    parse_note,
    scan_note,
    unmarked_paragraphs,
)
from tests.helpers.notes import ordinary_notes

NEW = "A paragraph typed later about the Lisbon office."


def texts(text: str) -> list[str]:
    return [block.text for block in parse_note(text).blocks]


def test_adopt_skips_empty_list_item() -> None:
    note = "- \n- Dana fixes the flaky load test.\n-\n- [ ] \n"
    result = adopt_note(note, salt="list.md")
    assert texts(result.text) == ["- Dana fixes the flaky load test."]
    (block_id,) = result.block_ids
    assert result.text == (
        "- \n- Dana fixes the flaky load test.\n"
        f"  <!-- aclarai:id={block_id} ver=1 -->\n  ^{block_id}\n-\n- [ ] \n"
    )


def test_adopt_skips_math_block_with_blank_line() -> None:
    math = "$$\n\\begin{aligned}\na &= b + c\n\nd &= e\n\\end{aligned}\n$$"
    note = f"The energy balance holds.\n\n{math}\n\nIt was checked twice.\n"
    result = adopt_note(note, salt="math.md")
    assert texts(result.text) == ["The energy balance holds.", "It was checked twice."]
    # Every line of the math block is still there, in a row, with nothing put between.
    assert math in result.text


def test_adopt_skips_percent_comment() -> None:
    hidden = "%%\nA draft paragraph Obsidian hides.\n\nAnother hidden one.\n%%"
    note = f"Shown text.\n\n{hidden}\n\n%%a one-line comment%%\n\nA %%half hidden%% sentence.\n"
    result = adopt_note(note, salt="comments.md")
    assert texts(result.text) == ["Shown text.", "A %%half hidden%% sentence."]
    assert hidden in result.text
    assert "%%a one-line comment%%\n\n" in result.text


def test_adopt_heading_after_bom() -> None:
    note = "\ufeff# Trip to Lisbon\n\nWe flew out on 3 May with two colleagues.\n"
    result = adopt_note(note, salt="trip.md")
    (block_id,) = result.block_ids
    assert result.text == (
        "\ufeff# Trip to Lisbon\n\nWe flew out on 3 May with two colleagues.\n"
        f"<!-- aclarai:id={block_id} ver=1 -->\n^{block_id}\n"
    )
    assert texts(result.text) == ["We flew out on 3 May with two colleagues."]


ADOPTED = adopt_note(
    "# Retro\n\nThe release slipped by two days.\n\nThe load test failed on Friday.\n\n"
    "- Dana fixes the test.\n- Bob reviews the fix.\n",
    salt="retro.md",
)


def test_new_paragraph_between_adopted_is_own_block() -> None:
    first, second, dana, bob = ADOPTED.block_ids
    edited = ADOPTED.text.replace(
        "\nThe load test failed", "\nA new paragraph about Paris.\n\nThe load test failed"
    ).replace("- Bob reviews", "- Erin writes the notes.\n- Bob reviews")
    layout = scan_note(edited)
    assert layout.note.adopted
    # Never merged into the next block, covered by adopt.folders or not.
    assert [(b.id, b.text) for b in layout.note.blocks] == [
        (first, "The release slipped by two days."),
        (second, "The load test failed on Friday."),
        (dana, "- Dana fixes the test."),
        (bob, "- Bob reviews the fix."),
    ]
    lines = edited.split("\n")
    assert [lines[i] for i in layout.unclaimed] == [
        "# Retro",
        "A new paragraph about Paris.",
        "- Erin writes the notes.",
    ]
    # Adopting again (what resync and the daemon do under adopt.folders) gives each its own id.
    again = adopt_note(edited, salt="retro.md")
    assert len(again.block_ids) == 2
    blocks = {b.id: b.text for b in parse_note(again.text).blocks}
    assert blocks[again.block_ids[0]] == "A new paragraph about Paris."
    assert blocks[again.block_ids[1]] == "- Erin writes the notes."
    assert {first, second, dana, bob} <= set(blocks)
    assert adopt_note(again.text, salt="retro.md").text == again.text


def test_emptied_block_lines_go() -> None:
    first, second, dana, bob = ADOPTED.block_ids
    scored = apply_scores(
        ADOPTED.text,
        {bid: {"entailed_score": 0.9, "coverage_score": 0.8} for bid in ADOPTED.block_ids},
    ).text
    emptied = scored.replace("The load test failed on Friday.\n", "")
    layout = scan_note(emptied)
    assert [m.block_id for m in layout.markers if m.emptied] == [second]
    assert layout.note.file_id is None
    # The next write of the note (scores for another block) takes the orphan's lines out …
    rewritten = apply_scores(emptied, {first: {"entailed_score": 0.5}})
    assert rewritten.layout is not None
    assert second not in rewritten.text
    assert not [m for m in rewritten.layout.markers if m.emptied]
    # … and so does a write with nothing else to say, and adopting the note again.
    for text in (apply_scores(emptied, {}).text, adopt_note(emptied, salt="retro.md").text):
        assert second not in text
        assert [b.id for b in parse_note(text).blocks] == [first, dana, bob]
        assert text.replace("\n\n\n", "\n\n") == scored.replace(
            re.search(r"\nThe load test failed on Friday\.\n(?:.*\n){5}", scored).group(0),
            "\n",
        ).replace("\n\n\n", "\n\n")


def test_emptied_block_keeps_the_users_own_anchors() -> None:
    note = "- one\n- two\n\n^my-list\n\nA paragraph to delete.\n"
    adopted = adopt_note(note, salt="a.md")
    last = adopted.block_ids[-1]
    with_own = adopted.text.replace(f"^{last}\n", f"^{last}\n^my-paragraph\n")
    emptied = with_own.replace("A paragraph to delete.\n", "")
    tidied = apply_scores(emptied, {}).text
    assert last not in tidied
    assert "\n^my-list\n" in tidied
    assert "\n^my-paragraph\n" in tidied


def test_tier1_utterance_rule_kept() -> None:
    note = (
        "<!-- aclarai:title=Standup -->\n\n"
        "alice: The deploy failed twice.\n\nIt failed again this morning.\n"
        "<!-- aclarai:id=blk_a ver=1 -->\n^blk_a\n\n"
        "bob: I rolled back.\n<!-- aclarai:id=blk_b ver=1 -->\n^blk_b\n\n"
        "<!-- aclarai:id=blk_e ver=1 -->\n^blk_e\n\n"
        "<!-- aclarai:id=blk_c ver=1 -->\n^blk_c\n"
    )
    parsed = parse_note(note)
    assert not parsed.adopted
    # An utterance's empty id is reported and left where it is: only adopt's lines go.
    assert [p.kind.value for p in parsed.problems] == ["empty_block"]
    assert texts(note) == [
        "alice: The deploy failed twice.\n\nIt failed again this morning.",
        "bob: I rolled back.",
    ]
    # A conversation's trailing id with no text is still its file-level id, not an emptied block.
    assert parsed.file_id == "blk_c"
    assert apply_scores(note, {}).text == note


@given(ordinary_notes(), st.data())
def test_a_paragraph_typed_after_any_block_is_its_own(text: str, data: st.DataObject) -> None:
    adopted = adopt_note(text, salt="n.md").text
    layout = scan_note(adopted)
    markers = [m for m in layout.markers if m.block is not None]
    assume(markers)
    marker = data.draw(st.sampled_from(markers))
    end = marker.index + 1 + len(marker.below)
    cr = "\r" if layout.lines[0].endswith("\r") else ""
    typed = f"{cr}\n{NEW}{cr}\n{cr}"
    edited = "\n".join([*layout.lines[:end], typed, *layout.lines[end:]])
    before = [(b.id, b.text) for b in layout.note.blocks]
    assert [(b.id, b.text) for b in parse_note(edited).blocks] == before
    again = adopt_note(edited, salt="n.md")
    blocks = parse_note(again.text).blocks
    assert [b.text for b in blocks if b.id in again.block_ids] == [NEW]
    assert [(b.id, b.text) for b in blocks if b.id not in again.block_ids] == before


def test_enter_after_an_adopted_paragraph_keeps_its_id() -> None:
    first, second, dana, bob = ADOPTED.block_ids
    edited = ADOPTED.text.replace(
        "The load test failed on Friday.\n", "The load test failed on Friday.\n\n"
    )
    layout = scan_note(edited)
    assert [m.block_id for m in layout.markers if m.emptied] == []
    blocks = parse_note(edited).blocks
    assert [b.id for b in blocks] == [first, second, dana, bob]
    assert blocks[1].text == "The load test failed on Friday."
    assert adopt_note(edited, salt="retro.md").block_ids == ()
    assert drop_emptied(edited, layout) == edited


def test_enter_after_an_adopted_list_item_keeps_its_id() -> None:
    first, second, dana, bob = ADOPTED.block_ids
    line = next(x for x in ADOPTED.text.splitlines() if "Dana" in x)
    edited = ADOPTED.text.replace(line + "\n", line + "\n- \n")
    blocks = parse_note(edited).blocks
    assert [b.id for b in blocks] == [first, second, dana, bob]
    assert blocks[2].text == line
    assert [m.block_id for m in scan_note(edited).markers if m.emptied] == []
    assert adopt_note(edited, salt="retro.md").block_ids == ()


ABOVE = [
    "# Costs",
    "Costs\n=====",
    "| item | price |\n| --- | --- |\n| ticket | 900 kr |",
    "```\nfares.csv\n```",
    "> [!note] Fares rose in May.",
    "![[receipt.png]]",
    "<div>fares</div>",
    "---",
]


@given(st.sampled_from(ABOVE), st.booleans())
def test_a_paragraph_deleted_after_an_element_adopt_never_marks_leaves_no_id_on_it(
    above: str, blank: bool
) -> None:
    """Issue 36: deleting the paragraph that follows a heading moved its id onto the heading.
    Whatever element was above it (and whether a blank line stays), the id is an emptied
    block's: its lines go, and the element above is no block's."""
    adopted = adopt_note(f"Intro line.\n\n{above}\n\nThe tickets cost 900 kroner.\n", salt="a.md")
    intro, tickets = adopted.block_ids
    edited = adopted.text.replace("The tickets cost 900 kroner.\n", "\n" if blank else "")
    layout = scan_note(edited)
    assert [m.block_id for m in layout.markers if m.emptied] == [tickets]
    assert [b.id for b in layout.note.blocks] == [intro]
    for tidied in (drop_emptied(edited, layout), adopt_note(edited, salt="a.md").text):
        assert tickets not in tidied
        assert above in tidied
        assert [b.id for b in parse_note(tidied).blocks] == [intro]


def test_a_paragraph_right_under_a_heading_keeps_its_id_and_its_own_text() -> None:
    adopted = adopt_note("# Costs\nThe tickets cost 900 kroner.\n", salt="a.md")
    (tickets,) = adopted.block_ids
    assert texts(adopted.text) == ["The tickets cost 900 kroner."]
    emptied = adopted.text.replace("The tickets cost 900 kroner.\n", "")
    assert [m.block_id for m in scan_note(emptied).markers if m.emptied] == [tickets]


def test_a_note_whose_paragraphs_were_all_deleted_is_still_adopted() -> None:
    """Found by the stateful test: the note's last id, left under its heading, made it read as
    a conversation, and the heading became that block's text."""
    adopted = adopt_note("# Note\n\nThe tickets cost 900 kroner.\n", salt="a.md")
    (tickets,) = adopted.block_ids
    emptied = adopted.text.replace("The tickets cost 900 kroner.\n", "")
    layout = scan_note(emptied + "\nA paragraph pasted later.\n")
    assert layout.note.adopted
    assert [m.block_id for m in layout.markers if m.emptied] == [tickets]
    assert layout.note.blocks == ()
    # With nothing after it, a lone id is still a note's file-level id, as in a conversation.
    assert parse_note("text <!-- aclarai:id=a -->\n\n<!-- aclarai:id=f -->\n^f\n").file_id == "f"


def test_a_paragraph_adopted_again_never_gets_the_id_it_took_elsewhere() -> None:
    """Found by the stateful test: a paragraph moved with its id to another note, and its text
    typed back later, got the same id again (from the same note, text and position), so the
    block moved back under it found the id taken and was skipped as a duplicate."""
    note = "# Note\n\nDana moved the database migration to Friday.\n"
    (first,) = adopt_note(note, salt="a.md").block_ids
    (again,) = adopt_note(note + "\nAlice agreed.\n", salt="a.md").block_ids[:1]
    assert again != first
    asked: list[list[str]] = []

    def in_use(ids: Sequence[str]) -> set[str]:
        asked.append(list(ids))
        return {first} & set(ids)

    (avoided,) = adopt_note(note, salt="a.md", in_use=in_use).block_ids
    assert avoided != first
    assert asked == [[first], [avoided]], "asked once for the new ids, then for the one made anew"
    assert adopt_note(note, salt="a.md").block_ids == (first,), "the same note, the same id"


@given(ordinary_notes(), ordinary_notes(), st.data())
def test_the_paragraphs_counted_without_an_id_are_those_adopt_marks(
    text: str, typed: str, data: st.DataObject
) -> None:
    """``unmarked_paragraphs`` (what status counts, and what has resync and the daemon adopt a
    note again) says what adopt_note would mark, its quick answer included."""
    adopted = adopt_note(text, salt="n.md").text
    lines = adopted.split("\n")
    at = data.draw(st.integers(0, len(lines)))
    edited = "\n".join([*lines[:at], "", *typed.split("\n"), "", *lines[at:]])
    layout = scan_note(edited)
    assume(layout.note.adopted)
    try:
        marked = len(adopt_note(edited, salt="n.md").block_ids)
    except ParseError:
        return
    assert unmarked_paragraphs(layout) == marked
