"""The evaluator and claim-extractor interfaces, and the data they exchange.

An evaluator must implement only :meth:`Evaluator.evaluate_batch`; a claim extractor only
:meth:`ClaimExtractor.extract_batch`. ``name`` and ``version`` identify the implementation (and its
prompts or learned parameters) for the evaluation cache: change either and cached results stop
matching.

Both grade the text a reader sees, never Markdown syntax: an evaluator scores
:func:`as_read` of its items (claim, source and context rendered by
:func:`aclarai.parsers.reader_text`, so ``The app has no [[Ribbon]].`` says what
``The app has no Ribbon.`` says), and an extractor reads only the block's prose
(:func:`prose_of`: code, math, comments, embeds and task items state no claim).

A score of ``None`` means the evaluation failed and ``status`` says why. It is never 0.
"""

from __future__ import annotations

import hashlib
import operator
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from types import TracebackType
from typing import Any, TypeVar

from aclarai.parsers import (
    SCORE_NAMES,
    SCORE_WORDS,
    EvaluationError,
    normalize_text,
    prose_text,
    reader_text,
)

_Record = TypeVar("_Record")
W = TypeVar("W")
"""A window's element: an utterance, a text, a position."""


def _pickled_by_fields(cls: type[_Record]) -> type[_Record]:
    """Pickle the record as its class and field values.

    A frozen slots dataclass otherwise pickles through the ``__getstate__`` that dataclasses
    writes, which looks the fields up again for every object; these records cross to the
    worker processes by the hundred thousand (a quarter of a cold resync's main-process time).
    """
    values = operator.attrgetter(*(f.name for f in fields(cls)))  # type: ignore[arg-type]

    def __reduce__(self: _Record) -> tuple[type[_Record], tuple[object, ...]]:
        return cls, values(self)

    cls.__reduce__ = __reduce__  # type: ignore[assignment,method-assign]
    return cls


VERDICT_LABELS: tuple[str, ...] = ("supported", "weakly_supported", "unsupported")
UNAVAILABLE_STATUS = "llm_unavailable"
"""How a :class:`Score`'s status starts when the model endpoint could not be reached."""


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Utterance:
    block_id: str
    text: str


def nearest_first_order(before: Sequence[W], after: Sequence[W]) -> list[W]:
    """A window's blocks nearest its target first: the one before, the one after, the second
    before, the second after…"""
    order: list[W] = []
    for distance in range(max(len(before), len(after))):
        if distance < len(before):
            order.append(before[-1 - distance])
        if distance < len(after):
            order.append(after[distance])
    return order


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class ExtractionInput:
    """A dirty block and the window of blocks around it (``window.claimify.p`` / ``.f``)."""

    block: Utterance
    before: tuple[Utterance, ...] = ()
    after: tuple[Utterance, ...] = ()
    conversation: bool = True
    """Whether the block is a line of a conversation note (one with participants), where
    ``name:`` names a speaker; in any other note it is a label."""

    def around(self) -> tuple[str, ...]:
        """The window's texts, the nearest the block first (what an evaluator keeps of a window
        it must cut)."""
        return tuple(u.text for u in nearest_first_order(self.before, self.after))


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Claim:
    id: str
    block_id: str
    text: str


def claim_id(block_id: str, text: str) -> str:
    """Deterministic claim id: the same claim of the same block always gets the same id."""
    digest = hashlib.sha256(f"{block_id}\x00{normalize_text(text)}".encode()).hexdigest()
    return f"clm-{digest[:20]}"


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class EvalItem:
    """One claim to score against the utterance it came from."""

    claim: str
    source: str
    context: tuple[str, ...] = ()
    """Neighbouring utterances (the window, the nearest the block first), for decontextualization
    and verification."""
    claim_id: str | None = None


def as_read(items: Sequence[EvalItem]) -> list[EvalItem]:
    """The items as a reader sees them: claim, source and context rendered from Markdown
    (extractors keep a block's code spans in their claims, so that they read the same here)."""
    # The claims of a block share its source and window: each text is rendered once.
    rendered: dict[str, str] = {}

    def read(text: str) -> str:
        if not isinstance(text, str):
            return ""  # the evaluator reports the item; one bad item must not sink the batch
        found = rendered.get(text)
        if found is None:
            found = rendered[text] = reader_text(text)
        return found

    return [
        EvalItem(read(i.claim), read(i.source), tuple(map(read, i.context or ())), i.claim_id)
        for i in items
    ]


