"""Fitting a block's window and text into a prompt: the nearest neighbours first, cut marked.

Pure functions over texts; ``fit_prompt`` measures with the client's cautious token estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aclarai.agents.base import nearest_first_order
from aclarai.agents.llm.client import estimate_tokens
from aclarai.agents.llm.prompts import Message

CUT_MARKER = "[... cut here to fit the model's context]"
_SHORTEST_NEIGHBOUR = 80
"""A neighbour cut below this many characters says nothing: the neighbours are dropped."""
CONTEXT_CHARS = 400
"""The neighbouring blocks' share of a prompt: enough to resolve a pronoun or a missing name,
little enough that a block costs a few hundred prompt tokens (Claimify resolves from the nearest
sentences; the window's far blocks rarely matter)."""


def _cut(text: str, chars: int) -> str:
    """``text`` cut to about ``chars`` characters at a word boundary, the cut marked."""
    if len(text) <= chars:
        return text
    head = text[: max(chars, 0)]
    space = head.rfind(" ")
    if space > chars // 2:
        head = head[:space]
    return f"{head.rstrip()} {CUT_MARKER}".lstrip()


def fit_prompt(
    render: Callable[[list[str], str], list[Message]],
    neighbours: Sequence[str],
    main: str,
    budget_tokens: int | None,
) -> tuple[list[str], str]:
    """``neighbours`` and ``main`` cut so that ``render(neighbours, main)`` fits the budget.

    Neighbours go first: all of them are cut to half the longest one's length, again and again,
    and dropped once that is too short to mean anything; then ``main`` is cut, marked.
    """
    kept = list(neighbours)
    if budget_tokens is None:
        return kept, main

    def size(texts: list[str], text: str) -> int:
        return sum(estimate_tokens(m.content) for m in render(texts, text))

    cap = max((len(t) for t in neighbours), default=0)
    while kept and size(kept, main) > budget_tokens:
        cap //= 2
        kept = [_cut(t, cap) for t in neighbours] if cap >= _SHORTEST_NEIGHBOUR else []
    if size(kept, main) <= budget_tokens:
        return kept, main
    # The longest cut that fits, by bisection: the text may appear more than once in a prompt.
    low, high = 0, len(main)
    while low < high:
        middle = (low + high + 1) // 2
        if size(kept, _cut(main, middle)) <= budget_tokens:
            low = middle
        else:
            high = middle - 1
    return kept, _cut(main, low)


def nearest_context(
    before: Sequence[str], after: Sequence[str], chars: int
) -> tuple[list[str], list[str]]:
    """The window's blocks that fit in ``chars``, the nearest the target first (see
    :func:`nearest_first`); order within each side is kept."""
    order = nearest_first_order(
        [("before", i) for i in range(len(before))], [("after", i) for i in range(len(after))]
    )
    kept = nearest_first([(before if side == "before" else after)[i] for side, i in order], chars)
    by_side: dict[str, dict[int, str]] = {"before": {}, "after": {}}
    for (side, i), text in zip(order, kept, strict=True):
        if text:
            by_side[side][i] = text
    return (
        [by_side["before"][i] for i in sorted(by_side["before"])],
        [by_side["after"][i] for i in sorted(by_side["after"])],
    )


def nearest_first(texts: Sequence[str], chars: int) -> list[str]:
    """``texts`` (nearest the target first) while they fit in ``chars``; the first that does not is
    cut to what is left, if that still says something, and the rest are left out (``""``)."""
    kept: list[str] = []
    left = chars
    for raw in texts:
        text = raw.strip() if left >= _SHORTEST_NEIGHBOUR else ""
        if text and len(text) > left:
            text = _cut(text, left)
        kept.append(text)
        left -= len(text)
    return kept
