"""Sentences that state nothing about the world, in any language: they give no claim.

A claim says something checkable with a predicate. What a note holds besides, and how each is
told apart without a tagger (Chinese aside):

- a **lead-in**, which ends in a colon ("The plugin has three modes:"), or in Japanese names what
  follows (「次のとおりである。」);
- a **link line**: a bare address ("https://…", an e-mail address, a phone number), or an
  address with a label or a name before it ("Documentation: https://…", "Boiler service:
  Harlow Heating, 0161 555 0142");
- a **navigation** line: short links or labels in a row ("Edit in GitHub | Copy this note"), or
  a line that points elsewhere ("See also …", "Weiter: …", "Terug naar …");
- a **label**: a short line with no end mark and no verb ("UI font sizes", "Muted text color"),
  an item that goes on a lead-in ("a radiator key"), names in a row, a bibliography entry;
- an **exclamation** or a greeting ("What a dense six pages!", "¡Gracias a todos!"), and an
  **opinion** that only praises or blames ("This episode was a delight from start to finish.");
- an **instruction**, a step telling the reader what to do;
- in Japanese and Chinese, a **fragment** that opens with a particle (「と入力します。」).

A label that opens a sentence ("Note: Sync keeps 12 months.", "Layout: The sidebar …") is not
content either: :func:`strip_label` takes it off, and the claim is what follows.

A step is told by where its verb stands: :mod:`aclarai.agents.offline.steps` for the languages
written with spaces, :mod:`aclarai.agents.offline.cjk_steps` for Japanese and Chinese, and the
learned :mod:`aclarai.agents.offline.step_model` for the Japanese and Chinese sentences those
rules leave open.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aclarai.agents.offline.cjk_steps import (
    is_chinese_step,
    is_japanese_lead_in,
    is_japanese_step,
    tag_chinese,
)
from aclarai.agents.offline.features import word_set
from aclarai.agents.offline.step_model import is_likely_step
from aclarai.agents.offline.steps import ANY_VERB_MARKER, has_verb_marker, is_step
from aclarai.agents.offline.words import UNSPACED_CHAR, WORD_PATTERN, word_count
from aclarai.parsers import split_sentences

LEAD_IN, LINK, NAVIGATION, LABEL, INSTRUCTION, FRAGMENT, EXCLAMATION, OPINION = (
    "lead-in",
    "link",
    "navigation",
    "label",
    "instruction",
    "fragment",
    "exclamation",
    "opinion",
)

_LABEL = re.compile(
    r"^[ \t]*(?P<label>[^\W\d_][\w.'’&/-]*(?:[ \t]+[^\W\d_][\w.'’&/-]*){0,4})"
    r"(?:[ \t]*:[ \t]+|[ \t]*：[ \t]*)(?=\S)"
)

_REFERENCE = re.compile(r"[^\W\d_][^()]{0,120}\(\d{4}[a-z]?\)\s*[,.:]")
"""A bibliography entry: "Murre & Dros (2015), Replication and …". "Murre & Dros (2015)
replicated …" goes on with a verb and states something."""

_CITATION_END = re.compile(r"[,，]\s*(?:\d{4}|\(\d{4}\))[a-z]?\.?$")
"""How a citation with its parts between commas ends: "…, Milkweed Editions, 2013."."""

_NAME_WORD = r"(?:[A-ZÀ-ÖØ-Þ][\w.'’-]*|&|and|und|et|y|e|en|ed)"
_AUTHORED = re.compile(
    rf"\s(?i:by|von|de|par|di|da|do|del|van|door)\s+[A-ZÀ-ÖØ-Þ][\w.'’-]*(?:,?\s+{_NAME_WORD})*"
    r"(?:,?\s+(?:e\.\s?a\.|et al\.|u\.\s?a\.|(?:and|und|et|y|e|en) (?:others|andere|autres|"
    r"otros|altri|outros|anderen)))?\s*\(\d{4}\)\.?$"
    r"|[』》」”]\s*[（(]\d{4}年?[）)]\.?$"
)
"""A book and its author with the year, as a reading list writes it: "The Mythical Man-Month by
Fred Brooks (1975)", "A Pattern Language van Christopher Alexander e.a. (1977)", "Thomas Kuhn
的《科学革命的结构》（1962）". A sentence with its verb goes on: "written by Brooks in 1975"."""

_SHORT_LABEL_WORDS = 3
"""The longest label before a sentence ("Note:", "Decision:", "Romanian deadlift:"); a record's
key may have five words ("Mantenimiento de la caldera: Harlow Heating, 0161 555 0142")."""

_YEAR_END = re.compile(r"[(（]\d{4}年?[)）]\.?$")
_AUTHORED_TAIL = 240
"""How much of a line :data:`_AUTHORED` reads: an entry's title and authors fit, and a line of
"De De De …" costs no more than its last words."""

_LABEL_VALUE_WORDS = 3
"""The longest value after a key that is a record, not a statement: "Rate: 1.65% fixed",
"Active time: 30 minutes", "Datum: 3. März 2025". "Encryption algorithm: AES-256 using
Galois/Counter Mode (GCM)" says what its key's thing does."""