def prose_of(item: ExtractionInput) -> ExtractionInput:
    """The input as an extractor reads it: the block's prose, and its neighbours as read."""
    return ExtractionInput(
        block=Utterance(item.block.block_id, prose_text(item.block.text, code_spans=True)),
        before=tuple(Utterance(u.block_id, reader_text(u.text)) for u in item.before),
        after=tuple(Utterance(u.block_id, reader_text(u.text)) for u in item.after),
        conversation=item.conversation,
    )


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Score:
    """A claim's scores, first in :data:`~aclarai.parsers.SCORE_NAMES` order, then what became of
    its evaluation."""

    entailed_score: float | None
    coverage_score: float | None
    decontextualization_score: float | None
    status: str = "ok"
    """``ok``, or why some score is ``None``."""
    verdict: str | None = None
    """One of :data:`VERDICT_LABELS`, or ``None`` when no verdict was produced."""
    justification: str | None = None
    omitted: tuple[str, ...] = ()
    """Verifiable elements of the source the claim leaves out (coverage)."""

    @classmethod
    def failed(cls, status: str) -> Score:
        """The score of an evaluation that failed: every score ``None``, ``status`` saying why."""
        unscored: dict[str, Any] = dict.fromkeys(SCORE_NAMES)
        return cls(**unscored, status=status)

    @property
    def unavailable(self) -> bool:
        """Whether it failed because the model endpoint could not be reached (try again later)."""
        return self.status.startswith(UNAVAILABLE_STATUS)


WEAK_SCORE = 0.70
"""A score under this is explained: the claim's justification says why, in its own words."""


def explained(
    score: Score, *, entailment: str, decontextualization: str = "", coverage: str = ""
) -> Score:
    """``score`` whose justification, when a score is under :data:`WEAK_SCORE`, explains the
    scores under it, the weakest first: ``"coverage 0.00: leaves out File.base."``.

    A quality is the geometric mean of the three scores, so a low one is explained by the lowest
    of them first; the verdict's own reason follows when entailment is not among them.

    Args:
        score: A complete score.
        entailment: Why the source does or does not support the claim.
        decontextualization: What the claim needs from outside it; a general phrase if empty.
        coverage: What the claim leaves out; ``score.omitted`` is named if empty.
    """
    values = {
        name: value
        for name in SCORE_WORDS
        if isinstance(value := getattr(score, name), int | float)
    }
    if not values:
        return score
    weak = sorted((n for n in values if values[n] < WEAK_SCORE), key=values.__getitem__)
    if not weak:
        return score
    omitted = ", ".join(score.omitted[:3])
    reasons = {
        "entailed_score": entailment,
        "coverage_score": coverage
        or (f"leaves out {omitted}" if omitted else "leaves out much of what its source names"),
        "decontextualization_score": decontextualization
        or "needs context from around it to be understood",
    }
    why = "; ".join(f"{SCORE_WORDS[n]} {values[n]:.2f}: {reasons[n].rstrip('. ')}" for n in weak)
    if "entailed_score" not in weak and score.justification:
        # The source supports the claim: the verdict's reason says so after the weak score's.
        why = f"{why}. {score.justification.rstrip('. ')}"
    return replace(score, justification=f"{why}.")


class ClaimExtractor(ABC):
    name: str = "abstract"
    version: str = "0"

    @abstractmethod
    def extract_batch(self, inputs: Sequence[ExtractionInput]) -> list[list[Claim]]:
        """Claims of each input's block, in input order."""

    def extract(self, item: ExtractionInput) -> list[Claim]:
        return self.extract_batch([item])[0]

    def extract_each(
        self, inputs: Sequence[ExtractionInput]
    ) -> list[list[Claim] | EvaluationError]:
        """Like :meth:`extract_batch`, but a block whose extraction failed gets its error in its
        place, so that one bad block fails alone. The default suits extractors that cannot
        fail per block."""
        return list(self.extract_batch(inputs))

    def close(self) -> None:  # noqa: B027 - optional hook, most implementations hold nothing
        """Release connections; the default holds none."""


class Evaluator(ABC):
    name: str = "abstract"
    version: str = "0"

    @abstractmethod
    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        """One :class:`Score` per item, in order. Failures are ``None`` scores, not exceptions."""

    def evaluate(self, item: EvalItem) -> Score:
        return self.evaluate_batch([item])[0]

    @property
    def model_id(self) -> str:
        """What is recorded on the edge as ``model``."""
        return f"{self.name}:{self.version}"

    def close(self) -> None:  # noqa: B027 - optional hook, most implementations hold nothing
        """Release connections; the default holds none."""

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
