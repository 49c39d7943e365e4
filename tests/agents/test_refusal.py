"""Refusal detection on the first sentences of an answer or ground truth."""

from __future__ import annotations

import pytest

from aclarai.agents import is_refusal, is_refusal_sentence
from aclarai.parsers import split_sentences


@pytest.mark.parametrize(
    "sentence",
    [
        "I don't know.",
        "I do not know the answer to that.",
        "I’m not sure.",
        "The context does not say when the bridge opened.",
        "The provided text doesn't mention his birthplace.",
        "I can't help with that.",
        "I cannot answer this question.",
        "I am unable to determine the date from the passage.",
        "This information is not mentioned in the context.",
        "There is no information about the author.",
        "The answer cannot be determined from the given documents.",
        "As an AI, I have no opinions.",
        "I'm sorry, but I can't provide that.",
        "Unknown.",
        "N/A",
    ],
)
def test_refusals_are_recognised(sentence: str) -> None:
    assert is_refusal_sentence(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "The bridge opened in 1932.",
        "Nobody knew the engineer before the competition.",
        "The context of the war explains the treaty.",
        "He said he did not know the way, so he asked a local guide.",
        "Knowledge of the tides helped the sailors.",
        "I know the answer: Delhi.",
        "",
    ],
)
def test_answers_are_not_refusals(sentence: str) -> None:
    assert not is_refusal_sentence(sentence)


def test_only_the_first_three_sentences_count() -> None:
    early = "I don't know. The tower is tall. It is in Paris. It opened in 1889."
    late = "The tower is tall. It is in Paris. It opened in 1889. I don't know its weight."
    assert is_refusal(early, split_sentences)
    assert not is_refusal(late, split_sentences)
    assert is_refusal(late, split_sentences, first_n=4)


def test_empty_text_is_not_a_refusal() -> None:
    assert not is_refusal("", split_sentences)