_RECORD_PARTS = re.compile(r"[,;、，；]\s*")
_RECORD_PART_WORDS = 7
"""The longest part of a record's value: a name with a title and a place ("radioastrónoma de la
Universidad Tecnológica Chalmers"); a clause runs longer."""

_SHORT_FUNCTION_WORD = re.compile(r"^[a-zà-ÿ]{1,2}$")
""""de", "of", "à" in a value: "27 de enero de 2025" is three words of a date."""

_QUANTITY = re.compile(
    r"(?<![\w.,])\d+(?:[.,]\d+)?\s*(?:[µμm]?[lLgM]|kg|cl|dl|mM|µM|nM|°C|°F|"
    r"tbsp|tsp|oz|lb|cups?|ml|EL|TL|c\.\s?à\s?[sc]\.?|cda|cdta|cucharadas?|cucharaditas?|"
    r"cucchia(?:i|io|ini|ino)|colheres?|c\.\s?de\s?(?:sopa|chá)|eetlepels?|theelepels?)(?![\w])"
    r"|(?<![\w.,])\d+\s*[×x]\s*\d+(?![\w.,])"
)
"""An amount with its unit ("10 mL", "1,25 µL", "200 g", "37 °C", "2 tbsp", "2 cucharadas"), or
sets of a count ("3×15", "6 × 800 m")."""

_UNSPACED_GREETING = re.compile(
    r"おはよう|ありがとう|こんにちは|お疲れ|谢谢|你好|早上好|大家好|辛苦了"
)

_EXCLAMATION = re.compile(
    r"^[¡!]?\s*(?:what an?|how|wow|thanks|thank you|hello|hi|good morning|was für|wie|danke|"
    r"hallo|guten morgen|quel|quelle|quels|quelles|que|comme|merci|bonjour|salut|qué|cuánto|"
    r"cuánta|gracias|hola|buenos días|che|quanto|quanta|grazie|ciao|buongiorno|como|"
    r"obrigad[oa]|olá|bom dia|wat|hoe|bedankt|dank je|goedemorgen|"
    r"[^\W\d_]+,?\s+(?:tous|todos|tutti|allemaal|alle|everyone|all|le monde|a todos|a tutti))\b",
    re.I,
)
"""An exclamation, a greeting or a thank-you: "What a dense six pages!", "¡Gracias a todos!"."""

_VERDICT_OPENING = re.compile(
    r"^(?:honestly|frankly|seriously|ehrlich gesagt|ehrlich|wirklich|franchement|sincèrement|"
    r"vraiment|sinceramente|francamente|honestamente|eerlijk gezegd|echt)\b",
    re.I,
)
"""An "honestly" that opens a verdict: "Ehrlich gesagt, eine wunderbare Lektüre."."""

_PRAISE = word_set(
    """
    best finest wonderful lovely beautiful splendid gorgeous brilliant great terrible
    beste schönste wunderbar wunderbare wunderbarer toll tolle großartig großartige
    meilleur meilleure magnifique formidable superbe splendide
    mejor bonito bonita precioso preciosa maravilloso maravillosa increíble estupendo
    migliore bello bella splendido splendida magnifico magnifica meraviglioso meravigliosa
    melhor lindo linda maravilhoso maravilhosa incrível ótimo ótima
    mooiste mooi prachtig prachtige geweldig geweldige
    """
)
"""The praise or blame of a verdict after an "honestly" ("el paseo más bonito", "eine
wunderbare Lektüre"): a closed set, since "Sinceramente, la ruta dura cuatro horas." states
something with a verb no table of this module knows. Intensifiers ("more", "más") are left out:
"Honestly, more people came than we expected" counts something."""

_NOUN_EXCLAMATION = re.compile(
    r"^(?i:what an?|quel|quelle|quels|quelles|was für|che|qué|que de|wat een)\s+([^\W\d_])"
)
"""An exclamation over a noun, which needs no "!": "Quel livre frustrant.". The word after it
is in lower case ("Che Guevara arrivò …" is a name), and "how" and its kin are left out: they
open statements too ("Wie erwartet stieg der Preis …")."""

_UNSPACED_TITLE = re.compile(r"^[^。！？]{1,30}(?:的《[^》]+》|『[^』]+』)$")
"""A book and its author, unspaced: 「Susanna Clarke 的《Piranesi》」, 「Jacobs『Happy City』」."""

_UNSPACED_DEGREE = re.compile(
    r"太[^，。！空平阳湖原后古子极]{1,3}了[。！!]?$|(?<![南北积两])极了[。！!]?$|^真是|真[大好美棒]|^多么"
)
"""A verdict of degree or an exclamation: 「午饭前开三个会，实在太多了。」, 「光线美极了。」,
「这一周太棒了！」; 「无论实验多么严谨」 concedes, and is no verdict."""

_UNSPACED_REPORT = re.compile(r"\d|已|于|倍|ました|です")
"""What an exclamation of news holds: a number, a date, 「已…」, 「…ました！」; it states."""

