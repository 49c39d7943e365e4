"""The offline completeness and instruction-following judges on hand-written cases."""

from __future__ import annotations

import pytest

from aclarai.agents import Interaction
from aclarai.agents.answers.query_judges import CompletenessJudge, InstructionJudge, query_parts

TWO_PART = "Who designed the Eiffel Tower and when was it completed?"


def completeness(query: str, answer: str) -> float:
    return CompletenessJudge().judge(Interaction(query, "", answer)).score


def following(query: str, answer: str) -> float:
    return InstructionJudge().judge(Interaction(query, "", answer)).score


def test_a_query_is_split_into_the_things_it_asks() -> None:
    parts = query_parts("Who designed it, when was it built and why was it controversial?")
    assert [chunk for chunk, _ in parts] == [
        "Who designed it",
        "when was it built",
        "why was it controversial?",
    ]


def test_an_answer_to_every_part_is_complete() -> None:
    answer = "Gustave Eiffel's company designed the Eiffel Tower; it was completed in 1889."
    assert completeness(TWO_PART, answer) == 1.0


def test_an_answer_to_one_of_two_parts_is_half_complete() -> None:
    judgement = CompletenessJudge().judge(
        Interaction(TWO_PART, "", "The Eiffel Tower was designed by Gustave Eiffel.")
    )
    assert judgement.score == 0.5
    assert "when was it completed" in judgement.reason


def test_a_when_part_needs_a_date_not_just_its_words() -> None:
    assert completeness(TWO_PART, "Eiffel designed the tower and it was completed later.") == 0.5


def test_a_single_question_is_left_to_the_relevance_judge() -> None:
    assert completeness("What is the capital of France?", "Paris.") == 1.0


@pytest.mark.parametrize(
    ("query", "answer", "expected"),
    [
        ("Describe the tower in at most 10 words.", "A tall iron lattice tower in Paris.", 1.0),
        ("Describe the tower in at most 10 words.", "It is " + "very " * 20 + "tall.", 0.0),
        ("Summarise it in one sentence.", "It is tall. It is old.", 0.0),
        ("Summarise it in one sentence.", "It is a tall old tower.", 1.0),
        ("List three French cities.", "Paris, Lyon and Nice.", 1.0),
        ("List three French cities.", "Paris and Lyon.", 0.0),
        ("Give the cities as a bulleted list.", "- Paris\n- Lyon", 1.0),
        ("Give the cities as a bulleted list.", "Paris and Lyon.", 0.0),
        ("Is Paris in France? Answer yes or no.", "Yes, it is.", 1.0),
        ("Is Paris in France? Answer yes or no.", "Paris is in France.", 0.0),
        ("Reply in JSON with the city name.", '{"city": "Paris"}', 1.0),
        ("Reply in JSON with the city name.", "The city is Paris.", 0.0),
        ("Briefly, what is the tower?", "An iron tower in Paris.", 1.0),
        ("What is the capital of France?", "Paris.", 1.0),
    ],
)
def test_instructions_in_the_query_are_checked(query: str, answer: str, expected: float) -> None:
    assert following(query, answer) == expected


def test_several_instructions_score_the_share_followed() -> None:
    judgement = InstructionJudge().judge(
        Interaction("List three French cities as a bulleted list.", "", "Paris, Lyon and Nice.")
    )
    assert judgement.score == 0.5
    assert "a list" in judgement.reason
