"""Which language a text is written in, and that language's function words.

The language comes from py3langid (langid.py's model, bundled in its wheel: no download), after
two shortcuts a model is not needed for: any kana means Japanese, Han characters without kana
Chinese. A text too short to tell (a list item of two words) takes the language of the
longer text given as ``context``, its neighbours. Function words come from stopwords-iso
(``stopwordsiso``, 58 languages); English keeps the offline scorer's own list, which leaves
content words such as "available" or "example" alone.

The model is loaded on the first text the shortcuts cannot tell (about 0.7 s, 75 MB per
process): Japanese and Chinese never need it, and English only when a fifth of the words are not
among its commonest ("the", "is", "of" …), as in list items and headings; in kepano's vault 79 of
200 blocks asked it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import stopwordsiso

from aclarai.agents.offline.features import STOPWORDS, word_set

ENGLISH = "en"
SUPPORTED = ("en", "de", "fr", "es", "it", "pt", "nl", "zh", "ja")
"""The languages whose claims are tested (see the docs); others get the generic rules."""
_DETECTED = SUPPORTED + tuple(
    sorted(
        word_set(
            "ko ru uk pl cs sk sl hr sr bg ro hu fi sv da no tr el he ar fa hi bn id ms vi th ca"
        )
    )
)
"""The languages the model may answer: widely written ones. Left to all of its 97, it takes a
short Spanish line for Galician and a Dutch one for Afrikaans."""
_KANA = re.compile("[\u3040-\u30ff]")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")
_HANGUL = re.compile("[\uac00-\ud7af]")
_LETTER = re.compile(r"[^\W\d_]")
_NOT_WORDS = re.compile(r"`[^`\n]*`|(?:https?://|www\.)\S+")
_SHORT = 80
"""Fewer letters than this are too few for the model to tell alone (a list item, a step that
names a command): it reads the text with its context."""
_ENGLISH_HINTS = word_set("the is are was were and of to in that it with for on this you your can")
"""Words that, making up a fifth of an ASCII text's words, make it English without the model."""
_READ = 2000
"""Characters read: enough for the model, and a bound on its time."""
_lock = threading.Lock()
_identifier: Any = None


def language_of(text: str, context: Sequence[str] = ()) -> str:
    """The ISO 639-1 code of the language ``text`` is written in (``"en"`` when unsure).

    Args:
        text: A sentence or a block.
        context: Texts around it (its neighbours), read when ``text`` is too short to tell.
    """
    script = _script_language(text)
    if script is not None:
        return script
    # Code and addresses are in no one's language: "Sigue el workflow `deploy-prod`" is Spanish.
    text = _NOT_WORDS.sub(" ", text)
    if context and len(_LETTER.findall(text, 0, 4 * _SHORT)) < _SHORT:
        return _language("\n".join((text, *(_NOT_WORDS.sub(" ", c) for c in context)))[:_READ])
    return _language(text[:_READ])


@lru_cache(maxsize=4096)
def _language(text: str) -> str:
    script = _script_language(text)
    if script is not None:
        return script
    if not _LETTER.search(text):
        return ENGLISH
    if text.isascii():
        words = text.lower().split()
        if words and sum(w in _ENGLISH_HINTS for w in words) * 5 >= len(words):
            return ENGLISH
    lang: str = _model().classify(text)[0]
    return lang


def _script_language(text: str) -> str | None:
    if text.isascii():
        return None
    if _KANA.search(text):
        return "ja"
    if _HAN.search(text):
        return "zh"
    if _HANGUL.search(text):
        return "ko"
    return None


def _model() -> Any:
    global _identifier
    with _lock:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            identifier = LanguageIdentifier.from_model_file(MODEL_FILE)
            identifier.set_languages(list(_DETECTED))
            _identifier = identifier
        return _identifier


@lru_cache(maxsize=64)
def function_words(lang: str) -> frozenset[str]:
    """The function words of ``lang`` (lower case); empty for a language with no list."""
    if lang == ENGLISH:
        return STOPWORDS
    if not stopwordsiso.has_lang(lang):
        return frozenset()
    return frozenset(w.lower() for w in stopwordsiso.stopwords(lang))