_UNSPACED_NOUN_END = re.compile(r"的([^的，。、]{1,6})$")
"""A noun phrase with no end mark: 「一部运行 iOS 15 的手机」 names what is needed."""

_UNSPACED_VERDICT = re.compile(r"^(?:说实话|老实说|说真的|正直(?:に言って)?|本当に)[，,、]?")

_RATING = re.compile(r"^\s*\d+(?:[.,]\d+)?\s*/\s*\d{1,2}\s*[.!]?\s*$|^\s*[★☆]{1,10}\s*$")
"""A rating and nothing else: "4/5", "3,5/10", "★★★★☆"."""

_NUMBERED_ITEM = re.compile(r"[ \t]*\d{1,9}[.)][ \t]")

_BULLET_ITEM = re.compile(r"[ \t]*[-*+][ \t]+(?!\[[ xX]\])")

_ANY_BULLET = re.compile(r"[ \t]*[-*+][ \t]")

_ENGLISH_PAST = re.compile(r"(?<![-\w])[a-z]{3,}ed\b")
"""A verb in the past ("raised to 2560x1440"): a change stated, not a material listed."""

_URL = re.compile(
    r"(?:https?|ftp)://\S+|www\.\S+|[\w.+-]+@[\w-]+\.[\w.-]+"
    r"|(?<![\w.,])\+?\d(?:[ -]?\d){8,}(?!\w|[.,]\d)",
    re.I,
)
"""An address: a URL, an e-mail address, or a phone number (nine or more digits in a run, as
"0161 555 0142"): "Documentation: https://…", "Contact: hr@example.org" and "Boiler service:
Harlow Heating, 0161 555 0142" say where to find something, not what is so."""

_NAV_SEPARATORS = re.compile(r"\s[|·•»›→←]\s|\s[|·•»›→←]$|^[|·•»›→←]\s")

_NAV_PART_WORDS = 5
_NAVIGATION_OPENING = re.compile(
    r"(?:see also|back to|siehe auch|zurück zu|voir aussi|retour (?:à|au)|véase también|"
    r"ver también|volver a|vedi anche|torna a|veja também|ver também|voltar (?:para|a)|zie ook|"
    r"terug naar)\b|(?:see|next|previous|siehe|weiter|zurück|voir|suivant|précédent|véase|"
    r"siguiente|anterior|vedi|successivo|precedente|veja|próximo|zie|volgende|vorige)\s*:"
    r"|suite\s*:|(?:另见|参见|関連|参照|次へ|上一篇|下一篇)",
    re.IGNORECASE,
)
"""Where a line that points to other notes opens: "See also …", "Weiter: …", "Terug naar …"."""
_NAV_WORDS = 12
_SEE = re.compile(
    r"(?:See|Siehe|Véase|Vedi|Veja|Zie)\s+(?!da\b|caso\b|só\b|hier\b)\S"
    r"|(?:Ver|Voir)\s+(?:también|também|aussi|em\s|[A-Z]\S*\s+(?:\S+\s+){0,4}(?:para|pour)\s)"
)
"""A sentence that opens by sending the reader elsewhere: "See NAS backups for how all of this
is backed up", "Vedi Debrief Priya Nair per un esempio", "Ver Vendors and deposits para …"
(written with its capital: "ver" inside a sentence is a verb like any other). "Siehe da, …",
"Vedi caso …" and "Zie hier …" are idioms, and "Ver Lisboa do miradouro …", an infinitive
before a place, is the subject of a statement."""
_SEE_WORDS = 25
_SEE_UNSPACED = re.compile(r"(?:も参照|を(?:ご)?参照(?:して)?ください)。?$")
"""A Japanese sentence that ends by sending the reader elsewhere: 「… は NAS backups も参照。」,
「詳しくは FAQ をご参照ください。」; a bare 「…を参照。」 may say what a program reads (「起動時に
環境変数HOMEを参照。」)."""

_LABEL_WORDS = 6

_UNSPACED_LABEL_CHARS = 25
_UNSPACED_ITEM_CHARS = 12

_KANA = re.compile(r"[\u3040-\u309f]")
"""Hiragana: a Japanese predicate (verb, adjective, copula) ends in it."""

_TOPIC_BEFORE_NOUN = re.compile(r"[はがで][^\u3040-\u309f]")
"""A topic, subject or means marked before a noun: "締め切りは10月21日", "近鉄特急で35分" state
something with the copula left out."""

_JAPANESE_NOUN_END = re.compile(r"[\w）)』」µ°%]\s*[。．.]?\s*$")
"""A Japanese sentence that ends in a noun, a name, a number or a closing bracket: an item of
a list ("平底96ウェルプレート（Greiner 655101）。"), not a statement, which ends in a verb,
an adjective or the copula, written in hiragana."""

_END = ".!?…。！？．｡"

_UNSPACED_PARTICLES = tuple("とをにはがでもの、")

