"""Grades read from a reply: the expected digit over the options the model weighed, or the digit it
wrote (``aclarai.agents.llm.grades``)."""

from __future__ import annotations

import math

import pytest

from aclarai.agents.llm.client import TokenOptions
from aclarai.agents.llm.grades import unit_score, weighed_grades


def sure(token: str) -> TokenOptions:
    return TokenOptions(token, ((token, 0.0),))


def torn(written: str, chances: dict[str, float]) -> TokenOptions:
    return TokenOptions(written, tuple((t, math.log(p)) for t, p in chances.items()))


def test_the_grade_is_the_expected_digit_over_the_options_weighed() -> None:
    tokens = [
        *map(sure, ['{"', "c", "1", '":', " "]),
        torn("4", {"4": 0.5, "5": 0.5}),
        *map(sure, [', "', "c", "2", '":', " "]),
        torn("2", {"2": 0.6, "1": 0.2, "3": 0.2}),
        sure("}"),
    ]

    grades = weighed_grades(tokens, {"c1": 4, "c2": 2})

    assert grades == pytest.approx({"c1": 4.5, "c2": 2.0})


def test_options_that_are_not_grades_carry_no_weight() -> None:
    tokens = [
        *map(sure, ['{"', "c1", '":', " "]),
        torn("5", {"5": 0.5, "3": 0.25, '"': 0.15, "9": 0.05, " 4": 0.05}),
        sure("}"),
    ]

    [grade] = weighed_grades(tokens, {"c1": 5}).values()

    # 5, 3 and " 4" are grades (the space is the tokenizer's); '"' and 9 are not.
    assert grade == pytest.approx((5 * 0.5 + 3 * 0.25 + 4 * 0.05) / 0.8)


def test_the_written_grade_stands_where_the_server_gave_no_options() -> None:
    assert weighed_grades([], {"c1": 4, "c2": 1}) == {"c1": 4.0, "c2": 1.0}


def test_a_grade_whose_options_hold_no_digit_is_read_as_written() -> None:
    tokens = [*map(sure, ['{"c1":', " "]), torn("3", {"three": 1.0}), sure("}")]

    assert weighed_grades(tokens, {"c1": 3}) == {"c1": 3.0}


@pytest.mark.parametrize(
    "pieces",
    [
        pytest.param(['{"c2":', "5", "}"], id="no-space"),
        pytest.param(['{"', "c2", '":', " ", "5", "}"], id="space-token"),
        pytest.param(['{\n  "c2"', " :", "  ", "5", "\n}"], id="spaces-both-sides"),
        pytest.param(['{"c1": 3, "c2": ', "5", "}"], id="after-another-key"),
    ],
)
def test_the_key_is_found_after_its_colon_with_or_without_spaces(pieces: list[str]) -> None:
    tokens = [torn(p, {"5": 0.5, "4": 0.5}) if p == "5" else sure(p) for p in pieces]

    grades = weighed_grades(tokens, {"c2": 5, "c1": 3})

    assert grades["c2"] == 4.5
    assert grades["c1"] == 3.0, "c1's 3 was inside a sure token: the written grade"


def test_a_digit_token_inside_a_claim_id_is_not_a_grade() -> None:
    """The "1" of "c1" is a digit token too, and a model may weigh "2" there: that is the id's
    spelling, not a grade of c1."""
    tokens = [
        sure('{"'),
        sure("c"),
        torn("1", {"1": 0.5, "2": 0.5}),
        sure('":'),
        sure(" "),
        torn("5", {"5": 1.0}),
        sure("}"),
    ]

    assert weighed_grades(tokens, {"c1": 5}) == {"c1": 5.0}


def test_a_key_not_in_the_parsed_reply_is_not_graded() -> None:
    tokens = [*map(sure, ['{"c9":', " "]), torn("1", {"1": 1.0}), sure("}")]

    assert weighed_grades(tokens, {"c1": 4}) == {"c1": 4.0}


@pytest.mark.parametrize(
    ("grade", "score"),
    [(1, 0.0), (2, 0.25), (3, 0.5), (4, 0.75), (5, 1.0), (4.5, 0.875), (4.3, 0.825)],
)
def test_unit_score_maps_one_to_five_onto_zero_to_one(grade: float, score: float) -> None:
    assert unit_score(grade) == score


def test_unit_score_clamps_and_rounds_to_three_decimals() -> None:
    assert (unit_score(0.0), unit_score(7.0)) == (0.0, 1.0)
    assert unit_score(4 + 1 / 3) == 0.833
