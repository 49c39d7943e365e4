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
- Spanish and Portuguese: the polite imperative, which takes the subjunctive's vowel ("deje",
  "siga", "desça", "volte"); the familiar one is the statement's own form ("deja" is also
  "she leaves") and is left to where it stands;
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
    "de": {"sein", "haben", "werden", "können", "müssen", "sollen", "dürfen", "wollen", "mögen"},
    "nl": {"zijn", "hebben", "worden", "kunnen", "moeten", "zullen", "mogen", "willen", "blijven"},
    "es": {"ser", "estar", "haber", "tener", "ir", "poder", "deber"},
    "pt": {"ser", "estar", "haver", "ter", "ir", "poder", "dever"},
    "it": {"essere", "avere", "potere", "dovere", "volere", "stare", "sapere"},
}
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
            noun = lemmas.get(form.capitalize())
            if form in (stem, stem + "e") and (noun is None or noun.islower()):
                forms.add(form)
        elif lang == "nl" and lemma.endswith("en") and form in dutch_stems(lemma):
            forms.add(form)
        elif lang in ("es", "pt") and not form.endswith(_NOT_IMPERATIVE_ENDINGS):
            if (lemma.endswith("ar") and form.endswith("e")) or (
                lemma.endswith(("er", "ir")) and form.endswith("a")
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
    with gzip.GzipFile(args.out, "wb", mtime=0) as out:  # the same bytes from the same lexicon
        out.write(text.encode())
    for lang, forms in table.items():
        print(f"{lang}: {len(forms)} forms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