_SPEECH_VERBS = word_set(
    """
    said says say wrote writes told tells thinks thought asked asks sagte schrieb meinte fragte
    dit écrit disait dijo escribió disse escreveu zei schreef
    """
)
"""Who said what is part of it: "Somebody successful said: 99% of success is showing up"."""


def split_label(sentence: str) -> tuple[str | None, str]:
    """``sentence``'s opening label and the rest ("Note: x" → ``("Note", "x")``, "注意：x" →
    ``("注意", "x")``), or ``(None, sentence)``.

    A label is one to three words with no verb, or up to five before a value with no end mark:
    a time ("14:02"), an address ("https://") or a clause ("Tom disagreed: …") is none.
    """
    match = _LABEL.match(sentence)
    if match is None:
        return None, sentence
    words = [w.lower() for w in WORD_PATTERN.findall(match.group("label"))]
    if len(words) > _SHORT_LABEL_WORDS and sentence.rstrip()[-1:] in _END:
        return None, sentence  # "It describes three of them: …" opens a sentence, not a record
    if any(
        w in ANY_VERB_MARKER or w in _SPEECH_VERBS or (len(w) > 3 and w.endswith("ed"))
        for w in words
    ):
        return None, sentence
    return match.group("label"), sentence[match.end() :]


def strip_label(sentence: str) -> str:
    """``sentence`` without its opening label (see :func:`split_label`)."""
    return split_label(sentence)[1]


def has_predicate(sentence: str, lang: str) -> bool:
    """Whether a sentence of a Latin-script language other than English holds a verb, as far
    as a word list can tell: one of its verbs of being and having, or enough words to be a
    clause."""
    return has_verb_marker(sentence, lang) or word_count(sentence) > _LABEL_WORDS + 1


def not_a_claim(
    sentence: str, lang: str, *, numbered: bool = False, learned: bool = True
) -> str | None:
    """Why ``sentence`` gives no claim (one of the kinds above), or ``None`` when it may.

    Args:
        sentence: One whitespace-normalised sentence as a reader sees it, its label taken off.
        lang: Its language (:func:`aclarai.agents.offline.language.language_of`).
        numbered: Whether it is an item of a numbered list, where a procedure's steps are: a
            verb there needs no object after it to open a step ("Bake for 20 minutes"), and
            in Chinese, which leaves a statement's subject out as readily, only there does a
            verb of doing open one.
        learned: Whether :mod:`~aclarai.agents.offline.step_model` has its say on a Chinese
            or Japanese sentence the rules leave open (not while it is being fitted).
    """
    body = sentence.rstrip()
    if body.endswith((":", "：")):
        return LEAD_IN
    if (_NAV_SEPARATORS.search(body) and _is_navigation(body)) or (
        _NAVIGATION_OPENING.match(body) and word_count(body) <= _NAV_WORDS
    ):
        return NAVIGATION
    if (_SEE.match(body) and ":" not in body and word_count(body) <= _SEE_WORDS) or (
        lang == "ja" and _SEE_UNSPACED.search(body)
    ):
        return NAVIGATION
    if _URL.search(body) and word_count(strip_label(_URL.sub(" ", body))) < 3:
        return LINK
    if _REFERENCE.match(body) or _is_list(body) or _is_citation(body, lang):
        return LABEL
    if (
        _YEAR_END.search(body)
        and _AUTHORED.search(body[-_AUTHORED_TAIL:])
        and (lang in ("ja", "zh") or not (has_verb_marker(body, lang) or is_step(body, lang)))
    ):
        return LABEL
    if _is_material(body, lang):
        return LABEL
    if body.endswith(("!", "！")) and (
        _EXCLAMATION.match(body) or (len(body) <= 16 and _UNSPACED_GREETING.search(body))
    ):
        return EXCLAMATION
    if (_THANKS_OR_PRAISE.match(body) or _UNSPACED_THANKS.search(body)) and not any(
        c.isdigit() for c in body
    ):
        return EXCLAMATION
    if _verbless_exclamation(body, lang):
        return EXCLAMATION
    if _is_verdict(body, lang) or is_a_feeling(body):
        return OPINION
    if lang in ("ja", "zh"):
        kind = _unspaced_kind(body, lang, numbered=numbered)
        if kind is None and learned and is_likely_step(body, lang):
            return INSTRUCTION
        return kind
    if is_step(body, lang, numbered=numbered):
        return INSTRUCTION
    label, value = split_label(body)
    if label is not None and _RATING.match(value):
        return LABEL  # "Rating: 4/5", "Voto: 4/5."
    if body[-1:] not in _END and not has_verb_marker(body, lang):
        # A setting's name, an item that goes on its lead-in ("a radiator key"), or a key and
        # its value in a record ("Rate: 1.65% fixed").
        if label is not None:
            return LABEL if _is_record(value) else None
        if word_count(body) <= _LABEL_WORDS or body[:1].islower() or body[:1].isdigit():
            return LABEL
    return None


