"""Sentence splitting: boundaries, abbreviations, Markdown structure, NLI-sized pieces."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aclarai.parsers import split_for_nli, split_sentences
from aclarai.parsers.sentences import NLI_MAX_CHARS, NLI_MIN_CHARS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The deploy failed. It failed again.", ["The deploy failed.", "It failed again."]),
        ("Did it work? Yes! Great.", ["Did it work?", "Yes!", "Great."]),
        ("Dr. Smith fixed it. Then it broke.", ["Dr. Smith fixed it.", "Then it broke."]),
        ("Use a cache, e.g. Redis. It helps.", ["Use a cache, e.g. Redis.", "It helps."]),
        ("J. R. R. Tolkien wrote it in 1954.", ["J. R. R. Tolkien wrote it in 1954."]),
        ("Bake at 180 °C. Let it cool.", ["Bake at 180 °C.", "Let it cool."]),
        ("Bei 180 °C. backen", ["Bei 180 °C. backen"]),
        ("We run v2.3 at 99.9% uptime.", ["We run v2.3 at 99.9% uptime."]),
        ("See https://example.com/a.b for more.", ["See https://example.com/a.b for more."]),
        ('He said "go." Then we left.', ['He said "go."', "Then we left."]),
        ("It was slow (very slow.) Then fast.", ["It was slow (very slow.)", "Then fast."]),
        ("Wait... it works. Hmm... No.", ["Wait... it works.", "Hmm...", "No."]),
        ("It is ranked No. 1 in Europe.", ["It is ranked No. 1 in Europe."]),
        ("He just said no. The meeting ended.", ["He just said no.", "The meeting ended."]),
        (
            "They joined Apple Inc. The next year they left.",
            ["They joined Apple Inc.", "The next year they left."],
        ),
        ("no punctuation at all", ["no punctuation at all"]),
        (
            "Ich las die Ausgabe zum 50. Jahrestag von 2012. Sie hat eine Einleitung.",
            ["Ich las die Ausgabe zum 50. Jahrestag von 2012.", "Sie hat eine Einleitung."],
        ),
        (
            "Ab dem frühen 1. Jahrhundert n. Chr. war das so.",
            ["Ab dem frühen 1. Jahrhundert n. Chr. war das so."],
        ),
        ("Es begann 300 v. Chr. Die Römer kamen.", ["Es begann 300 v. Chr.", "Die Römer kamen."]),
        (
            "Drei Personen möchten vom 12. bis 14. Juni nach Lissabon.",
            ["Drei Personen möchten vom 12. bis 14. Juni nach Lissabon."],
        ),
        (
            "Das war im Jahr 2012. Die Zitate stammen daher.",
            ["Das war im Jahr 2012.", "Die Zitate stammen daher."],
        ),
    ],
)
def test_sentence_boundaries(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_blank_lines_and_list_items_end_sentences_but_soft_wraps_do_not() -> None:
    text = "alice: the deploy\nfailed twice\n\nNext steps:\n- roll back\n- page bob\n# Heading"
    assert split_sentences(text) == [
        "alice: the deploy\nfailed twice",
        "Next steps:",
        "- roll back",
        "- page bob",
        "# Heading",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "It moved to cdn.abcdefghijklmnopqrstuvwxyz. then it worked. Done.",
            ["It moved to cdn.abcdefghijklmnopqrstuvwxyz. then it worked.", "Done."],
        ),
        (
            "It moved to abcdefghijklmnopqrstuvwxyz. then it worked.",
            ["It moved to abcdefghijklmnopqrstuvwxyz.", "then it worked."],
        ),
    ],
)
def test_a_long_word_before_a_full_stop_is_read_whole(text: str, expected: list[str]) -> None:
    # Only the whole word shows the dot that makes "cdn.abc...xyz. then" a name, not an end.
    assert split_sentences(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t"])
def test_blank_text_has_no_sentences(text: str) -> None:
    assert split_sentences(text) == []
    assert split_for_nli(text) == []


@given(st.text(alphabet=st.sampled_from(list("ab .!?\n-:1\"')")), max_size=200))
def test_splitting_keeps_every_character_in_order(text: str) -> None:
    sentences = split_sentences(text)
    assert "".join(sentences).replace(" ", "").replace("\n", "") == "".join(text.split())
    assert all(s and s == s.strip() for s in sentences)


def test_nli_cuts_long_sentences_on_blank_lines_then_newlines_then_chunks() -> None:
    first, second = "a" * 300 + " end", "b" * 300 + " end"
    one_line_long = " ".join(["word"] * 300)
    pieces = split_for_nli(f"{first}\n{second}\n- {one_line_long}")
    assert pieces[:2] == [first, second]
    assert all(len(p) <= NLI_MAX_CHARS for p in pieces)
    assert " ".join(pieces[2:]).split() == ["-", *one_line_long.split()]


def test_nli_chunks_text_without_spaces_at_the_limit() -> None:
    pieces = split_for_nli("x" * (2 * NLI_MAX_CHARS + 10))
    assert [len(p) for p in pieces] == [NLI_MAX_CHARS, NLI_MAX_CHARS, 10]


def test_nli_joins_short_sentences_to_the_next_one() -> None:
    assert split_for_nli("Yes. Ok. The deploy to staging failed twice.") == [
        "Yes. Ok. The deploy to staging failed twice."
    ]


def test_nli_joins_a_short_last_sentence_to_the_previous_one() -> None:
    pieces = split_for_nli("The deploy to staging failed twice. Sad.")
    assert pieces == ["The deploy to staging failed twice. Sad."]
    assert all(len(p) >= NLI_MIN_CHARS for p in split_for_nli("A much longer sentence here. Hm."))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "東京は日本の首都です。人口は約1400万人です！首都はどこですか？",
            ["東京は日本の首都です。", "人口は約1400万人です！", "首都はどこですか？"],
        ),
        (
            "「はい。」と彼は言った。富士山は高い。",
            ["「はい。」と彼は言った。", "富士山は高い。"],
        ),
        ("北京是中国的首都。上海很大", ["北京是中国的首都。", "上海很大"]),
        (
            "（注：古い版です。）新しい版は2.0です。",
            ["（注：古い版です。）", "新しい版は2.0です。"],
        ),
        ("Obsidian is fast. 日本語も使えます。", ["Obsidian is fast.", "日本語も使えます。"]),
    ],
)
def test_japanese_and_chinese_sentence_marks_end_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@given(st.text(alphabet=st.sampled_from(list("東京はです。！？」「 a.\n")), max_size=60))
def test_wide_marks_keep_every_character_in_order(text: str) -> None:
    sentences = split_sentences(text)
    assert "".join(sentences).replace(" ", "").replace("\n", "") == "".join(text.split())
