"""What a lexicon says a sentence's opening word is: a verb's bare form or its imperative.

Where a verb stands tells most steps from statements (:mod:`~aclarai.agents.offline.steps`),
but not when the verb opens the sentence with no article or object after it to show: "Validate
paper tickets before you board", "Prüf, ob …", "Volg vanaf de parkeerplaats …", "Desça pelo
ombro …". A statement opens with its subject, so an opening word that can only be a verb, or
that is an imperative form, makes a step.

- English asks lemminflect's lexicon (a runtime dependency) whether a word is only ever a verb
  ("validate", "decide", "put"; not "book", "plant" or "watch", which are nouns too).
- German, Dutch, Spanish, Portuguese and Italian look the word up in ``imperatives.json.gz``:
  the forms of simplemma's lexicon that are an imperative and nothing else a sentence opens
  with, written by ``benchmarks/build_verb_forms.py``. Holding simplemma's whole lexicon would
  cost some 90 MB a language for the one word looked up.
"""

from __future__ import annotations

import gzip
import json
from functools import cache, lru_cache
from importlib import resources

IMPERATIVES_RESOURCE = "imperatives.json.gz"
IMPERATIVE_LANGUAGES = frozenset({"de", "nl", "es", "pt", "it"})
"""The languages ``imperatives.json.gz`` holds."""


@lru_cache(maxsize=4096)
def is_only_a_verb(word: str) -> bool:
    """Whether an English word (in lower case) can only be a verb's bare form."""
    lemmas = _english_lemmas(word)
    return lemmas.keys() == {"VERB"} and word in lemmas["VERB"]


@lru_cache(maxsize=4096)
def is_inflected_verb(word: str) -> bool:
    """Whether an English word (in lower case) may be a verb other than its bare form:
    "moved", "took", "crashes", "times"."""
    verbs = _english_lemmas(word).get("VERB", ())
    return bool(verbs) and word not in verbs


def _english_lemmas(word: str) -> dict[str, tuple[str, ...]]:
    # Imported here: the lexicon costs some 30 MB, which a vault with no English never needs.
    from lemminflect import getAllLemmas

    lemmas: dict[str, tuple[str, ...]] = getAllLemmas(word)
    return lemmas


def is_imperative(word: str, lang: str) -> bool:
    """Whether ``word`` (in lower case) is an imperative in ``lang``: "prüf", "volg", "siga"."""
    return lang in IMPERATIVE_LANGUAGES and word in _imperatives(lang)


@cache
def _imperatives(lang: str) -> frozenset[str]:
    # Read once a language, and only that language kept: a vault is mostly in one or two.
    path = resources.files("aclarai.agents.offline").joinpath(IMPERATIVES_RESOURCE)
    table: dict[str, list[str]] = json.loads(gzip.decompress(path.read_bytes()))
    return frozenset(table.get(lang, ()))