def _is_record(value: str) -> bool:
    """Whether the value after a key is a record's: a few words, short function words aside
    ("€839", "about 4,000", "27 de enero de 2025"), or short parts in a row ("Dra. Hanna
    Lindqvist, radioastrónoma de Chalmers", "Montréal (Trudel), Biographie de Jeanne Mance").
    A longer one, or one with an English participle, says something of the key's thing:
    "AES-256 using GCM"."""
    words = [w for w in WORD_PATTERN.findall(value) if not _SHORT_FUNCTION_WORD.match(w)]
    if any(len(w) > 4 and w.endswith(("ing", "ed")) for w in words):
        return False
    if len(words) <= _LABEL_VALUE_WORDS:
        return True
    parts = [p for p in _RECORD_PARTS.split(value) if p.strip()]
    return len(parts) >= 2 and all(word_count(p) <= _RECORD_PART_WORDS for p in parts)


_DELIGHT = word_set(
    """
    wonderful lovely beautiful gorgeous stunning magnificent splendid delightful delight
    superb terrific marvellous marvelous fantastic amazing awful terrible dreadful boring
    frustrating
    wunderbar wunderbare wunderschön herrlich großartig großartige traumhaft fantastisch
    schrecklich langweilig
    magnifique magnifiques merveilleux merveilleuse formidable superbe splendide régal
    génial géniale ennuyeux frustrant
    maravilloso maravillosa precioso preciosa delicia espléndido espléndida estupendo
    estupenda fantástico fantástica horrible aburrido aburrida
    meraviglioso meravigliosa bellissimo bellissima stupendo stupenda splendido splendida
    magnifico magnifica piacere fantastico fantastica noioso noiosa
    maravilhoso maravilhosa lindo linda encanto deslumbrante fantástico fantástica horrível
    aborrecido aborrecida
    prachtig prachtige schitterend schitterende heerlijk heerlijke geweldig geweldige
    fantastisch verschrikkelijk saai
    """
)
"""Words that praise or blame and state nothing a reader could check: "This episode was a
delight from start to finish.", "La luz de la tarde sobre el canal era preciosa."."""

_JUDGEMENT = re.compile(
    # Worth the trouble, said last: "Ça valait vraiment le coup.", "Hat sich total gelohnt."
    r"(?:\bworth it|\bwell worth it|\bgelohnt|\blohnt sich|"
    r"\b(?:valait|vaut|valu)\b(?: \w+)? (?:la peine|le coup)|"
    r"\b(?:mereci[óo]|merece|vali[óo]|vale|vals[aeo]|valeva|valeu)\b(?: \w+)? (?:la|a) pena|"
    r"\b(?:de moeite|het) (?:echt |zeker |wel |meer dan )?waard|"
    r"甲斐[がは][^。]{0,4}(?:あった|ある)|值得[一去看读]?)"
    r"(?:[ ,]+\w+(?: \w+)?)?[.!。！]?$|"
    # Too many, the predicate of its subject: "Three meetings before lunch is too many."
    r"\b(?:is|are|was|were) (?:just |simply |far |way )?too (?:many|much)[.!]?$|"
    r"\b(?:ist|sind|war|waren) (?:einfach |echt |viel )?zu viele?[.!]?$|"
    r"\bc'est (?:vraiment |beaucoup )?trop[.!]?$|"
    r"\b(?:es|son|era|eran) demasiad[oa]s?[.!]?$|"
    r"\b(?:è|sono|era|erano) (?:davvero )?tropp[oaie][.!]?$|"
    r"\b(?:é|são|era|eram) (?:demais|demasiad[oa]s?)[.!]?$|"
    r"\b(?:is|zijn|was|waren) (?:echt |gewoon |veel )?te veel[.!]?$|"
    r"(?:多|長|高|少な|遅|短|重|難し|うるさ)すぎ(?:る|だ)[。！]?$|(?<=[いきしちにみりびぎ])すぎだ[。！]?$|"
    r"(?:实在|真是|真的|也)?太多了[。！]?$|"
    # Too often: "Kowalczyk interrupts her guests far too often."
    r"\b(?:far|way|much) too often[.!]?$|\bviel zu oft[.!]?$|\bbeaucoup trop souvent\b|"
    r"\bdemasiado a menudo[.!]?$|\btroppo spesso[.!]?$|\bvezes demais[.!]?$|\bveel te vaak[.!]?$",
    re.I,
)
"""A judgement and nothing a reader could check: it was worth it, or there is too much of
something ("Three meetings before lunch is too many.", "Ça valait vraiment le coup."). Said last
and of a subject, so that a fact about a limit or a price stays ("The form rejects passwords
that are too long.", "Het huis is nu het dubbele waard.")."""

_WRITERS_WISH = re.compile(
    r"^(?:\w+(?: \w+)?,? )?(?:i doubt|i(?: would|'d) (?:like|love) to see|ich bezweifle|"
    r"bezweifle ich|ich würde gerne? |je doute|j'aimerais voir|dudo que|me gustaría ver|"
    r"dubito che|mi piacerebbe vedere|duvido que|gostaria de ver|gostava de ver|"
    r"ik betwijfel|betwijfel ik|ik zou graag )",
    re.I,
)
"""What the writer of a note doubts or would like ("I would like to see newer figures.",
"Ehrlich gesagt bezweifle ich, dass …"): a wish, not a claim. In a conversation it is what
the speaker asked for, and stays."""

