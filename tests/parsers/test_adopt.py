"""Adopting ordinary notes: prose becomes blocks, everything else is left exactly as it was."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from aclarai.parsers import ParseError, adopt_note, parse_note

NOTE = """---
tags: [ops]
---
# Incident review

The deploy failed twice on Tuesday.
It failed again this morning.

- Alice owns the fix.
- Bob reviews it ^bob-1
  - nested detail

```python
print("not a block")
```

| day | failures |
|-----|----------|
| Tue | 2        |

> [!note]
> A callout stays a callout.

![[diagram.png]]

<div>raw html</div>

---

The migration 0042 times out after 300 seconds. ^migration-timeout
"""


def test_prose_and_list_items_become_blocks_and_nothing_else() -> None:
    result = adopt_note(NOTE, salt="review.md")
    note = parse_note(result.text)
    assert not note.problems
    assert [b.text for b in note.blocks] == [
        "The deploy failed twice on Tuesday.\nIt failed again this morning.",
        "- Alice owns the fix.",
        "- Bob reviews it ^bob-1\n  - nested detail",
        "The migration 0042 times out after 300 seconds. ^migration-timeout",
    ]
    assert [b.id for b in note.blocks] == list(result.block_ids)
    assert result.block_ids[3] == "migration-timeout"
    assert all(re.fullmatch(r"blk-[0-9a-f]{16}", i) for i in result.block_ids[:3])
    assert note.metadata == {}
    # Only lines were added: every original line is still there, in order.
    original = NOTE.split("\n")
    added = [line for line in result.text.split("\n")]
    position = 0
    for line in original:
        position = added.index(line, position) + 1
    new_lines = [line.strip() for line in added if line not in original]
    assert all(
        line.startswith(("<!-- aclarai:id=", "^blk-", "<!-- aclarai:block=start -->"))
        for line in new_lines
    )
    assert "^migration-timeout" not in new_lines


def test_list_item_markers_stay_inside_the_item() -> None:
    result = adopt_note("1.  first point\n2.  second point\n")
    first, second = result.block_ids
    assert result.text == (
        f"1.  first point\n    <!-- aclarai:id={first} ver=1 -->\n    ^{first}\n"
        f"2.  second point\n    <!-- aclarai:id={second} ver=1 -->\n    ^{second}\n"
    )


def test_adopting_twice_changes_nothing() -> None:
    once = adopt_note(NOTE, salt="a.md").text
    assert adopt_note(once, salt="a.md").text == once
    assert adopt_note(once, salt="a.md").block_ids == ()


def test_ids_are_deterministic_and_salted() -> None:
    assert adopt_note(NOTE, salt="a.md") == adopt_note(NOTE, salt="a.md")
    assert adopt_note(NOTE, salt="a.md").block_ids[0] != adopt_note(NOTE, salt="b.md").block_ids[0]


def test_crlf_and_missing_final_newline_kept() -> None:
    text = "# T\r\n\r\nOne claim here.\r\n\r\nAnother one."
    result = adopt_note(text)
    first, second = result.block_ids
    assert result.text == (
        "# T\r\n\r\nOne claim here.\r\n"
        f"<!-- aclarai:id={first} ver=1 -->\r\n^{first}\r\n\r\n"
        f"Another one.\r\n<!-- aclarai:id={second} ver=1 -->\r\n^{second}"
    )


def test_a_tier1_note_only_gets_what_follows_its_last_block() -> None:
    tier1 = (
        "<!-- aclarai:title=Standup -->\n\n"
        "alice: The deploy failed.\n<!-- aclarai:id=blk_a1 ver=2 -->\n^blk_a1\n\n"
        "## Notes\n\nA paragraph I added.\n"
    )
    result = adopt_note(tier1)
    note = parse_note(result.text)
    assert [(b.id, b.text) for b in note.blocks] == [
        ("blk_a1", "alice: The deploy failed."),
        (result.block_ids[0], "A paragraph I added."),
    ]
    assert result.text.startswith(tier1.removesuffix("A paragraph I added.\n"))


def test_nothing_to_adopt() -> None:
    text = "# Only a heading\n\n```\ncode\n```\n"
    assert adopt_note(text).text == text


@pytest.mark.parametrize("embed", ["![[a.png]]", "![[a.png]] ![[b.pdf#page=2]]"])
def test_embed_paragraphs_are_skipped(embed: str) -> None:
    assert adopt_note(f"{embed}\n").block_ids == ()


paragraphs = st.lists(
    st.text(alphabet="abc xyz.,#>-*`|![]^\n", min_size=1, max_size=30), min_size=1, max_size=6
)


@settings(max_examples=150, deadline=None)
@given(paragraphs, st.booleans())
def test_adoption_only_adds_lines_and_is_idempotent(parts: list[str], crlf: bool) -> None:
    text = "\n\n".join(parts)
    if crlf:
        text = text.replace("\n", "\r\n")
    try:
        result = adopt_note(text, salt="p.md")
    except ParseError:
        # Markdown the adopter cannot give an id to without changing how it reads ("^-\n*": an
        # empty list item continuing a paragraph) is refused and the note left as it is; its
        # own test is below. Refusals are rare, or hypothesis would fail its health check.
        assume(False)
    remaining = iter(result.text.split("\n"))
    for line in text.split("\n"):
        assert any(candidate.rstrip("\r") == line.rstrip("\r") for candidate in remaining)
    assert adopt_note(result.text, salt="p.md").text == result.text
    assert set(result.block_ids) <= {b.id for b in parse_note(result.text).blocks}


def test_markdown_an_id_would_change_is_refused_and_left_as_it_is() -> None:
    with pytest.raises(ParseError, match="the note is left as it is"):
        adopt_note("^-\n*\n", salt="p.md")


@pytest.mark.parametrize("text", ["^a", "^a\n^b\n", "Intro.\n\n^a\n", "- ^a\n- item\n"])
def test_a_paragraph_of_anchor_lines_alone_is_not_adopted(text: str) -> None:
    result = adopt_note(text, salt="p.md")
    assert "^a" in result.text
    assert set(result.block_ids) == {b.id for b in parse_note(result.text).blocks}
    assert adopt_note(result.text, salt="p.md").text == result.text
