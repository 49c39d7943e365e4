"""The window an evaluator is given: nearest the block first, so that cutting it keeps the
blocks that explain the block."""

from __future__ import annotations

from aclarai.agents.base import ExtractionInput, Utterance
from aclarai.agents.llm.fitting import CUT_MARKER, nearest_context, nearest_first


def test_the_window_is_given_nearest_the_block_first() -> None:
    item = ExtractionInput(
        Utterance("t", "target"),
        before=(Utterance("b3", "B3"), Utterance("b2", "B2"), Utterance("b1", "B1")),
        after=(Utterance("a1", "A1"),),
    )

    assert item.around() == ("B1", "A1", "B2", "B3")


def test_one_block_before_and_three_after_keeps_the_one_before() -> None:
    before = ["B1 near. " * 10]
    after = ["A1 near. " * 10, "A2 far. " * 10, "A3 far. " * 10]
    item = ExtractionInput(
        Utterance("t", "target"),
        before=tuple(Utterance(f"b{i}", t) for i, t in enumerate(before)),
        after=tuple(Utterance(f"a{i}", t) for i, t in enumerate(after)),
    )

    kept = [text for text in nearest_first(item.around(), 200) if text]

    assert kept == [before[0].strip(), after[0].strip()]
    assert nearest_context(before, after, 200)[0] == [before[0].strip()]


def test_what_does_not_fit_is_left_out_without_a_stray_marker() -> None:
    kept = nearest_first(["x " * 100, "y " * 10, "z " * 10], 120)

    assert kept[0].endswith(CUT_MARKER)
    assert kept[1:] == ["", ""]