_JUDGEMENT_WORDS = 20


def is_writers_wish(sentence: str) -> bool:
    """Whether a sentence of a note (not of a conversation) is a wish or a doubt of its
    writer's (:data:`_WRITERS_WISH`)."""
    return _WRITERS_WISH.match(sentence) is not None


_VERDICT_WORDS = 12
"""The longest verdict: "This episode was a delight from start to finish." and its kin."""

_ENGLISH_COPULA = word_set("is was are were")

_COMPOUND = re.compile(r"[;；]|\s(?:and|und|et|y|e|ed|en|but|aber|mais|pero|ma|mas|maar)\s")
"""Where a second statement joins a verdict; a comma after a short opening does not ("Aun así,
maravilloso")."""

_UNSPACED_DELIGHT = re.compile(
    "素晴らしい|すばらしい|美しい|楽しい|見事|退屈|もどかしい|"
    "精彩|漂亮|美丽|很美|太美|很棒|太棒|愉快|无聊|抓狂|惊叹"
)
_UNSPACED_VERDICT_CHARS = 30
"""The same for Japanese and Chinese, in characters."""


_EAGERNESS = re.compile(
    r"^(?:(?:i|we)\s+(?:really\s+|just\s+)?(?:can'?t|cannot)\s+wait|can'?t\s+wait|"
    r"(?:i'?m|we'?re|i am|we are)\s+(?:really\s+|so\s+)?looking forward to|"
    r"(?:ich|wir)\s+(?:kann|können)\s.*\bkaum erwarten|"
    r"(?:j'ai|nous avons)\s+(?:tellement\s+|vraiment\s+|trop\s+)?h[âa]te\s+d(?:e\b|')|"
    r"(?:no veo la hora|estoy deseando|non vedo l'ora|mal posso esperar)\b|"
    r"(?:ik|we|wij)\s+(?:kan|kunnen)\s+(?:echt\s+)?niet\s+wachten)"
    r"|等不及|迫不及待|待ちきれない|待ち遠しい",
    re.IGNORECASE,
)
"""The writer looking forward to something: "I can't wait for the first look.", "Non vedo
l'ora del first look." ("Checkout can't wait for the webhook" says what it cannot do, and
"Maya can't wait to start at Google" tells of Maya)."""
_THANKS_OR_PRAISE = re.compile(
    r"(?:thank you|thanks|(?:great|good) (?:work|job)|well done|congratulations|kudos|danke|"
    r"vielen dank|(?:tolle|gute) arbeit|glückwunsch|merci|bravo|beau travail|félicitations|"
    r"gracias|buen trabajo|enhorabuena|felicidades|grazie|ottimo lavoro|complimenti|"
    r"obrigad[oa]|(?:excelente|bom) trabalho|parabéns|bedankt|goed werk|gefeliciteerd)"
    r"[\s,!]+(?:\S+\s+){0,3}?(?:everyone|everybody|all|y'all|allen|alle|allemaal|tous|"
    r"toutes|todos|todas|tutti|tutte|iedereen|team)\b[^,]*$",
    re.IGNORECASE,
)
"""A sentence that opens by thanking or praising everyone and says no more: "Great work from
everyone on this loop.", "Bravo à tous pour ce processus.", "Ottimo lavoro da parte di tutti …"
(not "Thanks to the new cache, …", "Thanks to everyone who came, the hall was full.", "Merci à
Paul, le serveur …", "Good work boots cost …" or "Bravo Murillo es la calle …")."""
_UNSPACED_THANKS = re.compile(r"(?:お疲れさま(?:でした)?|辛苦了|ありがとうございました)[。！!]?$")
"""「皆さん、お疲れさまでした。」, 「大家辛苦了！」."""


def is_a_feeling(body: str) -> bool:
    """Whether a sentence with no number and no second clause only tells how much the writer
    looks forward to something. With a number or a clause it tells something too: "J'y ai
    mangé une fois, en mai 2023, donc j'avais hâte …", "Non vedo l'ora di rivedere Lucia, che
    torna da Berlino …"."""
    if any(c.isdigit() for c in body) or "," in body or "，" in body or "、" in body:
        return False
    return _EAGERNESS.search(body.replace("’", "'")) is not None


