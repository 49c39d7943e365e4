"""Tier 1 notes → blocks: utterances, headers, code, and every kind of bad input."""

from __future__ import annotations

import pytest

from aclarai.parsers import (
    ParsedNote,
    ParseError,
    ProblemKind,
    content_hash,
    decode_note,
    parse_note,
)

SPEC_NOTE = (
    "<!-- aclarai:title=Standup 2024-06-03 -->\n"
    "<!-- aclarai:created_at=2024-06-03T09:00:00Z -->\n"
    '<!-- aclarai:participants=["alice", "bob"] -->\n'
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


def texts(parsed: ParsedNote) -> dict[str, str]:
    return {block.id: block.text for block in parsed.blocks}


def kinds(parsed: ParsedNote) -> list[tuple[ProblemKind, int]]:
    return [(problem.kind, problem.line) for problem in parsed.problems]


def test_spec_example() -> None:
    parsed = parse_note(SPEC_NOTE)
    assert parsed.metadata == {
        "title": "Standup 2024-06-03",
        "created_at": "2024-06-03T09:00:00Z",
        "participants": ["alice", "bob"],
    }
    first, second = parsed.blocks
    assert (first.id, first.version, first.line) == ("blk-q1w2e3", 1, 7)
    assert first.text == (
        "alice: The deploy to staging failed twice on Tuesday.\nIt failed again this morning."
    )
    assert (second.id, second.version, second.line) == ("blk_r4t5y6", 3, 10)
    assert second.text == "bob: I rolled back to v2.3 and it is stable now."
    assert first.hash == content_hash(first.text)
    assert second.hash == content_hash(second.text)
    assert parsed.problems == ()
    assert parsed.file_id is None
    assert parsed.has_markers


def test_missing_ver_means_one_and_whitespace_is_free() -> None:
    parsed = parse_note(note("hello", "<!--   ACLARAI:id=blk-1\t-->"))
    assert [(b.id, b.version) for b in parsed.blocks] == [("blk-1", 1)]


def test_whole_utterance_runs_from_previous_zone_including_paragraphs() -> None:
    parsed = parse_note(
        note(
            "one <!-- aclarai:id=a -->",
            "<!-- aclarai:entailed_score=0.50 -->",
            "^a",
            "",
            "",
            "# Heading kept",
            "",
            "para one",
            "",
            "para two   ",
            "",
            "<!-- aclarai:id=b -->",
            "trailing text without an id is no block",
        )
    )
    assert texts(parsed) == {"a": "one", "b": "# Heading kept\n\npara one\n\npara two   "}
    assert parsed.problems == ()


def test_hash_ignores_whitespace_reflow_but_not_words() -> None:
    wrapped = parse_note(note("alice: one two", "three", "<!-- aclarai:id=a -->")).blocks[0]
    flat = parse_note(note("alice:   one two three <!-- aclarai:id=a ver=9 -->")).blocks[0]
    other = parse_note(note("alice: one two four <!-- aclarai:id=a -->")).blocks[0]
    assert wrapped.hash == flat.hash
    assert wrapped.hash != other.hash


def test_comments_and_anchors_inside_an_utterance_are_dropped() -> None:
    parsed = parse_note(
        note(
            "first line",
            "<!-- aclarai:title=not header -->",
            "^stray-anchor",
            "middle <!-- aclarai:note=x --> end",
            "x^2 stays, <!-- plain comment --> stays",
            "<!-- aclarai:id=a ver=2 -->",
        )
    )
    assert texts(parsed) == {
        "a": "first line\nmiddle  end\nx^2 stays, <!-- plain comment --> stays"
    }
    assert parsed.metadata == {}


def test_frontmatter_and_metadata_form_the_header() -> None:
    parsed = parse_note(
        note(
            "---",
            "title: from yaml",
            "tags: [a, b]",
            "---",
            "<!-- aclarai:title=Standup -->",
            "",
            "<!-- aclarai:created_at=2024-06-03 -->",
            "alice: hi <!-- aclarai:id=a -->",
        )
    )
    assert parsed.metadata == {"title": "Standup", "created_at": "2024-06-03"}
    assert texts(parsed) == {"a": "alice: hi"}


def test_frontmatter_closed_by_dots_and_unclosed_frontmatter() -> None:
    closed = parse_note(note("---", "a: 1", "...", "text <!-- aclarai:id=a -->"))
    assert texts(closed) == {"a": "text"}
    unclosed = parse_note(note("---", "a: 1", "text <!-- aclarai:id=a -->"))
    assert texts(unclosed) == {"a": "---\na: 1\ntext"}


def test_metadata_after_the_header_is_not_header() -> None:
    parsed = parse_note(
        note(
            "<!-- aclarai:title=T -->",
            "text",
            "<!-- aclarai:mood=late -->",
            "<!-- aclarai:id=a -->",
        )
    )
    assert parsed.metadata == {"title": "T"}
    assert texts(parsed) == {"a": "text"}


def test_byte_order_mark_is_not_text() -> None:
    plain = parse_note("\ufeffalice: hi\n<!-- aclarai:id=a -->\n")
    assert texts(plain) == {"a": "alice: hi"}
    inline = parse_note("\ufeffalice: hi <!-- aclarai:id=a -->")
    assert texts(inline) == {"a": "alice: hi"}
    header = parse_note("\ufeff<!-- aclarai:title=T -->\nx <!-- aclarai:id=a -->\n")
    assert header.metadata == {"title": "T"}
    front = parse_note("\ufeff---\nk: v\n---\nx <!-- aclarai:id=a -->\n")
    assert texts(front) == {"a": "x"}


def test_crlf_gives_the_same_blocks_as_lf() -> None:
    crlf = parse_note(SPEC_NOTE.replace("\n", "\r\n"))
    lf = parse_note(SPEC_NOTE)
    assert crlf.blocks == lf.blocks
    assert crlf.metadata == lf.metadata
    assert all("\r" not in block.text for block in crlf.blocks)


def test_no_final_newline() -> None:
    parsed = parse_note("alice: hi\n<!-- aclarai:id=a -->")
    assert texts(parsed) == {"a": "alice: hi"}
    assert parsed.blocks[0].line == 2


@pytest.mark.parametrize("text", ["", "\n", "   \n\n\t\n", "\r\n"])
def test_empty_notes(text: str) -> None:
    assert parse_note(text) == ParsedNote((), {}, None, ())
    assert not parse_note(text).has_markers


def test_note_without_markers() -> None:
    parsed = parse_note(note("# Just a note", "", "Some text <!-- a comment -->"))
    assert not parsed.has_markers
    assert parsed.problems == ()


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_markers_inside_fenced_code_are_text(fence: str) -> None:
    parsed = parse_note(
        note(
            "alice: here is the format:",
            fence + "markdown",
            "example <!-- aclarai:id=inside ver=1 -->",
            "<!-- aclarai:entailed_score=0.10 -->",
            "^inside",
            fence,
            "that is all <!-- aclarai:id=outside -->",
        )
    )
    assert [b.id for b in parsed.blocks] == ["outside"]
    assert parsed.blocks[0].text == (
        "alice: here is the format:\n"
        f"{fence}markdown\n"
        "example <!-- aclarai:id=inside ver=1 -->\n"
        "<!-- aclarai:entailed_score=0.10 -->\n"
        "^inside\n"
        f"{fence}\n"
        "that is all"
    )
    assert parsed.problems == ()


def test_unclosed_fence_runs_to_the_end() -> None:
    parsed = parse_note(note("a <!-- aclarai:id=a -->", "```", "b <!-- aclarai:id=b -->"))
    assert [b.id for b in parsed.blocks] == ["a"]


def test_markers_inside_indented_code_are_text() -> None:
    parsed = parse_note(
        note(
            "alice: look",
            "",
            "    code <!-- aclarai:id=inside -->",
            "\t<!-- aclarai:id=tabbed -->",
            "",
            "done <!-- aclarai:id=outside -->",
        )
    )
    assert [b.id for b in parsed.blocks] == ["outside"]
    assert "    code <!-- aclarai:id=inside -->" in parsed.blocks[0].text


def test_indented_lines_that_are_not_code_keep_their_markers() -> None:
    parsed = parse_note(
        note(
            "- alice: a list item",
            "",
            "    continued in the item <!-- aclarai:id=a -->",
            "",
            "bob: a paragraph",
            "    lazily continued <!-- aclarai:id=b -->",
        )
    )
    assert texts(parsed) == {
        "a": "- alice: a list item\n\n    continued in the item",
        "b": "bob: a paragraph\n    lazily continued",
    }


def test_fence_inside_a_blockquote_is_code() -> None:
    parsed = parse_note(
        note("> ```", "> <!-- aclarai:id=q -->", "> ```", "x <!-- aclarai:id=a -->")
    )
    assert [b.id for b in parsed.blocks] == ["a"]


def test_lone_carriage_return_keeps_code_line_numbers() -> None:
    parsed = parse_note(
        note("a\rb", "", "    <!-- aclarai:id=code -->", "", "c <!-- aclarai:id=c -->")
    )
    assert [(b.id, b.line) for b in parsed.blocks] == [("c", 5)]


def test_unterminated_comment_is_a_problem_and_stays_text() -> None:
    parsed = parse_note(
        note("alice: hi", "<!-- aclarai:id=a ver=1", "bob: yo <!-- aclarai:id=b -->")
    )
    assert kinds(parsed) == [(ProblemKind.UNTERMINATED_COMMENT, 2)]
    assert "column 1" in parsed.problems[0].message
    assert texts(parsed) == {"b": "alice: hi\n<!-- aclarai:id=a ver=1\nbob: yo"}


@pytest.mark.parametrize("bad", ["id=a ver=abc", "id=has spaces", "id=a ver="])
def test_malformed_id_is_a_problem_not_a_marker(bad: str) -> None:
    parsed = parse_note(
        note("alice: hi", f"<!-- aclarai:{bad} -->", "bob: yo", "<!-- aclarai:id=b -->")
    )
    assert kinds(parsed) == [(ProblemKind.MALFORMED_COMMENT, 2)]
    assert texts(parsed) == {"b": "alice: hi\nbob: yo"}


def test_id_comment_must_end_its_line() -> None:
    parsed = parse_note(
        note("alice: <!-- aclarai:id=a --> more", "x <!-- aclarai:id=b --> <!-- aclarai:id=c -->")
    )
    assert kinds(parsed) == [(ProblemKind.MALFORMED_COMMENT, 1), (ProblemKind.MALFORMED_COMMENT, 2)]
    assert "'a'" in parsed.problems[0].message
    assert texts(parsed) == {"c": "alice:  more\nx"}


def test_duplicate_id_skips_the_later_block_without_leaking_its_text() -> None:
    parsed = parse_note(
        note(
            "one <!-- aclarai:id=a -->",
            "copied <!-- aclarai:id=a ver=2 -->",
            "<!-- aclarai:entailed_score=0.4 -->",
            "three <!-- aclarai:id=c -->",
        )
    )
    assert texts(parsed) == {"a": "one", "c": "three"}
    assert parsed.blocks[0].version == 1
    assert kinds(parsed) == [(ProblemKind.DUPLICATE_ID, 2)]


def test_empty_block_is_a_problem() -> None:
    parsed = parse_note(
        note(
            "<!-- aclarai:id=top -->",
            "text <!-- aclarai:id=a -->",
            "",
            "<!-- aclarai:id=b -->",
            "c <!-- aclarai:id=c -->",
        )
    )
    assert texts(parsed) == {"a": "text", "c": "c"}
    assert kinds(parsed) == [(ProblemKind.EMPTY_BLOCK, 1), (ProblemKind.EMPTY_BLOCK, 4)]
    assert parsed.file_id is None


@pytest.mark.parametrize(
    "tail",
    [
        "<!-- aclarai:id=file-1 -->",
        "<!-- aclarai:id=file-1 -->\n\n  \n",
        "<!-- aclarai:id=file-1 -->\n^file-1\n",
    ],
)
def test_file_level_id(tail: str) -> None:
    parsed = parse_note("text <!-- aclarai:id=a -->\n\n" + tail)
    assert parsed.file_id == "file-1"
    assert texts(parsed) == {"a": "text"}
    assert parsed.problems == ()


def test_file_level_id_alone_and_duplicate_of_a_block() -> None:
    alone = parse_note(note("<!-- aclarai:title=T -->", "", "<!-- aclarai:id=f ver=2 -->"))
    assert (alone.blocks, alone.file_id, alone.has_markers) == ((), "f", True)
    dup = parse_note(note("x <!-- aclarai:id=a -->", "<!-- aclarai:id=a -->"))
    assert dup.file_id is None
    assert kinds(dup) == [(ProblemKind.DUPLICATE_ID, 2)]


def test_scores_from_the_zone_below_and_the_legacy_lines_above() -> None:
    parsed = parse_note(
        note(
            "alice: hi",
            "<!-- aclarai:coverage_score=0.20 -->",
            "<!-- aclarai:entailed_score=0.10 -->",
            "<!-- aclarai:id=a -->",
            "<!-- aclarai:entailed_score=0.90 -->",
            "<!-- aclarai:decontextualization_score=0.30 -->",
            "^a",
            "<!-- aclarai:title=zone metadata -->",
            "",
            "<!-- aclarai:entailed_score=0.55 -->",
            "bob: yo <!-- aclarai:id=b -->",
        )
    )
    first, second = parsed.blocks
    assert first.scores == {
        "coverage_score": 0.2,
        "entailed_score": 0.9,
        "decontextualization_score": 0.3,
    }
    assert first.text == "alice: hi"
    assert second.scores == {}
    assert second.text == "bob: yo"


def test_legacy_run_needs_the_own_line_layout_and_adjacency() -> None:
    parsed = parse_note(
        note(
            "<!-- aclarai:entailed_score=0.10 -->",
            "alice: hi <!-- aclarai:id=a -->",
            "",
            "bob: yo",
            "<!-- aclarai:entailed_score=0.20 -->",
            "^not-adjacent",
            "<!-- aclarai:id=b -->",
            "",
            "carol: hey",
            "<!-- aclarai:entailed_score=0.30 -->",
            "<!-- aclarai:id=c -->",
        )
    )
    assert {b.id: dict(b.scores) for b in parsed.blocks} == {
        "a": {},
        "b": {},
        "c": {"entailed_score": 0.3},
    }


def test_malformed_score_in_zone_is_reported_and_not_a_score() -> None:
    parsed = parse_note(
        note(
            "hi <!-- aclarai:id=a -->",
            "<!-- aclarai:entailed_score=high -->",
            "^a",
            "",
            "yo <!-- aclarai:id=b -->",
        )
    )
    assert parsed.blocks[0].scores == {}
    assert kinds(parsed) == [(ProblemKind.MALFORMED_COMMENT, 2)]
    assert texts(parsed) == {"a": "hi", "b": "yo"}


def test_blank_line_ends_the_zone() -> None:
    parsed = parse_note(
        note(
            "hi <!-- aclarai:id=a -->",
            "",
            "<!-- aclarai:entailed_score=0.5 -->",
            "yo <!-- aclarai:id=b -->",
        )
    )
    assert [dict(b.scores) for b in parsed.blocks] == [{}, {}]


def test_two_comments_on_one_line_are_not_a_zone_line() -> None:
    parsed = parse_note(
        note(
            "hi <!-- aclarai:id=a -->",
            "<!-- aclarai:entailed_score=0.5 --> <!-- aclarai:coverage_score=0.5 -->",
            "yo <!-- aclarai:id=b -->",
        )
    )
    assert [dict(b.scores) for b in parsed.blocks] == [{}, {}]
    assert texts(parsed) == {"a": "hi", "b": "yo"}


def test_decode_note_accepts_utf8_and_keeps_the_bom() -> None:
    assert decode_note("café\n".encode()) == "café\n"
    decoded = decode_note(b"\xef\xbb\xbfhi")
    assert decoded == "\ufeffhi"
    assert decoded.encode("utf-8") == b"\xef\xbb\xbfhi"


def test_decode_note_rejects_binary() -> None:
    with pytest.raises(ParseError, match=r"binary content.*offset 3") as caught:
        decode_note(b"abc\x00def", path="vault/x.md")
    assert caught.value.path == "vault/x.md"


def test_decode_note_rejects_non_utf8_with_line() -> None:
    with pytest.raises(ParseError, match=r"not UTF-8: invalid byte 0xe9 at offset 12") as caught:
        decode_note(b"line one\ncaf\xe9\n")
    assert caught.value.line == 2


@pytest.mark.parametrize(
    "stopper",
    [
        "<!-- aclarai:title=T2 --> trailing words",
        "<!-- aclarai:title=T2 --><!-- aclarai:mood=x -->",
        "<!-- aclarai:entailed_score=0.5 -->",
        "<!-- aclarai:title=T2",
        "plain words",
    ],
)
def test_header_ends_at_the_first_line_that_is_not_one_metadata_comment(stopper: str) -> None:
    parsed = parse_note(
        note(
            "<!-- aclarai:title=T -->",
            stopper,
            "<!-- aclarai:late=1 -->",
            "x <!-- aclarai:id=a -->",
        )
    )
    assert parsed.metadata == {"title": "T"}
    assert [b.id for b in parsed.blocks] == ["a"]
