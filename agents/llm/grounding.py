"""Whether a claim was drawn from its block, or from the context shown beside it.

A model given a block and its neighbours sometimes states a neighbour's fact as a claim of the
block: "The checkout service was down for 47 minutes" filed under "The root cause was an expired
TLS certificate". A claim of a block restates the block, with references resolved from the
context: most of its content words are the block's. Pure functions.
"""

from __future__ import annotations

from aclarai.agents.offline.features import analyse

LEAST_SHARE = 1 / 3
"""Of a claim's content words (stemmed) and numbers, the share its block must hold. Resolving
"She moved there in 2019" to "Ana Lima moved to Porto in 2019" keeps 2 of 5; a neighbour's fact
keeps none or one."""


def drawn_from(claim: str, block: str) -> bool:
    """Whether ``claim`` restates ``block`` (see the module docstring); a claim with no content
    words is not judged here."""
    words = _content(claim)
    if not words:
        return True
    return len(words & _content(block)) >= LEAST_SHARE * len(words)


def _content(text: str) -> frozenset[str]:
    view = analyse(text)
    return view.content | view.numbers
