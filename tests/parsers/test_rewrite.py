"""Score write-back: one comment per score under the id, ver bumped once, every other byte kept."""

from __future__ import annotations

import math

import pytest

from aclarai.parsers import RewriteResult, apply_scores, parse_note

ALL = {"entailed_score": 0.91, "coverage_score": 0.5, "decontextualization_score": 0.333}

SPEC_NOTE = (
    "<!-- aclarai:title=Standup 2024-06-03 -->\n"
    "\n"
    "alice: The deploy to staging failed twice on Tuesday.\n"
    "It failed again this morning.\n"
    "<!-- aclarai:id=blk-q1w2e3 ver=1 -->\n"
    "^blk-q1w2e3\n"
    "\n"
    "bob: I rolled back to v2.3 and it is stable now. <!-- aclarai:id=blk_r4t5y6 ver=3 -->\n"
    "^blk_r4t5y6\n"
)


def note(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_spec_example_gets_scores_in_order_and_ver_bumped() -> None:
    result = apply_scores(
        SPEC_NOTE,
        {"blk-q1w2e3": ALL, "blk_r4t5y6": {"coverage_score": 0.25, "entailed_score": None}},
    )
    assert result.text == (
        "<!-- aclarai:title=Standup 2024-06-03 -->\n"
        "\n"
        "alice: The deploy to staging failed twice on Tuesday.\n"
        "It failed again this morning.\n"
        "<!-- aclarai:id=blk-q1w2e3 ver=2 -->\n"
        "<!-- aclarai:entailed_score=0.91 -->\n"
        "<!-- aclarai:coverage_score=0.50 -->\n"
        "<!-- aclarai:decontextualization_score=0.33 -->\n"
        "^blk-q1w2e3\n"
        "\n"
        "bob: I rolled back to v2.3 and it is stable now. <!-- aclarai:id=blk_r4t5y6 ver=4 -->\n"
        "<!-- aclarai:coverage_score=0.25 -->\n"
        "^blk_r4t5y6\n"
    )
    assert result.versions == {"blk-q1w2e3": 2, "blk_r4t5y6": 4}
    assert result.changed == ("blk-q1w2e3", "blk_r4t5y6")
    assert result.missing == ()
    reparsed = parse_note(result.text)
    assert reparsed.blocks[0].scores == {
        "entailed_score": 0.91,
        "coverage_score": 0.5,
        "decontextualization_score": 0.33,
    }
    assert reparsed.blocks[1].version == 4


def test_second_application_changes_nothing_and_bumps_nothing() -> None:
    once = apply_scores(SPEC_NOTE, {"blk-q1w2e3": ALL})
    twice = apply_scores(once.text, {"blk-q1w2e3": ALL})
    assert twice == RewriteResult(once.text, {}, (), ())


def test_same_values_at_two_decimals_is_no_change() -> None:
    text = note(
        "hi",
        "<!-- aclarai:id=a ver=5 -->",
        "<!--aclarai:entailed_score=0.910-->",
        "<!-- aclarai:coverage_score=0.5 -->",
        "^a",
    )
    result = apply_scores(text, {"a": {"entailed_score": 0.9149, "coverage_score": 0.5}})
    assert result.text is text
    assert result.versions == {}


def test_existing_comments_are_replaced_never_stacked() -> None:
    text = note(
        "hi <!-- aclarai:id=a ver=2 -->",
        "<!-- aclarai:entailed_score=0.10 -->",
        "<!-- aclarai:entailed_score=0.20 -->",
        "<!-- aclarai:coverage_score=oops -->",
        "^a",
        "<!-- aclarai:reviewed=yes -->",
    )
    result = apply_scores(text, {"a": {"entailed_score": 0.3, "coverage_score": 0.4}})
    assert result.text == note(
        "hi <!-- aclarai:id=a ver=3 -->",
        "<!-- aclarai:entailed_score=0.30 -->",
        "<!-- aclarai:coverage_score=0.40 -->",
        "^a",
        "<!-- aclarai:reviewed=yes -->",
    )


def test_null_score_writes_none_and_removes_none() -> None:
    text = note(
        "hi",
        "<!-- aclarai:id=a -->",
        "^a",
        "<!-- aclarai:coverage_score=0.70 -->",
        "<!-- aclarai:coverage_score=bad -->",
    )
    result = apply_scores(text, {"a": {"entailed_score": 0.2, "coverage_score": None}})
    assert result.text == note(
        "hi",
        "<!-- aclarai:id=a ver=2 -->",
        "<!-- aclarai:entailed_score=0.20 -->",
        "<!-- aclarai:coverage_score=0.70 -->",
        "<!-- aclarai:coverage_score=bad -->",
        "^a",
    )
    all_null = apply_scores(result.text, {"a": dict.fromkeys(ALL)})
    assert all_null.text is result.text
    assert all_null.versions == {}


def test_reordering_alone_is_a_change() -> None:
    text = note(
        "hi <!-- aclarai:id=a -->",
        "^a",
        "<!-- aclarai:coverage_score=0.40 -->",
        "<!-- aclarai:entailed_score=0.30 -->",
    )
    result = apply_scores(text, {"a": {"entailed_score": 0.3, "coverage_score": 0.4}})
    assert result.text == note(
        "hi <!-- aclarai:id=a ver=2 -->",
        "<!-- aclarai:entailed_score=0.30 -->",
        "<!-- aclarai:coverage_score=0.40 -->",
        "^a",
    )


def test_legacy_lines_above_move_below_and_others_stay() -> None:
    text = note(
        "alice: hi",
        "<!-- aclarai:coverage_score=0.11 -->",
        "<!-- aclarai:entailed_score=0.10 -->",
        "<!-- aclarai:id=a ver=1 -->",
        "^a",
    )
    result = apply_scores(text, {"a": {"entailed_score": 0.1}})
    assert result.text == note(
        "alice: hi",
        "<!-- aclarai:coverage_score=0.11 -->",
        "<!-- aclarai:id=a ver=2 -->",
        "<!-- aclarai:entailed_score=0.10 -->",
        "^a",
    )
    again = apply_scores(result.text, {"a": {"entailed_score": 0.1}})
    assert again.versions == {}
    assert parse_note(result.text).blocks[0].scores == {
        "coverage_score": 0.11,
        "entailed_score": 0.1,
    }


def test_inline_layout_keeps_the_text_before_the_comment_byte_for_byte() -> None:
    text = "  bob:\tsaid  so   <!--ACLARAI:id=b_1   VER=7-->  \nnext\n"
    result = apply_scores(text, {"b_1": {"entailed_score": 1.4}})
    assert result.text == (
        "  bob:\tsaid  so   <!-- aclarai:id=b_1 ver=8 -->  \n"
        "  <!-- aclarai:entailed_score=1.00 -->\n"
        "next\n"
    )


def test_missing_ver_becomes_two_and_own_line_indentation_is_copied() -> None:
    text = note("- alice: item", "  <!-- aclarai:id=a -->", "  ^a")
    result = apply_scores(text, {"a": {"coverage_score": 0.0}})
    assert result.text == note(
        "- alice: item",
        "  <!-- aclarai:id=a ver=2 -->",
        "  <!-- aclarai:coverage_score=0.00 -->",
        "  ^a",
    )
    assert result.versions == {"a": 2}


def test_crlf_new_lines_use_crlf_and_everything_else_is_kept() -> None:
    text = SPEC_NOTE.replace("\n", "\r\n")
    result = apply_scores(text, {"blk-q1w2e3": {"entailed_score": 0.5}})
    assert result.text == (
        apply_scores(SPEC_NOTE, {"blk-q1w2e3": {"entailed_score": 0.5}}).text.replace("\n", "\r\n")
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "hi\n<!-- aclarai:id=a -->",
            "hi\n<!-- aclarai:id=a ver=2 -->\n<!-- aclarai:entailed_score=0.50 -->",
        ),
        (
            "hi\r\n<!-- aclarai:id=a -->\r\n^a",
            "hi\r\n<!-- aclarai:id=a ver=2 -->\r\n<!-- aclarai:entailed_score=0.50 -->\r\n^a",
        ),
        (
            "hi <!-- aclarai:id=a -->\n<!-- aclarai:entailed_score=0.1 -->",
            "hi <!-- aclarai:id=a ver=2 -->\n<!-- aclarai:entailed_score=0.50 -->",
        ),
    ],
)
def test_missing_final_newline_stays_missing(text: str, expected: str) -> None:
    assert apply_scores(text, {"a": {"entailed_score": 0.5}}).text == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "hi\r\n<!-- aclarai:id=a -->\r",
            "hi\r\n<!-- aclarai:id=a ver=2 -->\r\n<!-- aclarai:entailed_score=0.50 -->\r",
        ),
        (
            "hi <!-- aclarai:id=a -->\r\n^a\r",
            "hi <!-- aclarai:id=a ver=2 -->\r\n<!-- aclarai:entailed_score=0.50 -->\r\n^a\r",
        ),
        (
            "hi\n<!-- aclarai:id=a -->\r",
            "hi\n<!-- aclarai:id=a ver=2 -->\n<!-- aclarai:entailed_score=0.50 -->\r",
        ),
    ],
)
def test_final_lone_cr_is_kept(text: str, expected: str) -> None:
    assert apply_scores(text, {"a": {"entailed_score": 0.5}}).text == expected


