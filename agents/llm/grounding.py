"""Whether a claim was drawn from its block, or from the context shown beside it.

A model given a block and its neighbours sometimes states a neighbour's fact as a claim of the
block: "The checkout service was down for 47 minutes" filed under "The root cause was an expired
TLS certificate". A claim of a block restates the block, with references resolved from the
context: it shares words with the block, and of its words that the context does not explain, a
good share are the block's. Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence

from aclarai.agents.offline.features import analyse

LEAST_SHARE = 1 / 3
"""Of a claim's content words (stemmed) and numbers that the context does not hold, the share its
block must hold: "Ana Lima moved to Porto in 2019" from "She moved there in 2019" keeps 2 of 5
even with no context given."""
LEAST_SHARED = 2
"""Content words a claim must share with its block (all of them, for a block with fewer): a
neighbour's fact shares none or one, however well the context explains it."""


def drawn_from(claim: str, block: str, context: Sequence[str] = ()) -> bool:
    """Whether ``claim`` restates ``block``, its references resolved from ``context`` (see the
    module docstring); a claim with no content words is not judged here."""
    words = _content(claim)
    if not words:
        return True
    own = _content(block)
    shared = words & own
    if len(shared) < min(LEAST_SHARED, len(own)):
        return False
    explained = frozenset().union(*(_content(text) for text in context)) - own
    return len(shared) >= LEAST_SHARE * len(words - explained)


def _content(text: str) -> frozenset[str]:
    view = analyse(text)
    return view.content | view.numbers
