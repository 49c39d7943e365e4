"""Labelled sample vaults (benchmarks/vaults/FORMAT.md): matching claims to labelled sentences.

Pure functions for ``worst_claims.py``: what a claim is, measured against the sentences a person
labelled claim or no claim, and the few text tests the report needs.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aclarai.parsers import reader_text

UNSPACED_LANGS = frozenset({"zh", "ja"})
"""Languages written without spaces: compared character by character."""
SAME = 0.6
"""Token F1 from which a claim is the labelled sentence it matches best."""
UNRELATED = 0.3
"""Token F1 under which a claim matches no labelled sentence of its note."""
PIECE = 0.8
"""Share of a claim's tokens found in one sentence that makes it a piece of that sentence."""

# "Note: Sync keeps 12 months." states what follows the label; a claim may rightly drop it.
_LEADING_LABEL = re.compile(r"^[^:：]{1,40}[:：]\s*(\S.*)$")
_HEADING = re.compile(r"^#{1,6}(\s|$)")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")
_FENCE = ("```", "~~~")
_WORD = re.compile(r"\w+")

# A word listed with a capital letter is that word only when so written: "Sie" and "Lei" are
# the polite "you", "sie" and "lei" are "she".
_SECOND_PERSON = {
    "en": "you your yours yourself yourselves",
    "de": "du dich dir dein deine deinen deinem deiner deines Sie Ihnen Ihr Ihre Ihren Ihrem Ihrer"
    " Ihres ihr euch euer eure",
    "fr": "vous tu te toi votre vos ton ta tes",
    "es": "tú tu tus te ti usted ustedes vosotros os vuestro vuestra",
    "it": "tu ti te tuo tua tuoi tue voi vostro vostra vostri vostre Lei",
    "pt": "você vocês seu sua seus suas te ti tu teu tua teus tuas",
    "nl": "je jij jou jouw u uw jullie",
    "zh": "你 您",
    "ja": "あなた",
}
# Other words a claim needs its context for. Third-person and demonstrative pronouns count only
# as the first word: later in a sentence they mostly point back into the sentence itself.
_LEADING_CONTEXT = {
    "en": "he she it they this that these those",
    "de": "er sie dies diese dieser dieses dort",
    "fr": "il elle ils elles ce cela ceci ça",
    "es": "él ella ellos ellas esto eso este esta ese esa",
    "it": "lui lei loro questo questa quello quella ciò",
    "pt": "ele ela eles elas isso isto este esta esse essa",
    "nl": "hij zij ze dit dat deze die",
}
_ANYWHERE_CONTEXT = {
    "en": "i me my mine we us our ours here yesterday today tomorrow",
    "de": "ich mich mir mein meine meinen meinem meiner wir uns unser unsere hier gestern heute",
    "fr": "je j moi mon ma mes nous notre nos ici hier aujourd demain",
    "es": "yo mi mis nosotros nosotras nuestro nuestra nuestros nuestras aquí ayer hoy",
    "it": "io mio mia miei mie noi nostro nostra nostri nostre qui qua ieri oggi domani",
    "pt": "eu meu minha meus minhas nós nosso nossa nossos nossas aqui ontem hoje amanhã",
    "nl": "ik mij mijn wij we ons onze hier gisteren vandaag",
    "zh": "我 他 她 它 这 那 昨天 今天 明天",
    "ja": "私 僕 彼 これ それ あれ この その あの ここ そこ 昨日 今日 明日",
}


@dataclass(frozen=True)
class Label:
    text: str
    claim: bool
    kind: str


@dataclass(frozen=True)
class Match:
    """A claim's best labelled sentence; ``precision`` and ``recall`` of the claim's tokens."""

    label: Label
    f1: float
    precision: float
    recall: float


def load_labels(path: Path) -> dict[str, list[Label]]:
    """A language folder's ``labels.json``: note path → its labelled sentences, in order.

    Raises:
        ValueError: not JSON, or not an object of lists.
    """
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: not a JSON object")
    labels: dict[str, list[Label]] = {}
    for note, entries in raw.items():
        if not isinstance(entries, list):
            raise ValueError(f"{path}: {note!r} is not a list")
        labels[note] = [
            Label(str(e["text"]), bool(e.get("claim")), str(e.get("kind") or "claim"))
            for e in entries
            if isinstance(e, dict) and "text" in e
        ]
    return labels


def normalise(text: str) -> str:
    """What a reader sees, casefolded, punctuation and symbols as spaces, spaces collapsed."""
    plain = reader_text(text).casefold()
    kept = (" " if unicodedata.category(c)[0] in "PS" else c for c in plain)
    return " ".join("".join(kept).split())


def tokens(text: str, lang: str) -> list[str]:
    normal = normalise(text)
    return list(normal.replace(" ", "")) if lang in UNSPACED_LANGS else normal.split()