def test_mixed_line_endings_of_kept_lines_are_kept() -> None:
    text = "hi\r\n<!-- aclarai:id=a -->\n^a\r\nnext\n"
    result = apply_scores(text, {"a": {"entailed_score": 0.5}})
    assert result.text == (
        "hi\r\n<!-- aclarai:id=a ver=2 -->\n<!-- aclarai:entailed_score=0.50 -->\r\n^a\r\nnext\n"
    )


def test_bytes_outside_the_touched_comments_are_kept() -> None:
    text = (
        "---\ntitle: x   \n---\n"
        "<!-- aclarai:title=T -->\n"
        "\n"
        "alice: hi   \n"
        "<!-- ordinary comment -->  \n"
        "<!-- aclarai:id=a ver=1 -->\n"
        "^a\t\n"
        "\n\n"
        "tail text  "
    )
    result = apply_scores(text, {"a": {"decontextualization_score": 0.75}})
    assert result.text == text.replace(
        "<!-- aclarai:id=a ver=1 -->\n",
        "<!-- aclarai:id=a ver=2 -->\n<!-- aclarai:decontextualization_score=0.75 -->\n",
    )


def test_blocks_in_code_fences_duplicates_and_unknown_ids_are_untouched() -> None:
    text = note(
        "```",
        "code <!-- aclarai:id=fenced -->",
        "```",
        "one <!-- aclarai:id=a -->",
        "two <!-- aclarai:id=a -->",
        "<!-- aclarai:id=empty -->",
        "three <!-- aclarai:id=c -->",
    )
    scores = {k: {"entailed_score": 0.5} for k in ("fenced", "a", "nowhere", "empty")}
    result = apply_scores(text, scores)
    assert result.text == text.replace(
        "one <!-- aclarai:id=a -->\n",
        "one <!-- aclarai:id=a ver=2 -->\n<!-- aclarai:entailed_score=0.50 -->\n",
    )
    assert result.changed == ("a",)
    assert result.missing == ("fenced", "nowhere", "empty")


