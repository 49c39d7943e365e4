"""The one grammar of ``aclarai:`` comments: recognising, rejecting and formatting them."""

from __future__ import annotations

import math

import pytest

from aclarai.parsers import (
    CommentKind,
    format_id_comment,
    format_score_comment,
    parse_anchor,
    scan_line,
)
from aclarai.parsers.grammar import (
    MAX_VERSION,
    _scan,
    decode_metadata_value,
    format_score_value,
    is_block_id,
    next_version,
)


def only_comment(line: str):
    found = scan_line(line)
    assert found.unterminated_at is None
    assert len(found.comments) == 1
    return found.comments[0]


@pytest.mark.parametrize(
    ("line", "block_id", "version"),
    [
        ("<!-- aclarai:id=blk-q1w2e3 ver=1 -->", "blk-q1w2e3", 1),
        ("<!-- aclarai:id=blk_r4t5y6 ver=3 -->", "blk_r4t5y6", 3),
        ("<!--aclarai:id=Blk-9-->", "Blk-9", 1),
        ("<!--\t ACLARAI:ID = x_1   VER = 12 \t-->", "x_1", 12),
        ("<!-- aclarai:id=blk-1 ver=0 -->", "blk-1", 0),
        ("<!-- aclarai:id=blk-1 ver=2147483647 -->", "blk-1", 2**31 - 1),
        ("<!-- aclarai:id=blk-1 ver=0000000000007 -->", "blk-1", 7),
    ],
)
def test_id_comment_variants(line: str, block_id: str, version: int) -> None:
    comment = only_comment(line)
    assert comment.kind is CommentKind.ID
    assert comment.key == "id"
    assert comment.value == block_id
    assert comment.version == version
    assert (comment.start, comment.end) == (0, len(line))


@pytest.mark.parametrize(
    ("body", "key", "needle"),
    [
        ("id=has spaces", "id", "bad id"),
        ("id=x ver=abc", "id", "ver='abc'"),
        ("id=x ver=", "id", "ver=''"),
        ("id=", "id", "bad id"),
        ("id=x ver=2 extra", "id", "bad id"),
        ("id=blök", "id", "bad id"),
        ("just words", None, "key=value"),
        ("=3", None, "key=value"),
        ("entailed_score=abc", "entailed_score", "0..1"),
        ("coverage_score=1.5", "coverage_score", "0..1"),
        ("decontextualization_score=-0.2", "decontextualization_score", "0..1"),
        ("id=blk-big ver=99999999999999999999", "id", "0..2147483647"),
        ("id=blk-big ver=2147483648", "id", "0..2147483647"),
        ("id=blk-big ver=" + "9" * 5000, "id", "0..2147483647"),
        ("id=blk-big ver=-1", "id", "ver='-1'"),
        ("entailed_score=" + "9" * 5000, "entailed_score", "0..1"),
        ("entailed_score=1e9", "entailed_score", "0..1"),
    ],
)
def test_malformed_comments_are_reported_not_raised(
    body: str, key: str | None, needle: str
) -> None:
    comment = only_comment(f"<!-- aclarai:{body} -->")
    assert comment.kind is CommentKind.MALFORMED
    assert comment.key == key
    assert comment.value is None
    assert comment.problem is not None
    assert needle in comment.problem


@pytest.mark.parametrize(
    ("line", "name", "value"),
    [
        ("<!-- aclarai:entailed_score=0.91 -->", "entailed_score", 0.91),
        ("<!--aclarai:Coverage_Score = 1-->", "coverage_score", 1.0),
        ("<!-- aclarai:decontextualization_score=.5 -->", "decontextualization_score", 0.5),
        ("<!-- aclarai:entailed_score=0 -->", "entailed_score", 0.0),
    ],
)
def test_score_comments(line: str, name: str, value: float) -> None:
    comment = only_comment(line)
    assert comment.kind is CommentKind.SCORE
    assert comment.key == name
    assert comment.value == value


def test_metadata_comment_keeps_raw_value_and_key_case() -> None:
    comment = only_comment('<!-- aclarai:Participants = ["alice", "bob"]  -->')
    assert comment.kind is CommentKind.METADATA
    assert comment.key == "Participants"
    assert comment.value == '["alice", "bob"]'


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        ('["alice", "bob"]', ["alice", "bob"]),
        ('{"room": "ops", "n": 2}', {"room": "ops", "n": 2}),
        ('"quoted title"', "quoted title"),
        ("[not json", "[not json"),
        ("2024", "2024"),
        ("true", "true"),
        ("Standup 2024-06-03", "Standup 2024-06-03"),
        ("", ""),
        ("[" * 100_000, "[" * 100_000),
        ("[" * 70 + "]" * 70, "[" * 70 + "]" * 70),
        ("[[1, [2]]]", [[1, [2]]]),
    ],
)
def test_decode_metadata_value(raw: str, decoded: object) -> None:
    assert decode_metadata_value(raw) == decoded