def _is_verdict(body: str, lang: str) -> bool:
    """A short sentence that praises or blames with no number in it: an opinion, not a claim."""
    if any(ch.isdigit() for ch in body):
        return False
    short = word_count(body) <= _JUDGEMENT_WORDS if lang not in ("ja", "zh") else len(body) <= 40
    if short and _JUDGEMENT.search(body):
        return True
    if lang in ("ja", "zh"):
        # 「画面很美」 after 「获得了艾美奖」 or 「由诺兰执导」: a fact beside the verdict
        return (
            len(body) <= _UNSPACED_VERDICT_CHARS
            and _UNSPACED_DELIGHT.search(body) is not None
            and not re.search("[はが]|了(?!不起)|由|于|已", body)
        )
    if _COMPOUND.search(body) or ("," in body and word_count(body.split(",")[0]) > 3):
        return False  # "The concert was great, the hall was full": a fact beside the verdict
    written = WORD_PATTERN.findall(body)
    if lang == "en" and not _ENGLISH_COPULA.intersection(w.lower() for w in written):
        return False  # "Kyiv's metro has a beautiful station …" says what it has
    verbs = [i for i, w in enumerate(written) if has_verb_marker(w, lang)]
    # The praise is the predicate: after the verb ("… was a delight"), or with no verb at all
    # ("Aun así, maravilloso."); "Turkish delight is made from starch" names a thing.
    after = verbs[0] + 1 if verbs else 1
    return (
        len(written) <= _VERDICT_WORDS
        and any(
            w in _DELIGHT  # in lower case: "Linda", "The Boring Company" are names
            for w in written[after:]
        )
    )


def _verbless_exclamation(body: str, lang: str) -> bool:
    """A verdict with no verb: an exclamation opener or an "honestly" before a noun phrase
    ("Quel livre frustrant.", "Sinceramente, el paseo más bonito del viaje.", "说实话，…"), or a
    noun phrase ending in "!" ("Six pages d'une densité folle !"). With a verb it states
    something, however it feels ("Honestly, the bridge is 2 km long.")."""
    if lang in ("ja", "zh"):
        return (
            _UNSPACED_VERDICT.match(body) is not None
            or (
                body.endswith(("！", "!"))
                and not _TOPIC_BEFORE_NOUN.search(body)
                and not _UNSPACED_REPORT.search(body)
            )
            or (lang == "zh" and _UNSPACED_DEGREE.search(body) is not None)
        )
    if has_verb_marker(body, lang) or is_step(body, lang):
        return False
    exclaimed = _NOUN_EXCLAMATION.match(body)
    if exclaimed is not None and exclaimed.group(1).islower():
        return True  # "Quel livre frustrant.", "What a dense six pages."
    verdict = _VERDICT_OPENING.match(body)
    if verdict is not None:
        rest = body[verdict.end() :]
        words = {w.lower() for w in WORD_PATTERN.findall(rest)}
        return word_count(rest) <= 10 and bool(words & _PRAISE)
    return body.endswith("!") and lang != "en" and word_count(body) <= 8


def _is_citation(body: str, lang: str) -> bool:
    """A bibliography entry written with commas: "Robin Wall Kimmerer, Braiding Sweetgrass,
    Milkweed Editions, 2013"; a sentence that ends in a year states something with a verb."""
    return (
        _CITATION_END.search(body) is not None
        and body.count(",") + body.count("，") >= 2
        and not has_verb_marker(body, lang)
        and not is_step(body, lang)
    )


def _is_material(body: str, lang: str) -> bool:
    """An ingredient or a material of a list: amounts and names, no end mark and no verb
    ("DPBS without calcium or magnesium, 10 mL per T75", "200 g de farine", 「反向引物
    NLS-R-XhoI（10 µM），1.25 µL」)."""
    return (
        body[-1:] not in _END
        and _QUANTITY.search(body) is not None
        and (lang in ("ja", "zh") or not has_verb_marker(body, lang))
        and not (lang == "en" and _ENGLISH_PAST.search(body))
    )


def is_numbered_item(block: str) -> bool:
    """Whether a block's Markdown is an item of a numbered list ("1. Warm the oil")."""
    return _NUMBERED_ITEM.match(block) is not None


_WHAT_FOLLOWS = {
    "ja": re.compile(
        r"(?:次|下記|(?<![\d０-９歳生円人])(?<![\d０-９] )以下)の"
        r"(?![^、。]{0,4}(?:年|月|週|日|回|朝|晩|夜|曜|休暇|季節|シーズン|セッション|駅|電車|便))"
    ),
    "zh": re.compile(
        r"(?:如下|下列|(?<![\d０-９岁])(?<![\d０-９] )(?:以下|下面)(?:几|这|各)?)(?!的)"
        r"[^，。,]{0,8}[。：:]?$"
    ),
}
"""「Syncは次の設定を使用します。」, 「插件会添加如下选项。」: a lead-in with no colon, which names
what the list below holds; 「次の駅で乗り換えた。」 is the next station, 「小学生以下の子ども」 and
「150 以下」 a bound, 「如下表所示，…」 a table."""

_JAPANESE_LEAD_IN_END = re.compile(r"(?:ます|です|とおり|通り)[。：:]?$")
"""A Japanese lead-in ends with its predicate: 「…次の設定を使用します。」."""


def is_list_item(block: str) -> bool:
    """Whether a block's Markdown is an item of a list, bulleted, numbered or a task."""
    return _NUMBERED_ITEM.match(block) is not None or _ANY_BULLET.match(block) is not None


