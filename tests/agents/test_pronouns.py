"""Rule-based pronoun replacement (the offline fallback of the NLI QA pipeline)."""

from __future__ import annotations

import pytest

from aclarai.agents import replace_pronouns


@pytest.mark.parametrize(
    ("text", "antecedents", "expected"),
    [
        (
            "He was born in Ulm in 1879. His theory changed physics.",
            "Where was Albert Einstein born?",
            "Albert Einstein was born in Ulm in 1879. Albert Einstein's theory changed physics.",
        ),
        (
            "The Eiffel Tower is 330 m tall. It was built in 1889 and its designer was famous.",
            "",
            "The Eiffel Tower is 330 m tall. The Eiffel Tower was built in 1889 and the Eiffel "
            "Tower's designer was famous.",
        ),
        (
            "Marie Curie won two Nobel prizes. She gave her notes to her daughter.",
            "",
            "Marie Curie won two Nobel prizes. Marie Curie gave Marie Curie's notes to Marie "
            "Curie's daughter.",
        ),
        (
            "Born in Ulm, he moved to Bern.",
            "When did Einstein move?",
            "Born in Ulm, Einstein moved to Bern.",
        ),
    ],
)
def test_pronouns_are_replaced_by_the_entity_they_name(
    text: str, antecedents: str, expected: str
) -> None:
    assert replace_pronouns(text, antecedents) == expected


def test_expletive_it_and_plural_they_are_left_alone() -> None:
    text = "The Louvre opened in 1793. It is likely that they queued for hours."
    assert replace_pronouns(text) == text


def test_places_and_modifiers_are_not_taken_for_people() -> None:
    text = "He lived in Vienna. He won two Nobel prizes."
    assert replace_pronouns(text, "What did Schrödinger do?") == (
        "Schrödinger lived in Vienna. Schrödinger won two Nobel prizes."
    )


def test_no_known_entity_leaves_the_text_unchanged() -> None:
    assert replace_pronouns("She left early.") == "She left early."
    assert replace_pronouns("") == ""