def overlap(claim: Sequence[str], sentence: Sequence[str]) -> tuple[float, float, float]:
    """F1, precision (claim tokens found in the sentence) and recall (sentence tokens covered)."""
    common = sum((Counter(claim) & Counter(sentence)).values())
    if not common:
        return 0.0, 0.0, 0.0
    precision, recall = common / len(claim), common / len(sentence)
    return 2 * precision * recall / (precision + recall), precision, recall


def best_match(claim: str, labels: Sequence[Label], lang: str) -> Match | None:
    """The labelled sentence the claim overlaps most, also read without a leading label."""
    claim_tokens = tokens(claim, lang)
    best: Match | None = None
    for label in labels:
        lead = _LEADING_LABEL.match(label.text)
        for variant in (label.text, lead.group(1)) if lead else (label.text,):
            sentence = tokens(variant, lang)
            if not claim_tokens or not sentence:
                continue
            f1, precision, recall = overlap(claim_tokens, sentence)
            if best is None or f1 > best.f1:
                best = Match(label, f1, precision, recall)
    return best


def verdict(match: Match | None) -> str:
    """``"claim"``, ``"no-claim"``, ``"fragment"`` or ``"unmatched"``.

    A claim that overlaps a claim sentence loosely (a paraphrase) counts as a claim.
    """
    if match is None:
        return "unmatched"
    if match.f1 >= SAME:
        return "claim" if match.label.claim else "no-claim"
    # A short piece of a long sentence has a low F1, yet is plainly a piece of that sentence.
    if (
        match.label.claim
        and match.recall < 0.5
        and (match.f1 >= UNRELATED or match.precision >= PIECE)
    ):
        return "fragment"
    return "unmatched" if match.f1 < UNRELATED else "claim"


def found_claims(labels: Sequence[Label], claims: Sequence[str], lang: str) -> tuple[int, int]:
    """How many of the labelled claim sentences some claim restates (F1 >= :data:`SAME`), of
    how many: what the filters of what is no claim must not lose."""
    said = [t for t in (tokens(c, lang) for c in claims) if t]
    wanted = [t for t in (tokens(label.text, lang) for label in labels if label.claim) if t]
    hits = sum(any(overlap(c, sentence)[0] >= SAME for c in said) for sentence in wanted)
    return hits, len(wanted)


def generic_you_only(claim: str, lang: str) -> bool:
    """Whether a generic second-person word is all the claim needs a context for."""
    if lang in UNSPACED_LANGS:
        you = _SECOND_PERSON.get(lang, "").split()
        other = _ANYWHERE_CONTEXT.get(lang, "").split()
        return any(w in claim for w in you) and not any(w in claim for w in other)
    words = _WORD.findall(reader_text(claim))
    yours = [_second_person(w, lang) for w in words]
    if not any(yours):
        return False
    leading = set(_LEADING_CONTEXT.get(lang, "").split())
    anywhere = set(_ANYWHERE_CONTEXT.get(lang, "").split())
    if words[0].casefold() in leading and not yours[0]:
        return False
    return not any(w.casefold() in anywhere for w, y in zip(words, yours, strict=True) if not y)


def _second_person(word: str, lang: str) -> bool:
    return any(
        word == w if w != w.casefold() else word.casefold() == w
        for w in _SECOND_PERSON.get(lang, "").split()
    )


def weakest(scores: Mapping[str, float]) -> list[str]:
    """The names of the lowest scores, ties (as shown, two decimals) included."""
    low = f"{min(scores.values()):.2f}"
    return [name for name, value in scores.items() if f"{value:.2f}" == low]


def explained(justification: str | None, scores: Mapping[str, float]) -> bool:
    """Whether the justification opens with its weakest score, e.g. ``coverage 0.00: …``."""
    text = (justification or "").strip()
    return any(text.startswith(f"{name} {scores[name]:.2f}") for name in weakest(scores))


def count_blocks(markdown: str) -> int:
    """Paragraphs, list items and code blocks of a note, roughly as aclarai cuts them."""
    count, fenced, paragraph = 0, False, False
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith(_FENCE):
            count += not fenced
            fenced, paragraph = not fenced, False
        elif fenced:
            continue
        elif not stripped or _HEADING.match(stripped):
            paragraph = False
        elif _LIST_ITEM.match(line) or not paragraph:
            count += 1
            paragraph = True
    return count


def select_notes(blocks_by_style: Mapping[str, Sequence[tuple[str, int]]], total: int) -> list[str]:
    """The first notes of each style until each holds its share of ``total`` blocks.

    Args:
        blocks_by_style: Each style's notes in order, with their block counts.
        total: Blocks wanted over all styles; every style keeps at least one note.
    """
    share = total / max(len(blocks_by_style), 1)
    chosen: list[str] = []
    for notes in blocks_by_style.values():
        held = 0
        for index, (note, blocks) in enumerate(notes):
            if index and held >= share:
                break
            chosen.append(note)
            held += blocks
    return chosen