def introduces_what_follows(sentence: str, lang: str) -> bool:
    """Whether a Japanese or Chinese sentence right above a list introduces it: it names "the
    following" and ends with no colon, as these languages may write a lead-in."""
    pattern = _WHAT_FOLLOWS.get(lang)
    if pattern is None or (lang == "ja" and _JAPANESE_LEAD_IN_END.search(sentence) is None):
        return False
    return pattern.search(sentence) is not None


_ENTRIES_IN_VIEW = 2
_ENTRY_WORDS = 8


def continues_a_lead_in(block: str, before: Sequence[str], lang: str) -> bool:
    """Whether a block is an item of a bulleted list that a lead-in opens ("The warranty does
    not cover:"): ``before`` holds the blocks above it, the nearest last. Such an item finishes
    the lead-in's sentence ("- Water damage to a sensor used with its cap closed") and says
    nothing alone unless it is a sentence of its own."""
    if _BULLET_ITEM.match(block) is None:
        return False
    for above in reversed(before):
        if _BULLET_ITEM.match(above) is None:
            return above.rstrip().endswith((":", "："))
    # The list goes on above the window: its lead-in is out of sight, but short entries with no
    # verb, one after another, are its items. Japanese and Chinese items go without 。 even when
    # they state something, so there a list says no more than that.
    return (
        lang not in ("ja", "zh")
        and len(before) >= _ENTRIES_IN_VIEW
        and all(_is_entry(_BULLET_ITEM.sub("", above, count=1), lang) for above in before)
    )


def _is_entry(item: str, lang: str) -> bool:
    """A short item with no end mark and no verb the rules can see: "Ein Router mit WPA2"."""
    text = item.rstrip()
    return (
        text[-1:] not in _END
        and word_count(text) <= _ENTRY_WORDS
        and not has_verb_marker(text, lang)
        and not (lang == "en" and _ENGLISH_PAST.search(text))
    )


def states_nothing(prose: str, lang: str, *, numbered: bool = False) -> bool:
    """Whether no sentence of a block's prose could state a claim: every one is a question or
    one of the kinds above, read with its opening label or speaker and without. A model is not
    asked for the claims of such a block: asked, a small one turns "Does the jump show up in
    the data?" into "The jump does not show up". When in doubt it is asked:
    "Encryption algorithm: AES-256 using GCM" states what its value alone does not."""
    sentences = split_sentences(prose)
    return bool(sentences) and all(
        s.rstrip().endswith(("?", "？"))
        or all(
            not_a_claim(text, lang, numbered=numbered) is not None for text in {s, strip_label(s)}
        )
        for s in sentences
    )


def _is_list(line: str) -> bool:
    """Short items in a row: "Ana Lopes, Ben Carter, Priya Shah", "flour, water, salt". With an
    end mark only names are: "At 9:04, the cargo explodes." is a sentence."""
    parts = [p for p in re.split(r"[,、;；]", line.rstrip(_END + " ")) if p.strip()]
    if len(parts) < 2 or not all(word_count(p) <= 3 and len(p.strip()) <= 30 for p in parts):
        return False
    if UNSPACED_CHAR.search(line) and not all(len(p.strip()) <= 8 for p in parts):
        return False
    if line.rstrip()[-1:] not in _END:
        return True
    return all(w[0].isupper() for p in parts for w in WORD_PATTERN.findall(p))


def _is_navigation(line: str) -> bool:
    parts = [p for p in re.split(r"\s*[|·•»›→←]\s*", line) if p.strip()]
    return len(parts) >= 2 and all(word_count(p) <= _NAV_PART_WORDS for p in parts)


def _unspaced_kind(sentence: str, lang: str, *, numbered: bool = False) -> str | None:
    body = sentence.lstrip("「『（(【 ")
    if body.startswith(_UNSPACED_PARTICLES):
        return FRAGMENT
    if _UNSPACED_TITLE.match(body):
        return LABEL
    noun_end = _UNSPACED_NOUN_END.search(body) if lang == "zh" and "是" not in body else None
    if noun_end is not None and all(t.startswith("n") for _, t in tag_chinese(noun_end.group(1))):
        return LABEL
    # Japanese and Chinese end a sentence with 。: a short line without it is a setting or a name,
    # and so is a key with short values in a row (「资料来源：The Ghost Map、Bridging the Firth」).
    if body[-1:] not in _END:
        label, value = split_label(body)
        parts = _RECORD_PARTS.split(value)
        if (
            len(body) <= _UNSPACED_LABEL_CHARS
            or (label is not None and all(len(p) <= _UNSPACED_LABEL_CHARS for p in parts))
            or ("、" in value and all(len(p) <= _UNSPACED_ITEM_CHARS for p in parts))
        ):
            return LABEL
    if lang == "zh":
        return INSTRUCTION if is_chinese_step(body, numbered=numbered) else None
    if is_japanese_lead_in(body):
        return LEAD_IN
    if (
        _JAPANESE_NOUN_END.search(body)
        and not _KANA.search(body.rstrip(_END)[-1:] or "あ")
        and not _TOPIC_BEFORE_NOUN.search(body)
    ):
        return LABEL
    return INSTRUCTION if is_japanese_step(body, numbered=numbered) else None
