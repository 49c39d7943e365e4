"""Cheap lexical features of a (claim, source) pair for the offline entailment model.

Everything here is pure and deterministic: content-word overlap in both directions (plain, and
weighted by rarity, so that "Frankfurt" counts more than "said"), bigram and trigram overlap and
the order of matched words (PAWS-style swaps keep every word but break word pairs and word
order), numbers and capitalised names of the claim missing from the source, negation mismatch
against the best-aligned source sentence, and a character 4-gram containment that stands in for
an embedding similarity without any downloaded weights.

Words are those of :mod:`~aclarai.agents.offline.words`: Japanese and Chinese, written without
spaces, are compared in overlapping character pairs, and their hiragana-only pairs (particles,
endings) are function words.

A multi-sentence claim is compared sentence by sentence, each against its best-aligned source
sentence, and the sentences are pooled in proportion to their content words: a filler sentence
("Yes, I love it!") weighs little, a long unsupported one a lot.

Rarity comes from ``wordfreq.json``: Zipf frequencies of common English word stems,
derived from the ``wordfreq`` package's data (CC-BY-SA 4.0; ``benchmarks/fit_offline.py
--build-wordfreq`` regenerates it). A stem it does not list counts as rare.
"""

from __future__ import annotations

import itertools
import json
import math
import operator
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from itertools import chain, pairwise

