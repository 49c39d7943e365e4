"""``unadopt_note``: adopt's marks out again, byte for byte (issue 21, item 10's undo)."""

from __future__ import annotations

import pytest
from hypothesis import given

from aclarai.parsers import ParseError, adopt_note, apply_scores, parse_note, unadopt_note
from tests.helpers.notes import ordinary_notes

SCORES = {"entailed_score": 0.91, "coverage_score": 0.5, "decontextualization_score": 0.07}


@given(ordinary_notes())
def test_unadopt_after_adopt_and_scores_gives_every_byte_back(text: str) -> None:
    adopted = adopt_note(text, salt="n.md")
    scored = apply_scores(adopted.text, dict.fromkeys(adopted.block_ids, SCORES)).text
    assert unadopt_note(scored).text == text
    assert unadopt_note(adopted.text).text == text


def test_unadopt_keeps_the_users_own_block_id() -> None:
    note = "The invoice was paid on 3 June. ^invoice\n\nSecond paragraph.\n"
    adopted = adopt_note(note, salt="n.md")
    assert adopted.block_ids[0] == "invoice"
    result = unadopt_note(adopted.text)
    assert result.text == note
    assert result.block_ids == adopted.block_ids
    assert "^invoice" in result.text


def test_unadopt_removes_only_adopts_lines() -> None:
    note = "Text one.\n\nText two.\n"
    adopted = adopt_note(note, salt="n.md").text
    first = parse_note(adopted).blocks[0].id
    # A comment of the user's and an anchor of the user's inside the zone stay.
    edited = adopted.replace(f"^{first}\n", f"^{first}\n^mine\n<!-- aclarai:reviewed=yes -->\n")
    result = unadopt_note(edited)
    assert result.text == "Text one.\n^mine\n<!-- aclarai:reviewed=yes -->\n\nText two.\n"
    assert result.lines_removed == 4


def test_unadopt_of_a_note_without_marks_changes_nothing() -> None:
    assert unadopt_note("# Plain\n\nA note.\n").text == "# Plain\n\nA note.\n"


def test_unadopt_refuses_a_conversation_note() -> None:
    note = "<!-- aclarai:title=Standup -->\n\nalice: Hi.\n<!-- aclarai:id=blk_a ver=1 -->\n^blk_a\n"
    with pytest.raises(ParseError, match="conversation"):
        unadopt_note(note)


def test_a_note_adopted_with_only_the_users_own_id_is_adopted() -> None:
    adopted = adopt_note("The invoice was paid on 3 June. ^invoice\n", salt="n.md").text
    assert (
        adopted == "The invoice was paid on 3 June. ^invoice\n<!-- aclarai:id=invoice ver=1 -->\n"
    )
    assert parse_note(adopted).adopted
    assert unadopt_note(adopted).text == "The invoice was paid on 3 June. ^invoice\n"


@pytest.mark.parametrize(
    ("note", "why"),
    [
        (
            "alice: Hi. <!-- aclarai:id=blk_a -->\n\nbob: Bye. <!-- aclarai:id=blk_b -->\n",
            "not made",
        ),
        (
            "Text one.\n<!-- aclarai:id=blk-a ver=1 -->\n^blk-a\n\n"
            "More. <!-- aclarai:id=blk-b -->\n",
            "shares",
        ),
    ],
)
def test_unadopt_refuses_blocks_adopt_did_not_make(note: str, why: str) -> None:
    with pytest.raises(ParseError, match=why):
        unadopt_note(note)


def test_unadopt_of_a_note_adopt_marked_with_block_start_lines() -> None:
    # How adopt marked a paragraph after a heading before adopted notes kept one per block.
    adopted = (
        "# T\r\n\r\n<!-- aclarai:block=start -->\r\nOne claim here.\r\n"
        "<!-- aclarai:id=blk-1 ver=2 -->\r\n<!-- aclarai:entailed_score=0.80 -->\r\n^blk-1\r\n\r\n"
        "Another one.\r\n<!-- aclarai:id=blk-2 ver=1 -->\r\n^blk-2"
    )
    assert parse_note(adopted).adopted
    result = unadopt_note(adopted)
    assert result.text == "# T\r\n\r\nOne claim here.\r\n\r\nAnother one."
    assert result.block_ids == ("blk-1", "blk-2")
    assert result.lines_removed == 6


def test_unadopt_keeps_an_id_comment_and_anchor_the_user_wrote() -> None:
    handwritten = "Summary text.\n<!-- aclarai:id=summary ver=1 -->\n^summary\n"
    adopted = "Other.\n<!-- aclarai:id=blk-0123456789abcdef ver=2 -->\n^blk-0123456789abcdef\n"
    scored = "<!-- aclarai:entailed_score=0.50 -->\n"
    note = f"# T\n\n{handwritten.replace('^summary', scored + '^summary')}\n{adopted}"

    result = unadopt_note(note)

    assert result.text == f"# T\n\n{handwritten}\nOther.\n"
    assert result.block_ids == ("blk-0123456789abcdef",)