def test_unterminated_comment_reports_its_column() -> None:
    found = scan_line("text <!-- aclarai:id=blk-1 ver=1")
    assert found.comments == ()
    assert found.unterminated_at == 5


def test_unterminated_after_a_closed_comment() -> None:
    line = "<!-- aclarai:title=x --> then <!-- aclarai:entailed_score=0.5"
    found = scan_line(line)
    assert [c.kind for c in found.comments] == [CommentKind.METADATA]
    assert found.unterminated_at == line.index("<!-- aclarai:entailed")


def test_several_comments_on_one_line_with_spans() -> None:
    line = "a <!-- aclarai:title=t --> b <!-- aclarai:id=z ver=2 -->"
    found = scan_line(line)
    assert [c.kind for c in found.comments] == [CommentKind.METADATA, CommentKind.ID]
    first, second = found.comments
    assert line[first.start : first.end] == "<!-- aclarai:title=t -->"
    assert line[second.start : second.end] == "<!-- aclarai:id=z ver=2 -->"
    assert found.unterminated_at is None


@pytest.mark.parametrize(
    "line",
    ["plain text", "<!-- an ordinary comment -->", "<!-- note: aclarai:id=x -->", ""],
)
def test_lines_without_aclarai_comments(line: str) -> None:
    found = scan_line(line)
    assert found.comments == ()
    assert found.unterminated_at is None


@pytest.mark.parametrize(
    ("line", "anchor"),
    [
        ("^blk-q1w2e3", "blk-q1w2e3"),
        ("  ^blk_r4t5y6  \r", "blk_r4t5y6"),
        ("^has space", None),
        ("text ^blk-1", None),
        ("x^2", None),
        ("no caret", None),
        ("^", None),
    ],
)
def test_parse_anchor(line: str, anchor: str | None) -> None:
    assert parse_anchor(line) == anchor


@pytest.mark.parametrize(
    ("text", "valid"), [("blk-1_A", True), ("has space", False), ("", False), ("a.b", False)]
)
def test_is_block_id(text: str, valid: bool) -> None:
    assert is_block_id(text) is valid


def test_format_id_comment_round_trips() -> None:
    text = format_id_comment("blk-x", 4)
    assert text == "<!-- aclarai:id=blk-x ver=4 -->"
    comment = only_comment(text)
    assert (comment.kind, comment.value, comment.version) == (CommentKind.ID, "blk-x", 4)


def test_write_back_at_the_largest_version_keeps_it() -> None:
    assert next_version(41) == 42
    assert next_version(MAX_VERSION) == MAX_VERSION


@pytest.mark.parametrize(
    ("block_id", "version"), [("has space", 1), ("", 1), ("ok", -1), ("ok", 2**31)]
)
def test_format_id_comment_rejects_misuse(block_id: str, version: int) -> None:
    with pytest.raises(ValueError):
        format_id_comment(block_id, version)


@pytest.mark.parametrize(
    ("value", "written"),
    [(0.91, "0.91"), (0.912, "0.91"), (0.5, "0.50"), (1.7, "1.00"), (-0.2, "0.00"), (1, "1.00")],
)
def test_format_score_comment_two_decimals_clamped(value: float, written: str) -> None:
    text = format_score_comment("entailed_score", value)
    assert text == f"<!-- aclarai:entailed_score={written} -->"
    comment = only_comment(text)
    assert comment.kind is CommentKind.SCORE
    assert comment.value == float(written)


def test_format_score_rejects_nan_and_unknown_names() -> None:
    with pytest.raises(ValueError, match="NaN"):
        format_score_value(math.nan)
    with pytest.raises(ValueError, match="unknown score name"):
        format_score_comment("fluency_score", 0.5)


def test_long_lines_scan_like_short_ones() -> None:
    prefix = "word " * 60
    found = scan_line(prefix + "<!-- aclarai:id=blk-long ver=2 -->")
    assert len(prefix) > 200
    assert [(c.kind, c.value, c.version, c.start) for c in found.comments] == [
        (CommentKind.ID, "blk-long", 2, len(prefix))
    ]
    assert scan_line(prefix + "<!-- plain -->") == scan_line("<!-- plain -->")


@pytest.mark.parametrize(
    "line",
    [
        "<!-- aclarai:id=blk-q1w2e3 ver=1 -->",
        "<!-- aclarai:id=blk-1 ver=0 -->",
        "<!-- aclarai:id=a-- ver=999999999 -->",
        "<!-- aclarai:id=blk-1 ver=2147483647 -->",
        "<!-- aclarai:id=blk-1 ver=2147483648 -->",
        "<!-- aclarai:id=blk-1 ver=007 -->",
        "<!-- aclarai:id=blk-1 ver=1 --> <!-- aclarai:id=blk-2 ver=1 -->",
        "<!-- aclarai:id=blk-1 ver=1 -->\r",
    ],
)
def test_written_id_lines_scan_as_the_general_grammar_does(line: str) -> None:
    assert scan_line(line) == _scan(line)
