"""A question as the index reads it: any text becomes expressions FTS5 accepts."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclarai.daemon.search.query import (
    MAX_QUERY_CHARS,
    MAX_TERMS,
    covers,
    index_query,
    word_expression,
    words_of,
)


@pytest.fixture(scope="module")
def fts() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE w USING fts5(t, tokenize = 'unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE g USING fts5(t, tokenize = 'trigram')")
    conn.execute("INSERT INTO w VALUES ('the discounted plans for charities')")
    conn.execute("INSERT INTO g VALUES ('潮汐观测站每天记录两次')")
    return conn


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_expressions_fts5_accepts(fts: sqlite3.Connection, text: str) -> None:
    query = index_query(text)
    if query.words:
        fts.execute("SELECT rowid FROM w WHERE w MATCH ?", (query.words,)).fetchall()
    if query.grams:
        fts.execute("SELECT rowid FROM g WHERE g MATCH ?", (query.grams,)).fetchall()


def test_function_words_are_left_out_and_content_words_kept() -> None:
    query = index_query("How do I get a discount for my charity?")
    assert query.word_terms == ("discount", "charity")


def test_a_long_word_also_matches_its_stem_as_a_prefix(fts: sqlite3.Connection) -> None:
    query = index_query("charity discount")
    rows = fts.execute("SELECT t FROM w WHERE w MATCH ?", (query.words,)).fetchall()
    assert rows == [("the discounted plans for charities",)]
    assert covers(words_of("the discounted plans"), "discount")
    assert not covers(words_of("the plans"), "discount")


def test_accents_fold_as_the_index_folds_them() -> None:
    assert index_query("Café crème brûlée").word_terms == ("cafe", "creme", "brulee")


def test_a_question_of_function_words_still_asks_its_words() -> None:
    assert index_query("what is it about?").word_terms != ()


def test_chinese_runs_become_trigrams(fts: sqlite3.Connection) -> None:
    query = index_query("观测站记录")
    assert query.gram_terms == ("观测站", "测站记", "站记录")
    assert fts.execute("SELECT count(*) FROM g WHERE g MATCH ?", (query.grams,)).fetchone() == (1,)


def test_a_huge_query_is_read_as_its_start() -> None:
    query = index_query("word " * 50_000)
    assert query.word_terms == ("word",)
    assert index_query("x" * (MAX_QUERY_CHARS * 3)).empty, "no note holds such a word"
    many = index_query(" ".join(f"w{i}ord" for i in range(5000)))
    assert len(many.word_terms) == MAX_TERMS


def test_common_words_find_no_candidates_while_rarer_ones_do() -> None:
    terms = ("billing", "delayed", "frankfurt")
    frequencies = {"billing": 900, "billi*": 950, "delayed": 40, "delay*": 60, "frankfurt": 3}
    assert word_expression(terms, frequencies, most=100) == (
        '("delayed" OR "delay"*) OR ("frankfurt" OR "frankf"*)'
    )
    # A stem that is itself common leaves its word alone.
    assert word_expression(("delayed",), {"delayed": 40, "delay*": 500}, most=100) == '"delayed"'


def test_a_question_of_common_words_only_asks_the_rarest_three_together() -> None:
    terms = ("the", "deploy", "failed", "tuesday", "build")
    frequencies = {"the": 9000, "deploy": 500, "failed": 700, "tuesday": 300, "build": 800}
    assert word_expression(terms, frequencies, most=100) == '"tuesday" AND "deploy" AND "failed"'


def test_folding_keeps_hangul_and_voiced_kana_whole() -> None:
    from aclarai.daemon.search.query import fold

    assert fold("수출이 늘었다") == "수출이 늘었다"
    assert fold("ガイドライン") == "ガイドライン"
    assert fold("Crème BRÛLÉE") == "creme brulee"
    query = index_query("수출이 늘었다")
    assert "수출이" in query.gram_terms
    assert all(g in fold("올해 수출이 늘었다") for g in query.gram_terms)