from aclarai.agents.offline.words import find_words, is_kana_only
from aclarai.parsers import split_sentences


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of a literal word list."""
    return frozenset(text.split())


FEATURE_NAMES: tuple[str, ...] = (
    "content_precision_mean",
    "weighted_precision",
    "aligned_recall_mean",
    "bigram_precision_mean",
    "trigram_precision",
    "order_agreement",
    "chargram_containment",
    "matched_content_log",
    "unmatched_content_log",
    "unmatched_numbers",
    "unmatched_entities",
    "negation_mismatch",
)
"""Names of the values :func:`pair_features` returns, in order (the model's inputs)."""
FEATURE_SIGNS: dict[str, int] = {
    name: -1 if name.startswith(("unmatched", "negation")) else 1 for name in FEATURE_NAMES
}
"""The sign each feature's weight must have: support features never count against a claim,
contradiction features never for it."""

STOPWORDS = word_set(
    """
    a an the and or but if then else so than that this these those there here of to in on at by
    for with from into onto over under about as is are was were be been being am do does did doing
    have has had having i me my mine myself we us our ours you your yours he him his she her hers it
    its they them their theirs what which who whom whose when where why how all any both each few
    more most other some such only own same too very can will just should would could may might must
    shall also s t m re ve ll d yes yeah yep ok okay oh well really actually like i'm it's that's
    there's i've i'd i'll we're we've they're they've you're he's she's let's one ones thing things
    get got go going went gone make made know think say said
    """
)
CHITCHAT = word_set(
    """
    love agree true sure great good cool awesome nice interesting fun favorite favourite lot lots
    ton tons wow hi hello hey thanks thank guess believe feel maybe probably definitely pretty kind
    sort stuff something anything everything right even still much many always often sometimes
    lol haha hmm um uh wish hope want idea mean seem seems
    """
)
"""Conversational filler: evidence neither for a claim nor against it."""
NEGATIONS = word_set(
    "not no never none nobody nothing neither nor without cannot nowhere hardly barely"
)
MONTHS = word_set(
    "january february march april may june july august september october november december"
)
WEEKDAYS = word_set("monday tuesday wednesday thursday friday saturday sunday")
_CARDINALS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety"
_ORDINALS = (
    "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth"
)
NUMBER_WORDS: dict[str, str] = {
    **{word: str(value) for value, word in enumerate(_CARDINALS.split())},
    **{word: str(value) for value, word in enumerate(_ORDINALS.split()) if value},
    **{word: f"{value}0" for value, word in enumerate(_TENS.split(), 2)},
    "hundred": "100",
    "thousand": "1000",
    "million": "1000000",
    "billion": "1000000000",
}

_FULL_WIDTH = re.compile("[\uff01-\uff5e\uff66-\uff9f]")
_COMPOUND_NUMBER = re.compile(
    rf"\b({_TENS.replace(' ', '|')})[- ](one|two|three|four|five|six|seven|eight|nine)\b", re.I
)
""""forty-seven" and "forty seven", written as "47" before analysis."""
_YEAR_RANGE = re.compile(r"\b(1[5-9]|20)(\d\d)([-–/])(\d\d)\b")
"""A short year range ("2018–19"), written out in full ("2018–2019") before analysis."""
_DIGITS = re.compile(r"\d+(?:[.:,]\d+)*")
_VOWEL = re.compile(r"[aeiouy]")
_SUFFIXES = ("ation", "ment", "ing", "ed", "ly")
_CHARGRAM = 4
_NOT_CONTENT = STOPWORDS | CHITCHAT | NEGATIONS
_WORD_CACHE = 16384  # distinct words remembered: most of a vault's running text, a few MB
# Commas and colons split clauses only before a space, so "1,200" and "14:02" stay whole. The
# words are "and but because although though whereas while as if", grouped by their first
# letters because that makes the split about a fifth faster.
_CLAUSE = re.compile(
    r"[,;:](?=\s)|[()\[\]—–]|\b(?:a(?:nd|lthough|s if)|b(?:ut|ecause)|though|wh(?:ereas|ile))\b",
    re.I,
)
WORDFREQ_RESOURCE = "wordfreq.json"
_COMMON_ZIPF = 6.0
"""Words at least this frequent ("the", "said") weigh 1; each Zipf point rarer adds 1."""
_RESTATES = 0.6
_CLOSE_PRECISION = 0.8
_CLOSE_RECALL = 0.75
_NOT_NEGATING = frozenset({("no", "less"), ("no", "more"), ("not", "only")})
"""Negation words followed by these do not negate ("no less than 13", "not only")."""
# "I don't know much about X, but ...", "we're not sure when ...": the speaker's state, not X's.
_FIRST_PERSON = word_set("i i'm i've i'd we we're we've")
_COGNITION = word_set("know sure think remember recall believe guess idea clue certain")


@dataclass(frozen=True, slots=True)
class SentenceView:
    """The parts of one sentence the features compare."""

    stems: tuple[str, ...]
    content: frozenset[str]
    clauses: tuple[frozenset[str], ...]
    """Content stems of each clause that has any (split at commas, colons, "and", "but" ...)."""
    negations: int
    """Negations of content ("I'm not sure, but ..." and other hedges count none)."""
    negated: frozenset[str]
    """Stems of the content words that follow a negation in its clause."""
    numbers: frozenset[str]
    numeric: frozenset[str]
    """Content stems that hold a number ("47", "v2.3"), left out where polarity is compared."""
    names: frozenset[str]
    """Content stems of title-case words that are not sentence-initial (names, places)."""
    lowered: str
    """The words in lower case, joined by spaces (what the character 4-grams are taken from)."""


class TextView:
    """One analysed text: its sentences, and the sets a claim is matched against.

    ``entities`` are the stems of capitalised words that are not sentence-initial (names,
    places). The stem n-grams are only looked up in a source, so they are made when first asked
    for.
    """

    __slots__ = ("_bigrams", "_trigrams", "content", "entities", "numbers", "sentences")

    def __init__(
        self,
        sentences: tuple[SentenceView, ...],
        content: frozenset[str],
        numbers: frozenset[str],
        entities: frozenset[str],
    ) -> None:
        self.sentences = sentences
        self.content = content
        self.numbers = numbers
        self.entities = entities
        self._bigrams: frozenset[tuple[str, ...]] | None = None
        self._trigrams: frozenset[tuple[str, ...]] | None = None

    @property
    def bigrams(self) -> frozenset[tuple[str, ...]]:
        """Pairs of consecutive stems within a sentence."""
        if self._bigrams is None:
            pairs = (pairwise(s.stems) for s in self.sentences)
            self._bigrams = frozenset(chain.from_iterable(pairs))
        return self._bigrams

    @property
    def trigrams(self) -> frozenset[tuple[str, ...]]:
        """Triples of consecutive stems within a sentence."""
        if self._trigrams is None:
            self._trigrams = frozenset(
                chain.from_iterable(
                    zip(s.stems, s.stems[1:], s.stems[2:], strict=False) for s in self.sentences
                )
            )
        return self._trigrams


def normalise(text: str) -> str:
    """Curly apostrophes made straight, "forty-seven" written "47", "2018–19" "2018–2019",
    full-width letters and digits ("１４００") written narrow."""
    text = text.replace("’", "'")
    if not text.isascii() and _FULL_WIDTH.search(text):
        text = unicodedata.normalize("NFKC", text)
    if "ty" in text:
        text = _COMPOUND_NUMBER.sub(_compound_number, text)
    if "-" in text or "–" in text or "/" in text:
        text = _YEAR_RANGE.sub(r"\1\2\3\1\4", text)
    return text


# Coverage and decontextualization both read a claim's words, and coverage a source
# sentence's twice.
@lru_cache(maxsize=16)
def words_of(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The words of a text as written, and in lower case."""
    words = tuple(find_words(text))
    return words, tuple(map(str.lower, words))


# A source is split here and again by coverage, and most sources need no normalising.
@lru_cache(maxsize=64)
def sentences_of(text: str) -> tuple[str, ...]:
    """:func:`~aclarai.parsers.split_sentences` of a text, as a tuple."""
    return tuple(split_sentences(text))


def analyse(text: str) -> TextView:
    """Analyse a text once, so that several claims can be compared with it cheaply."""
    text = normalise(text)
    parts = [_analyse_sentence(s) for s in sentences_of(text) or [text]]
    if len(parts) == 1:
        return parts[0]
    return TextView(
        sentences=tuple(part.sentences[0] for part in parts),
        content=frozenset().union(*(part.content for part in parts)),
        numbers=frozenset().union(*(part.numbers for part in parts)),
        entities=frozenset().union(*(part.entities for part in parts)),
    )


# Claims mostly restate one sentence of their source word for word, and every claim of a block
# is compared with the same source, so sentences are analysed once while they are recent.
@lru_cache(maxsize=32)
def _analyse_sentence(sentence: str) -> TextView:
    """One sentence as a text of its own."""
    words: list[str] = []
    lowered: list[str] = []
    lexemes: list[_Lexeme] = []
    clauses: list[frozenset[str]] = []
    negations = 0
    negated: set[str] = set()
    for part in _CLAUSE.split(sentence):
        part_words = find_words(part)
        if not part_words:
            continue
        words.extend(part_words)
        lowered_part = list(map(str.lower, part_words))
        lowered.extend(lowered_part)
        part_lexemes = list(map(_lexeme, lowered_part))
        lexemes.extend(part_lexemes)
        content = frozenset([lex[1] for lex in part_lexemes if lex[1] is not None])
        if not content:
            continue
        clauses.append(content)
        # Most clauses hold no word negation_positions could count, and this says so cheaply.
        if NEGATIONS.isdisjoint(lowered_part) and "'" not in part and "t" not in lowered_part:
            continue
        positions = negation_positions(lowered_part)
        if positions and not _is_hedge(lowered_part):
            # A negation governs what follows it: "a season with no trophies" negates
            # the trophies, not the season.
            negations += len(positions)
            negated.update(lex[1] for lex in part_lexemes[positions[0] :] if lex[1] is not None)
    stems = tuple([lex[0] for lex in lexemes])
    # In a shouted sentence ("YES, JAZZ HAS SWING") capitals mark no names.
    shouted = 2 * sum(map(str.isupper, words)) > len(words) > 2
    capitalised = (
        []
        if shouted
        else [
            i for i in range(1, len(words)) if words[i][0].isupper() and lowered[i] not in STOPWORDS
        ]
    )
    entities = frozenset([stems[i] for i in capitalised])
    sentence_content = frozenset().union(*clauses)
    # Acronyms are left out of names: placeholders like "UNK" are not names.
    names = frozenset([stems[i] for i in capitalised if words[i].istitle()]) & sentence_content
    view = SentenceView(
        stems=stems,
        content=sentence_content,
        clauses=tuple(clauses),
        negations=negations,
        negated=frozenset(negated),
        numbers=frozenset([n for lex in lexemes for n in lex[2]]),
        numeric=frozenset([c for c in sentence_content if number_values(c)]),
        names=names,
        lowered=" ".join(lowered),
    )
    return TextView(
        sentences=(view,),
        content=view.content,
        numbers=view.numbers,
        entities=entities,
    )


def pair_features(claim: TextView, source: TextView) -> tuple[float, ...]:
    """Feature vector of a claim against a source, in :data:`FEATURE_NAMES` order."""
    precisions: list[float] = []
    recalls: list[float] = []
    bigram_scores: list[float] = []
    trigrams = trigrams_found = 0
    sizes: list[int] = []
    orders: list[float] = []
    chargram_scores: list[float] = []
    negation_mismatch = 0.0
    for sentence in claim.sentences:
        if not sentence.content:
            continue
        best = best_aligned(sentence, source)
        aligned_shared = len(sentence.content & best.content)
        precisions.append(len(sentence.content & source.content) / len(sentence.content))
        recalls.append(aligned_shared / max(len(best.content), 1))
        bigram_scores.append(_ngram_precision(sentence.stems, 2, source.bigrams))
        count = len(sentence.stems) - 2
        if count > 0:
            trigrams += count
            trigrams_found += _ngram_hits(sentence.stems, 3, source.trigrams)
        sizes.append(len(sentence.content))
        orders.append(_order_agreement(sentence, best))
        chargram_scores.append(_chargram_containment(sentence.lowered, best.lowered))
        aligned = aligned_shared / len(sentence.content)
        # Polarity only means something when the claim restates the aligned sentence.
        if aligned >= _RESTATES and polarity_flipped(sentence, best):
            negation_mismatch = 1.0
    if not precisions:
        # Nothing checkable in the claim: no overlap can count in its favour.
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    matched = claim.content & source.content
    total = sum(sizes)
    return (
        sum(precisions) / len(precisions),
        _weight(matched) / _weight(claim.content),
        sum(recalls) / len(recalls),
        sum(bigram_scores) / len(bigram_scores),
        trigrams_found / trigrams if trigrams else 0.0,
        sum(map(operator.mul, orders, sizes)) / total,
        sum(map(operator.mul, chargram_scores, sizes)) / total,
        math.log1p(len(matched)),
        math.log1p(len(claim.content - source.content)),
        float(min(len(claim.numbers - source.numbers), 3)),
        float(min(len(claim.entities - source.content), 3)),
        negation_mismatch,
    )


def contradiction(claim: TextView, source: TextView) -> str | None:
    """What a claim contradicts in the source it restates, if anything.

    Only near-restatements count, since on looser pairs the aligned sentence is often not the
    one the claim is about: ``"negation"`` when a claim sentence has the content of its aligned
    source sentence but the opposite polarity, ``"number"`` when it swaps a number of that
    sentence for one the source never mentions, ``"name"`` when it swaps a name the same way
    ("with Bosch on Monday" against "with Siemens on Monday").
    """
    for sentence in claim.sentences:
        core = sentence.content - sentence.numeric
        if not core:
            continue
        best = best_aligned(sentence, source)
        # Numbers are left out so that a swapped number still counts as a restatement, and only
        # the source clauses the claim draws on count, so "X and it is stable now" restates X.
        drawn_on = frozenset().union(*(c for c in best.clauses if c & core)) - best.numeric
        # A name swapped for one the source never mentions still counts as restated.
        swapped = _swapped_names(sentence.names - source.content, best.names - sentence.content)
        shared = len(core & best.content) + swapped
        if shared / len(core) < _CLOSE_PRECISION or shared / max(len(drawn_on), 1) < _CLOSE_RECALL:
            continue
        if polarity_flipped(sentence, best):
            return "negation"
        if sentence.numbers - source.numbers and best.numbers - sentence.numbers:
            return "number"
        # Only a strict swap: every other word of the claim is in the aligned sentence.
        if swapped and core - best.content <= sentence.names:
            return "name"
    return None


def _swapped_names(added: frozenset[str], dropped: frozenset[str]) -> int:
    """How many names were swapped; spelling variants ("Fallbeil", "Fall Beil") are no swap."""
    if any(a in b or b in a for a in added for b in dropped):
        return 0
    return min(len(added), len(dropped))


def polarity_flipped(claim: SentenceView, source: SentenceView) -> bool:
    """Whether exactly one side negates the (non-numeric) content the two sentences share."""
    shared = (claim.content & source.content) - claim.numeric
    return bool(claim.negated & shared) != bool(source.negated & shared)


def best_aligned(sentence: SentenceView, source: TextView) -> SentenceView:
    """The source sentence sharing the most content words with ``sentence`` (first on ties)."""
    best = source.sentences[0]
    best_overlap = -1
    for candidate in source.sentences:
        overlap = len(sentence.content & candidate.content)
        if overlap > best_overlap:
            best, best_overlap = candidate, overlap
    return best


def _compound_number(match: re.Match[str]) -> str:
    tens, unit = match.group(1).lower(), match.group(2).lower()
    return str(int(NUMBER_WORDS[tens]) + int(NUMBER_WORDS[unit]))


def _load_rarity() -> dict[str, float]:
    text = resources.files("aclarai.agents.offline").joinpath(WORDFREQ_RESOURCE).read_text("utf-8")
    table: dict[str, str] = json.loads(text)["zipf"]
    return {
        key: 1.0 + max(0.0, _COMMON_ZIPF - float(zipf))
        for zipf, keys in table.items()
        for key in keys.split()
    }


_RARITY = _load_rarity()
_RAREST = 1.0 + _COMMON_ZIPF


def rarity(stemmed: str) -> float:
    """Weight of a content stem: 1 for the commonest words, up to 7 for ones the table lacks."""
    return _RARITY.get(stemmed, _RAREST)


def _weight(stems: frozenset[str]) -> float:
    return sum(map(_RARITY.get, stems, itertools.repeat(_RAREST)))


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix-stripping stem of a lower-case word ("deploys", "deployed" -> "deploy")."""
    if word in NUMBER_WORDS:
        return NUMBER_WORDS[word]
    if len(word) <= 2 or not word.isalpha():
        return word
    if word.endswith(("ies", "ied")) and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and _VOWEL.search(word, 0, len(word) - len(suffix)):
            word = word[: -len(suffix)]
            # "stopped" -> "stopp" -> "stop", but "rolled" keeps its "ll".
            if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]
            break
    if word.endswith("e") and len(word) > 2:
        word = word[:-1]
    return word


@lru_cache(maxsize=_WORD_CACHE)
def number_values(word: str) -> tuple[str, ...]:
    """The numbers in a lower-case token: "10-11" -> ("10", "11"), "1,200" -> ("1200",),
    "26-year-old" -> ("26",), "v2.3" -> ("2.3",), "two" -> ("2",); () for a word without any."""
    if word in NUMBER_WORDS:
        return (NUMBER_WORDS[word],)
    return tuple(n.replace(",", "") for n in _DIGITS.findall(word))


@lru_cache(maxsize=_WORD_CACHE)
def is_content(word: str) -> bool:
    """Whether a lower-case word carries checkable content (not a function word or filler)."""
    if word in _NOT_CONTENT or word.endswith(("n't", "n’t")):
        return False
    return not is_kana_only(word)


_Lexeme = tuple[str, str | None, tuple[str, ...]]


@lru_cache(maxsize=_WORD_CACHE)
def _lexeme(word: str) -> _Lexeme:
    """Stem, stem again if it is a content word (else None) and numbers of a lower-case word."""
    stemmed = stem(word)
    return stemmed, stemmed if is_content(word) else None, number_values(word)


def count_negations(lowered: list[str]) -> int:
    """Negation words in a list of lower-case words."""
    return len(negation_positions(lowered))


def negation_positions(lowered: list[str]) -> list[int]:
    """Indexes of the negation words ("not", "never", "didn't" ...) in lower-case words."""
    positions = []
    for i, word in enumerate(lowered):
        if word in NEGATIONS:
            following = lowered[i + 1] if i + 1 < len(lowered) else ""
            if (word, following) not in _NOT_NEGATING:
                positions.append(i)
        # Tokenised datasets write "don ' t", which arrives as "don" then "t".
        elif word.endswith("n't") or (word == "t" and i and lowered[i - 1].endswith("n")):
            positions.append(i)
    return positions


def _is_hedge(clause: list[str]) -> bool:
    return bool(_FIRST_PERSON.intersection(clause)) and bool(_COGNITION.intersection(clause))


def _chargrams(padded: str) -> frozenset[str]:
    return frozenset(map("".join, zip(*(padded[i:] for i in range(_CHARGRAM)), strict=False)))


def _chargram_containment(part: str, whole: str) -> float:
    """Share of the character 4-grams of ``part`` that are also 4-grams of ``whole`` (both
    padded with a space).

    A 4-gram of ``whole`` is exactly a 4-character substring of it, so ``whole``'s own set of
    4-grams, which costs more to build than the search, is never needed.
    """
    padded_part, padded = f" {part} ", f" {whole} "
    if padded_part in padded:
        # Claims often restate a sentence word for word: every 4-gram is found.
        return 1.0 if len(padded_part) >= _CHARGRAM else 0.0
    grams = _chargrams(padded_part)
    return sum(map(padded.__contains__, grams)) / len(grams) if grams else 0.0


def _ngram_precision(stems: tuple[str, ...], n: int, pool: frozenset[tuple[str, ...]]) -> float:
    count = len(stems) - n + 1
    return _ngram_hits(stems, n, pool) / count if count > 0 else 0.0


def _ngram_hits(stems: tuple[str, ...], n: int, pool: frozenset[tuple[str, ...]]) -> int:
    grams = zip(*(stems[i:] for i in range(n)), strict=False)
    return sum(map(pool.__contains__, grams))


def _order_agreement(sentence: SentenceView, aligned: SentenceView) -> float:
    """Smoothed share of consecutive matched content words that keep their order in the source.

    Smoothing keeps claims with one or two matched words near 0.5 instead of a perfect score, so
    that short unsupported claims do not look well ordered.
    """
    stems = aligned.stems
    # Filled from the end, so that each word keeps its first position.
    first_seen = dict(zip(reversed(stems), range(len(stems) - 1, -1, -1), strict=True))
    positions = [first_seen[s] for s in sentence.stems if s in sentence.content and s in first_seen]
    if not positions:
        return 0.5
    kept = sum(map(operator.lt, positions, positions[1:]))
    return (kept + 0.5) / len(positions)
