"""Grades read from a model's reply: the digit it wrote, or the expected value over the digits it
weighed.

A grade of 1 to 5 is one token. Where the server gives each token's ``top_logprobs``, the grade
is the probability-weighted mean of the digits the model considered there (a model torn between 4
and 5 gives 4.5, not a coin toss between them); it ranks claims far better than the written digit
on a small model (AUROC 0.86 against 0.79 on TRUE ``begin`` with Qwen2.5-1.5B). Pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from aclarai.agents.llm.client import TokenOptions

LOWEST = 1
HIGHEST = 5


def weighed_grades(tokens: Sequence[TokenOptions], written: Mapping[str, int]) -> dict[str, float]:
    """Each key's grade: the expected digit where the reply's tokens say what the model weighed
    after ``"key":``, else the grade as written.

    Args:
        tokens: the reply's tokens with their options (empty when the server gave none).
        written: the grades as parsed from the reply, by key.
    """
    weighed: dict[str, float] = {}
    text = ""
    for entry in tokens:
        digit = entry.token.strip()
        if digit.isdigit():
            key = _key_before(text)
            if key is not None and key in written and key not in weighed:
                expected = _expected_digit(entry.options)
                if expected is not None:
                    weighed[key] = expected
        text += entry.token
    return {key: weighed.get(key, float(grade)) for key, grade in written.items()}


def unit_score(grade: float) -> float:
    """A grade of 1 to 5 as a score of 0 to 1, to three decimals."""
    clamped = min(max(grade, LOWEST), HIGHEST)
    return round((clamped - LOWEST) / (HIGHEST - LOWEST), 3)


def _key_before(text: str) -> str | None:
    """The JSON key whose value starts here: ``… "c2":`` gives ``c2``."""
    stripped = text.rstrip()
    if not stripped.endswith(":"):
        return None
    head = stripped[:-1].rstrip()
    if not head.endswith('"'):
        return None
    start = head.rfind('"', 0, len(head) - 1)
    return head[start + 1 : -1] if start >= 0 else None


def _expected_digit(options: Sequence[tuple[str, float]]) -> float | None:
    weights: dict[int, float] = {}
    for token, logprob in options:
        digit = token.strip()
        if len(digit) == 1 and digit.isdigit() and LOWEST <= int(digit) <= HIGHEST:
            weights[int(digit)] = weights.get(int(digit), 0.0) + math.exp(logprob)
    total = sum(weights.values())
    if total <= 0.0:
        return None
    return sum(digit * weight for digit, weight in weights.items()) / total