def test_empty_scores_change_nothing() -> None:
    assert apply_scores(SPEC_NOTE, {}) == RewriteResult(SPEC_NOTE)
    assert apply_scores(SPEC_NOTE, {"blk-q1w2e3": {}}).text is SPEC_NOTE


def test_misuse_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown score name"):
        apply_scores(SPEC_NOTE, {"blk-q1w2e3": {"fluency": 0.5}})
    with pytest.raises(ValueError, match="NaN"):
        apply_scores(SPEC_NOTE, {"blk-q1w2e3": {"entailed_score": math.nan}})


def test_deep_indentation_is_copied_when_it_reads_back() -> None:
    text = note(
        "1.  alice: item",
        "    <!-- aclarai:id=a -->",
        "    ^a",
        "text",
        "    lazy <!-- aclarai:id=b -->",
    )
    result = apply_scores(text, {"a": {"entailed_score": 0.5}, "b": {"coverage_score": 0.25}})
    assert result.text == note(
        "1.  alice: item",
        "    <!-- aclarai:id=a ver=2 -->",
        "    <!-- aclarai:entailed_score=0.50 -->",
        "    ^a",
        "text",
        "    lazy <!-- aclarai:id=b ver=2 -->",
        "    <!-- aclarai:coverage_score=0.25 -->",
    )
    assert result.skipped == ()


def test_deep_indentation_that_would_make_code_falls_back_to_column_zero() -> None:
    # The unterminated comment opens an HTML block that the id line closes; a comment line
    # indented like the id line would then be indented code, invisible to the parser.
    text = note("<!-- aclarai:id=q ver=1", "    <!--aclarai:id=a-->")
    result = apply_scores(text, {"a": {"entailed_score": 0.5}})
    assert result.text == note(
        "<!-- aclarai:id=q ver=1",
        "    <!-- aclarai:id=a ver=2 -->",
        "<!-- aclarai:entailed_score=0.50 -->",
    )
    assert parse_note(result.text).blocks[0].scores == {"entailed_score": 0.5}
    assert result.skipped == ()


