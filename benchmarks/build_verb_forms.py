"""Build ``agents/offline/imperatives.json.gz``: the words that are an imperative, by language.

The offline claim rules tell a step from a statement by where its verb stands; in German,
Dutch, Spanish and Portuguese a step may open with a verb that nothing but a lexicon tells
apart from a noun or a name ("Prüf, ob …", "Volg de gele markering …", "Desça pelo ombro …").
The lexicon is simplemma's (MIT; lemmas of every inflected form, from Wiktionary and the
Universal Dependencies treebanks). Loading it whole costs some 90 MB a language, so this script
keeps only the forms a step opens with, and the package ships that list:

- German: the familiar imperative, the bare stem or the stem in -e ("prüf", "geh", "leere"),
  unless the same word with a capital is a noun ("Folge", "Steig");
- Dutch: the stem ("volg", "stuur", "zet", "schrijf");
- Spanish and Portuguese: the polite imperative, the subjunctive's form no longer than the
  verb ("deje", "siga", "desça", "volte", "tenga"); the familiar one is the statement's own
  form ("deja" is also "she leaves") and is left to where it stands;
- Italian: the form in -i ("scendi", "esegui", "controlli"), the familiar imperative of most
  verbs and the polite one of the rest; with no subject before it, it speaks to the reader.

The verbs of being, having and the modals never open a step: "Hab ich …" asks, "Wil je …, dan"
sets a condition.

    pip install simplemma
    python benchmarks/build_verb_forms.py [--out agents/offline/imperatives.json.gz]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "agents" / "offline" / "imperatives.json.gz"
LANGUAGES = ("de", "nl", "es", "pt", "it")

_NEVER_STEPS = {
    "de": {
        "sein", "haben", "werden", "können", "müssen", "sollen", "dürfen", "wollen", "mögen",
        "kosten", "dauern", "heißen", "scheinen", "wohnen", "hoffen", "glauben", "denken",
        "finden", "meinen", "wissen", "fühlen",
    },
    "nl": {
        "zijn", "hebben", "worden", "kunnen", "moeten", "zullen", "mogen", "willen", "blijven",
        "kosten", "duren", "heten", "lijken", "schijnen", "wonen", "hopen", "geloven", "denken",
        "vinden", "menen", "weten", "voelen",
    },
    "es": {"ser", "haber", "ir", "poder", "deber", "pesar"},
    "pt": {"ser", "haver", "ir", "poder", "dever"},
    "it": {"essere", "avere", "potere", "dovere", "volere", "stare", "sapere"},
}  # fmt: skip
"""Verbs that never open a step: being, having and the modals ("Hab ich …" asks, "Wil je …,
dan" sets a condition), and the verbs of costing, lasting, living and thinking, whose first
person opens a diary's line ("Wohne seit März …", "Hoffe, dass …"). "Pese a …" is "despite"."""
_NOT_IMPERATIVE_ENDINGS = ("ia", "ía", "ba", "ida", "ada", "ido", "ado")
"""The imperfect ("fazia", "iba") and the participle ("añadida") end in the same vowels."""


def dutch_stems(infinitive: str) -> set[str]:
    """The stem of a Dutch verb: "volgen" → "volg", "zetten" → "zet", "sturen" → "stuur",
    "schrijven" → "schrijf", "lezen" → "lees"."""
    base = infinitive[:-2]
    stems = {base}
    if len(base) > 2 and base[-1] == base[-2]:
        stems.add(base[:-1])
    vowels = "aeiou"
    if len(base) > 2 and base[-2] in vowels and base[-1] not in vowels and base[-3] not in vowels:
        stems.add(base[:-1] + base[-2] + base[-1])  # an open syllable's vowel written twice
    stems |= {s[:-1] + {"v": "f", "z": "s"}[s[-1]] for s in list(stems) if s[-1:] in ("v", "z")}
    return stems


def imperative_forms(lang: str, lemmas: Mapping[str, str]) -> set[str]:
    """The forms of ``lemmas`` (an inflected form → its lemma) that are an imperative."""
    never = _NEVER_STEPS[lang]
    forms: set[str] = set()
    for form, lemma in lemmas.items():
        if not (form.isalpha() and form.islower() and lemma.islower()) or form == lemma:
            continue
        if lemma in never:
            continue
        if lang == "de" and lemma.endswith(("en", "ern", "eln")) and not form.endswith("t"):
            stem = lemma[:-2] if lemma.endswith("en") else lemma[:-1]
            shapes = {stem, stem + "e", lemma[:-3] + "le" if lemma.endswith("eln") else stem}
            noun = lemmas.get(form.capitalize())
            if form in shapes and (noun is None or noun.islower()):  # "sammle"; not "Folge"
                forms.add(form)
        elif lang == "nl" and lemma.endswith("en") and form in dutch_stems(lemma):
            forms.add(form)
        elif lang in ("es", "pt") and not form.endswith(_NOT_IMPERATIVE_ENDINGS):
            # No longer than the verb: "deje", "siga", "ponga", "desça", not the past
            # "dejaste", "dejase", "hiciera" that end in the same vowel
            if (lemma.endswith("ar") and form.endswith("e") and len(form) <= len(lemma)) or (
                lemma.endswith(("er", "ir")) and form.endswith("a") and len(form) <= len(lemma) + 1
            ):
                forms.add(form)
        elif (
            lang == "it"
            and lemma.endswith(("are", "ere", "ire"))
            and form in (lemma[:-3] + "i", lemma[:-3] + "hi")  # "cercare" → "cerchi"
        ):
            forms.add(form)
    return forms


def build(languages: Iterable[str]) -> dict[str, list[str]]:
    from simplemma.strategies.dictionaries import DefaultDictionaryFactory

    factory = DefaultDictionaryFactory()
    return {
        lang: sorted(imperative_forms(lang, factory.get_dictionary(lang))) for lang in languages
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--langs", default=",".join(LANGUAGES))
    args = parser.parse_args(argv)
    table = build(args.langs.split(","))
    text = json.dumps(table, ensure_ascii=False, separators=(",", ":")) + "\n"
    # No time and no file name in the header: the same lexicon gives the same bytes
    args.out.write_bytes(gzip.compress(text.encode(), mtime=0))
    for lang, forms in table.items():
        print(f"{lang}: {len(forms)} forms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
