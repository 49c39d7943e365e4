"""The lexical features behind the offline entailment model."""

from __future__ import annotations

import pytest

from aclarai.agents.offline.features import (
    FEATURE_NAMES,
    _chargram_containment,
    _chargrams,
    analyse,
    contradiction,
    number_values,
    pair_features,
    stem,
)


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["deploy", "deploys", "deployed", "deploying", "deployment"], "deploy"),
        (["huskies", "husky"], "husky"),
        (["stopped", "stop", "stops"], "stop"),
        (["rolled", "roll"], "roll"),
    ],
)
def test_word_forms_share_a_stem(words: list[str], expected: str) -> None:
    assert {stem(w) for w in words} == {expected}


@pytest.mark.parametrize(
    ("token", "values"),
    [
        ("1,200", ("1200",)),
        ("10-11", ("10", "11")),
        ("26-year-old", ("26",)),
        ("v2.3", ("2.3",)),
        ("14:02", ("14:02",)),
        ("11th", ("11",)),
        ("two", ("2",)),
        ("staging", ()),
    ],
)
def test_numbers_are_read_from_tokens(token: str, values: tuple[str, ...]) -> None:
    assert number_values(token) == values


def test_negation_governs_what_follows_it_and_hedges_do_not_count() -> None:
    (scoped,) = analyse("He stayed after a season with no trophies.").sentences
    (hedged,) = analyse("I'm not sure, but it originated in England.").sentences
    assert scoped.negated == {"trophy"}
    assert hedged.negations == 0


@pytest.mark.parametrize(
    ("claim", "source", "kind"),
    [
        (
            "The spectrum does not contain all colours.",
            "The spectrum contains all colours.",
            "negation",
        ),
        (
            "The spectrum contains all colours.",
            "The spectrum does not contain all colours.",
            "negation",
        ),
        ("The outage lasted 12 minutes.", "The outage lasted 47 minutes.", "number"),
        ("The outage lasted 47 minutes.", "The outage lasted 47 minutes.", None),
        ("The outage lasted 47 minutes.", "The outage lasted 47 minutes, not an hour.", None),
        ("The team grew in May.", "The outage lasted 47 minutes.", None),
    ],
)
def test_contradictions_need_a_close_restatement(claim: str, source: str, kind: str | None) -> None:
    assert contradiction(analyse(claim), analyse(source)) == kind


def test_feature_vector_matches_the_names_and_rewards_overlap() -> None:
    source = analyse("The Tabaci River is a tributary of the Leurda River in Romania.")
    copy = pair_features(analyse("The Tabaci River is a tributary of the Leurda River."), source)
    swap = pair_features(analyse("The Leurda River is a tributary of the Tabaci River."), source)
    other = pair_features(analyse("Paris hosted the 2024 Olympic Games."), source)
    assert len(copy) == len(FEATURE_NAMES)
    named = dict(zip(FEATURE_NAMES, copy, strict=True))
    assert named["content_precision_mean"] == 1.0
    assert dict(zip(FEATURE_NAMES, swap, strict=True))["trigram_precision"] < 1.0
    assert dict(zip(FEATURE_NAMES, other, strict=True))["unmatched_numbers"] == 1.0
    assert dict(zip(FEATURE_NAMES, other, strict=True))["unmatched_entities"] >= 1.0


@pytest.mark.parametrize(
    ("part", "whole"),
    [
        ("the outage lasted 47 minutes", "the outage lasted 47 minutes and took checkout down"),
        ("the outage lasted 47 minutes", "the outage lasted 12 minutes"),
        ("paris hosted the games", "the tabaci river is a tributary"),
        ("x", "x y"),
        ("", "anything"),
    ],
)
def test_chargram_containment_is_the_share_of_shared_4grams(part: str, whole: str) -> None:
    grams, found_in = _chargrams(f" {part} "), _chargrams(f" {whole} ")
    expected = len(grams & found_in) / len(grams) if grams else 0.0
    assert _chargram_containment(part, whole) == expected
