"""The lexicons behind a step that opens with its verb: lemminflect's for English, and the
imperatives ``benchmarks/build_verb_forms.py`` keeps from simplemma's for five languages."""

from __future__ import annotations

import gzip
import json
from importlib import resources

import pytest

from aclarai.agents.offline.verb_forms import (
    IMPERATIVES_RESOURCE,
    is_imperative,
    is_inflected_verb,
    is_only_a_verb,
)
from benchmarks.build_verb_forms import build, dutch_stems, imperative_forms

OFFLINE = resources.files("aclarai.agents.offline")


@pytest.mark.parametrize("word", ["validate", "decide", "escalate", "put", "incubate"])
def test_an_english_word_that_is_only_a_verb(word: str) -> None:
    assert is_only_a_verb(word)


@pytest.mark.parametrize("word", ["book", "plant", "watch", "validated", "deciding", "sync"])
def test_an_english_word_that_may_be_a_noun_or_is_inflected_is_not_only_a_verb(word: str) -> None:
    assert not is_only_a_verb(word)


@pytest.mark.parametrize(
    ("word", "lang"),
    [("prüf", "de"), ("geh", "de"), ("sammle", "de"), ("volg", "nl"), ("stuur", "nl"),
     ("siga", "pt"), ("desça", "pt"), ("deje", "es"), ("tenga", "es"), ("scendi", "it"),
     ("esegui", "it")],
)  # fmt: skip
def test_the_shipped_table_knows_the_imperatives(word: str, lang: str) -> None:
    assert is_imperative(word, lang)


@pytest.mark.parametrize(
    ("word", "lang"),
    [("folge", "de"), ("stand", "de"), ("hab", "de"), ("wohne", "de"), ("wil", "nl"),
     ("woon", "nl"), ("deja", "es"), ("dejaste", "es"), ("pese", "es"), ("fazia", "pt"),
     ("era", "it"), ("ouvre", "fr"), ("open", "en")],
)  # fmt: skip
def test_a_noun_an_auxiliary_or_a_statement_form_is_no_imperative(word: str, lang: str) -> None:
    """ "Folge" is a noun too, "hab" and "wil" open questions and conditions, "wohne" and
    "woon" a diary's line, "deja" is also "she leaves", "dejaste" and "fazia" are pasts, "pese
    a" is "despite"; French and English are not in the table."""
    assert not is_imperative(word, lang)


def test_dutch_stems_follow_the_spelling_rules() -> None:
    assert dutch_stems("volgen") == {"volg"}
    assert "zet" in dutch_stems("zetten")
    assert "stuur" in dutch_stems("sturen")
    assert "schrijf" in dutch_stems("schrijven")
    assert "lees" in dutch_stems("lezen")


def test_imperative_forms_keep_only_what_a_step_opens_with() -> None:
    german = {
        "prüf": "prüfen",
        "prüfe": "prüfen",
        "prüft": "prüfen",  # the statement's form
        "folge": "folgen",
        "Folge": "Folge",  # a noun with a capital: ambiguous, left out
        "hab": "haben",  # never a step
        "prüfen": "prüfen",
    }
    assert imperative_forms("de", german) == {"prüf", "prüfe"}
    spanish = {
        "deje": "dejar",
        "deja": "dejar",
        "dejase": "dejar",  # the past subjunctive ends in the same vowel, and is longer
        "siga": "seguir",
        "iba": "ir",
        "añadida": "añadir",
    }
    assert imperative_forms("es", spanish) == {"deje", "siga"}
    italian = {"cerchi": "cercare", "scendi": "scendere", "era": "essere", "passi": "passo"}
    assert imperative_forms("it", italian) == {"cerchi", "scendi"}


def test_is_inflected_verb_reads_english_forms() -> None:
    assert is_inflected_verb("moved")
    assert is_inflected_verb("took")
    assert not is_inflected_verb("move")
    assert not is_inflected_verb("the")


def test_the_shipped_table_is_what_the_builder_makes_of_simplemmas_lexicon() -> None:
    """The table is generated, not edited: rebuilt from the lexicon (Italian, the quickest),
    it gives the shipped forms."""
    shipped = json.loads(gzip.decompress((OFFLINE / IMPERATIVES_RESOURCE).read_bytes()))
    assert build(["it"])["it"] == shipped["it"]
