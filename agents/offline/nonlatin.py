"""Claims of sentences written in scripts other than Latin (Japanese, Chinese, Korean, Cyrillic …).

The extractor's word rules (an English verb, an English imperative or question word) find no
claim in a Japanese declarative, and a run of kana and Han characters is one "word" to them.
A sentence whose letters are mostly not Latin takes this path instead: it is a claim unless it
is a question, a request or a greeting, or too short to state anything. It keeps its own end
mark, once: ``東京は首都です。`` stays as it is, and a sentence without one gets ``。`` when it
is written without spaces, ``.`` otherwise.
"""

from __future__ import annotations

import re

from aclarai.agents.offline.words import UNSPACED_CHAR

_LATIN_LETTER = re.compile(r"[A-Za-z\u00c0-\u024f]")
_OTHER_LETTER = re.compile(r"[^\W\d_A-Za-z\u00c0-\u024f]")
END_MARKS = ".!。！．｡"
"""Marks that end a claim; a claim gets one when it has none, never a second."""
_QUESTION_MARKS = ("?", "？", "؟")
_QUESTION_ENDINGS = ("か", "かな", "かしら", "吗", "嗎", "呢", "까", "니")
_REQUEST_ENDINGS = (
    "ください",
    "下さい",
    "なさい",
    "ましょう",
    "しよう",
    "てね",
    "吧",
    "세요",
    "십시오",
    "시오",
)
_REQUEST_OPENINGS = ("请", "請", "どうぞ")
_GREETINGS = (
    "ありがとう",
    "こんにちは",
    "こんばんは",
    "おはよう",
    "よろしく",
    "すみません",
    "お疲れ",
    "おめでとう",
    "谢谢",
    "謝謝",
    "你好",
    "再见",
    "안녕",
    "감사",
    "спасибо",
    "привет",
)
_MIN_UNSPACED_LETTERS = 6
_UNSPACED_WEIGHT = 3
_MIN_WORDS = 3


def is_nonlatin(text: str) -> bool:
    """Whether most of ``text`` is not written in Latin letters.

    A kana or Han character counts as :data:`_UNSPACED_WEIGHT` letters: one says about as much
    as a few Latin letters do ("Obsidian将笔记保存在文件夹中" is Chinese).
    """
    others = len(_OTHER_LETTER.findall(text))
    if not others:
        return False
    unspaced = len(UNSPACED_CHAR.findall(text))
    weighted = others + (_UNSPACED_WEIGHT - 1) * unspaced
    return weighted >= len(_LATIN_LETTER.findall(text))


def nonlatin_claim(text: str) -> str | None:
    """The claim a sentence in another script makes, or ``None`` when it makes none.

    Args:
        text: One whitespace-normalised sentence (see the module docstring).

    Returns:
        The sentence ending in exactly one end mark, or ``None``.
    """
    body = text.rstrip(END_MARKS + " ")
    if not body or text.endswith(_QUESTION_MARKS) or body.endswith(_QUESTION_ENDINGS):
        return None
    if body.endswith(_REQUEST_ENDINGS) or body.startswith(_REQUEST_OPENINGS):
        return None
    if body.lower().startswith(_GREETINGS):
        return None
    unspaced = UNSPACED_CHAR.search(body) is not None
    letters = sum(ch.isalnum() for ch in body)
    if letters < _MIN_UNSPACED_LETTERS or (not unspaced and len(body.split()) < _MIN_WORDS):
        return None
    end = text[len(body) :].strip()[:1]
    return body + (end or ("。" if unspaced else "."))