def test_block_whose_comments_would_change_the_parse_is_skipped() -> None:
    # A comment line after "x" would turn the lazily continued, tab-indented line into
    # indented code and block "a" would vanish, so block "b" is left alone.
    text = note("x <!-- aclarai:id=b -->", "\tcode <!-- aclarai:id=a -->")
    result = apply_scores(text, {"b": {"entailed_score": 0.5}, "a": {"entailed_score": 0.5}})
    assert result.text == note(
        "x <!-- aclarai:id=b -->",
        "\tcode <!-- aclarai:id=a ver=2 -->",
        "\t<!-- aclarai:entailed_score=0.50 -->",
    )
    assert result.skipped == ("b",)
    assert result.changed == ("a",)
    assert [b.id for b in parse_note(result.text).blocks] == ["b", "a"]
    alone = apply_scores(text, {"b": {"entailed_score": 0.5}})
    assert alone == RewriteResult(text, {}, (), (), ("b",))


def test_block_whose_comments_would_hide_the_file_id_is_skipped() -> None:
    text = note("x <!-- aclarai:id=a -->", "\t<!-- aclarai:id=file-1 -->")
    assert parse_note(text).file_id == "file-1"
    result = apply_scores(text, {"a": {"entailed_score": 0.5}})
    assert result == RewriteResult(text, {}, (), (), ("a",))


def test_kept_score_moves_above_the_anchor() -> None:
    text = note(
        "hi <!-- aclarai:id=a -->",
        "<!-- aclarai:entailed_score=0.50 -->",
        "^a",
        "<!-- aclarai:coverage_score=0.30 -->",
    )
    result = apply_scores(text, {"a": {"entailed_score": 0.5}})
    assert result.text == note(
        "hi <!-- aclarai:id=a ver=2 -->",
        "<!-- aclarai:entailed_score=0.50 -->",
        "<!-- aclarai:coverage_score=0.30 -->",
        "^a",
    )


SCORED_NOTE = note(
    "alice: The job takes 600 seconds on the Frankfurt cluster.",
    "<!-- aclarai:entailed_score=1.00 -->",
    "<!-- aclarai:id=a ver=2 -->",
    "<!-- aclarai:coverage_score=0.90 -->",
    "<!-- aclarai:decontextualization_score=0.80 -->",
    "^a",
)


def test_an_edited_block_scored_the_same_is_rewritten_with_one_ver_bump() -> None:
    same = {"entailed_score": 1.0, "coverage_score": 0.9, "decontextualization_score": 0.8}
    assert apply_scores(SCORED_NOTE, {"a": same}).versions == {"a": 3}, "the legacy line moves"
    settled = apply_scores(SCORED_NOTE, {"a": same}).text
    assert apply_scores(settled, {"a": same}).versions == {}

    result = apply_scores(settled, {"a": same}, edited={"a"})

    assert result.versions == {"a": 4}
    assert result.text == settled.replace("ver=3", "ver=4")
    assert apply_scores(result.text, {"a": same}).versions == {}


def test_an_edited_block_without_new_scores_loses_its_old_comments_legacy_ones_too() -> None:
    result = apply_scores(
        SCORED_NOTE,
        {"a": {"entailed_score": None, "coverage_score": 0.5, "decontextualization_score": None}},
        edited={"a"},
    )
    assert result.text == note(
        "alice: The job takes 600 seconds on the Frankfurt cluster.",
        "<!-- aclarai:id=a ver=3 -->",
        "<!-- aclarai:coverage_score=0.50 -->",
        "^a",
    )
    gone = apply_scores(SCORED_NOTE, {"a": dict.fromkeys(ALL)}, edited={"a"})
    assert parse_note(gone.text).blocks[0].scores == {}
    assert gone.versions == {"a": 3}
    assert apply_scores(gone.text, {"a": dict.fromkeys(ALL)}, edited={"a"}).versions == {}


def test_an_edited_block_with_nothing_to_say_about_scores_is_left_alone() -> None:
    text = note("alice: hello there", "<!-- aclarai:id=a ver=1 -->", "^a")
    assert apply_scores(text, {"a": dict.fromkeys(ALL)}, edited={"a"}).text is text
    unedited = apply_scores(SCORED_NOTE, {"a": dict.fromkeys(ALL)})
    assert unedited.text is SCORED_NOTE, "a failed re-evaluation of the same text keeps them"
