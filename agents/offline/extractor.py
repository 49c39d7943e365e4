"""The offline claim extractor: one claim per verifiable declarative sentence of a block.

Deterministic and rule-based. It reads the block's prose as a reader sees it
(:func:`aclarai.parsers.prose_text`: no link syntax, no code blocks, no task items). A code span
stays in the claim as written, so that the claim, rendered, reads its literal content as the
source does. In a conversation note (Tier 1, with participants) a line usually
opens with a speaker prefix (``alice: ...``); the prefix is removed and first-person pronouns
are resolved to the speaker ("alice: I rolled back to v2.3" gives "alice rolled back to v2.3";
"we" becomes "alice's team", with the verb agreeing). In any other note, ``Label: text`` is a
label and its text: the claim is the text. Sentences that are not claims are skipped: questions,
greetings, thanks and acknowledgements, bare opinions with nothing checkable, fragments, and
what :mod:`~aclarai.agents.offline.not_claims` finds in any language (instructions, navigation,
labels, links, lead-ins). The language of a block is read once
(:mod:`~aclarai.agents.offline.language`); sentences in other scripts take the path of
:mod:`~aclarai.agents.offline.nonlatin`, other Latin-script languages that of
:func:`_other_claim`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aclarai.agents.base import Claim, ClaimExtractor, ExtractionInput, claim_id
from aclarai.agents.offline.features import is_content, word_set
from aclarai.agents.offline.language import ENGLISH, function_words, language_of
from aclarai.agents.offline.nonlatin import END_MARKS, is_nonlatin, nonlatin_claim
from aclarai.agents.offline.not_claims import (
    LABEL,
    NAVIGATION,
    continues_a_lead_in,
    has_predicate,
    introduces_what_follows,
    is_list_item,
    is_numbered_item,
    is_writers_wish,
    not_a_claim,
    split_label,
)
from aclarai.agents.offline.steps import has_verb_marker
from aclarai.agents.offline.words import WORD_PATTERN
from aclarai.parsers import normalize_text, prose_text, split_sentences

_SPEAKER = re.compile(r"^[ \t]*(?P<name>[A-Za-z][\w.'-]*(?: [A-Za-z][\w.'-]*){0,2})[ \t]*:[ \t]+")
_NOT_SPEAKERS = word_set(
    """
    note notes update edit todo summary question answer q a re fyi ps nb warning tip important
    example source action decision status result reason context problem solution agenda topic
    subject date time location tldr aside update edit caveat
    """
)
_BULLET = re.compile(r"^[ \t]*•[ \t]+")
"""A typed bullet, which Markdown does not know but chat exports use."""

_DISCOURSE = re.compile(
    r"^(?:(?:(?:ok|okay|yes|yeah|yep|no|nope|oh|ah|well|so|right|sure|hmm|um|great|cool|nice|"
    r"thanks|thank you|alright)[,!:.]|(?:note|update|edit|ps|nb|fyi|btw)[:,]|and|but|also|anyway|"
    r"actually|basically|honestly|"
    r"btw|fyi)\s+)+",
    re.I,
)
_INTERJECTION_ONLY = re.compile(r"^(?:ok|okay|yes|yeah|yep|no|nope|oh|ah|well|right|sure)$", re.I)
_GREETING = word_set(
    "hi hello hey thanks thank thx ty cheers bye goodbye welcome morning congrats congratulations "
    "sorry lgtm"
)
_QUESTION_WORDS = word_set("who what when where why how which whose whom")
_AUXILIARIES = word_set(
    "am is are was were be been do does did have has had will would can could should shall may "
    "might must"
)
_QUESTION_SUBJECTS = word_set(
    "i you we they he she it anyone anybody someone somebody everyone everybody there this that the"
)
_IMPERATIVES = word_set(
    """
    add ask be bring call check click come consider create delete do don't double-check email
    ensure fix follow give go help install keep let let's look make merge move note open ping please
    push put read remember remove restart review run send set share ship start stop take tell try
    update use verify wait watch write revert grab schedule reach loop see book file pick fill
    """
)
_OBJECT_STARTERS = word_set(
    "the a an this that these those it me us them him her my your our their up out on off to in "
    "back all everyone some sure"
)
_ALWAYS_IMPERATIVE = word_set("please let's let don't dont")
_OPINION_FRAMES = re.compile(
    r"^(?:i|we) (?:think|feel|believe|guess|suppose|reckon|love|like|hate|prefer|wish|hope)\b"
    r"|^(?:imo|imho|in my opinion|personally)\b",
    re.I,
)
_EVALUATIVE = word_set(
    """
    awesome amazing bad terrible horrible great good nice cool fine weird strange funny annoying
    excellent fantastic wonderful lovely perfect brilliant crazy wild boring exciting sad happy
    glad better worse best worst beautiful ugly neat sweet huge gross impressive
    """
)
_IRREGULAR_PAST = word_set(
    """
    went made took got saw ran broke fell found gave kept left lost met paid put said sent set shut
    sold spent stood told thought won wrote began came did built bought brought caught chose drew
    drove ate fed felt forgot froze grew heard held hid hit hurt knew laid led lent let lay meant
    quit read rode rang rose sang sank sat slept spoke stole struck taught tore threw understood
    woke wore became shot split spun cut began shut
    """
)
_RESTRICTORS = word_set("only just except even mostly mainly")
_PREPOSITIONS = word_set("for with to from in on at by about after before during since until")
_NOUN_MARKERS = word_set(
    """
    a an the this that these those my your our their its his her some many few several all more
    most other with for of than to from in on at by about into two three four five ten
    """
)
_ADVERBS = word_set(
    """
    just also already really actually still never always often then finally only recently probably
    definitely usually sometimes even mostly first quickly immediately eventually personally
    """
)
_FIRST_PERSON_FORMS = {"am": "is", "'m": "is", "have": "has", "'ve": "has", "do": "does"}
_PLURAL_FORMS = {"are": "is", "'re": "is", "were": "was", "have": "has", "'ve": "has", "do": "does"}
_UNCHANGED = word_set(
    "was is has does did had will would can could should shall may might must 'll 'd"
)
_BASE_FORMS_IN_ED = word_set(
    "need feed seed proceed succeed exceed bleed breed speed embed shed wed heed shred"
)
_NEGATED_FORMS = {"don't": "doesn't", "haven't": "hasn't", "aren't": "isn't", "weren't": "wasn't"}
_CONTRACTION_WORDS = {"'ll": "will", "'d": "would"}
_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|[^\sA-Za-z]+|\s+")
_OBJECT_FORMS = {
    "me": "{}",
    "myself": "{}",
    "my": "{}'s",
    "mine": "{}'s",
    "us": "{}'s team",
    "ourselves": "{}'s team",
    "our": "{}'s team's",
    "ours": "{}'s team's",
}
# Finds every word resolve_first_person could replace (and a few more): a letter run that is
# "I", "we" or one of _OBJECT_FORMS. ASCII classes only, since _TOKEN's words are ASCII letters.
_FIRST_PERSON_HINT = re.compile(
    r"(?<![A-Za-z])(?:[iI]|[wW][eE]|[mM][eE]|[mM][yY](?:[sS][eE][lL][fF])?|[mM][iI][nN][eE]"
    r"|[uU][sS]|[oO][uU][rR](?:[sS]|[sS][eE][lL][vV][eE][sS])?)(?![A-Za-z])"
)


class OfflineClaimExtractor(ClaimExtractor):
    """Rule-based extractor: fast, deterministic, no model."""

    name = "offline"
    version = "3"

    def extract_batch(self, inputs: Sequence[ExtractionInput]) -> list[list[Claim]]:
        return [self._extract(item) for item in inputs]

    def _extract(self, item: ExtractionInput) -> list[Claim]:
        claims: list[Claim] = []
        seen: set[str] = set()
        prose = prose_text(item.block.text, code_spans=True)
        # The rules read neighbours only to tell the language of a short block, whether a list
        # item goes on a lead-in above it, and whether a block is the lead-in of a list below.
        lang = language_of(prose, [u.text for u in (*item.before, *item.after)])
        numbered = is_numbered_item(item.block.text)
        item_of = continues_a_lead_in(item.block.text, [u.text for u in item.before], lang)
        opens = (
            not is_list_item(item.block.text)
            and bool(item.after)
            and is_list_item(item.after[0].text)
        )
        for text in extract_claim_texts(
            prose,
            conversation=item.conversation,
            lang=lang,
            numbered=numbered,
            lead_in_item=item_of,
            before_a_list=opens,
        ):
            key = normalize_text(text)
            if key not in seen:
                seen.add(key)
                claims.append(Claim(claim_id(item.block.block_id, text), item.block.block_id, text))
        return claims


def extract_claim_texts(
    utterance: str,
    *,
    conversation: bool = True,
    lang: str | None = None,
    numbered: bool = False,
    lead_in_item: bool = False,
    before_a_list: bool = False,
) -> list[str]:
    """The claim sentences of one block, first-person pronouns resolved to the speaker.

    Args:
        utterance: The prose of a block as a reader sees it, speaker prefix included.
        conversation: Whether the block is a line of a conversation note, where ``name:``
            names a speaker; elsewhere it is a label, and the claim is the text after it.
        lang: The block's language; read from the text when not given.
        numbered: Whether the block is an item of a numbered list, where steps are.
        lead_in_item: Whether it is an item of a bulleted list a lead-in opens, where a line
            with no end mark and no verb the rules can see finishes the lead-in's sentence.
        before_a_list: Whether a list follows the block, which its last sentence may
            introduce with no colon (「次の設定を使用します。」).

    Returns:
        Claim texts in order, whitespace-normalised, each ending in one end mark.
    """
    lang = lang or language_of(utterance)
    segments = speaker_segments(utterance) if conversation else [(None, utterance)]
    claims: list[str] = []
    for n, (speaker, text) in enumerate(segments):
        sentences = split_sentences(text)
        for i, sentence in enumerate(sentences):
            if lead_in_item and _goes_on_its_lead_in(sentence, lang):
                continue
            last = n == len(segments) - 1 and i == len(sentences) - 1
            if before_a_list and last and introduces_what_follows(sentence, lang):
                continue
            claim = sentence_to_claim(
                sentence, speaker, lang, labelled=not conversation, numbered=numbered
            )
            if claim is not None:
                claims.append(claim)
    return claims


_RESULT = re.compile(r"\d\s*%|[€$£¥]\s*\d|\d\s*[€$£¥]")
"""A share or an amount of money in a list item: a result, not what a lead-in lists."""

_PAST = re.compile(
    r"^(?:[a-zäöüß]{3,}(?:te|ten)|[a-záéíóú]{3,}(?:ó|aron|ieron)|[a-zãç]{3,}(?:ou|aram|eram|iu)"
    r"|[a-zàèìòù]{3,}(?:ò|arono|erono|irono))$"
)
"""A verb in the past by its ending: "stieg" aside, "deckte", "crecieron", "passou", "salì"."""


def _goes_on_its_lead_in(sentence: str, lang: str) -> bool:
    """An item of a lead-in's list with no end mark and no verb the rules can see: "A phone
    with iOS 15 or later", "Un téléphone sous iOS 15 ou Android 10". A change measured ("Der
    Umsatz stieg um 12 %") or a verb in the past ("Las ventas crecieron …") states a result."""
    text = sentence.rstrip()
    if not text or text[-1] in END_MARKS or _RESULT.search(text):
        return False
    if lang == ENGLISH:
        return not _has_verb([w.lower() for w in WORD_PATTERN.findall(text)])
    # Japanese and Chinese end every sentence with 。, so a line without one is a list's item.
    return lang in ("ja", "zh") or not (
        has_verb_marker(text, lang) or any(_PAST.search(w) for w in WORD_PATTERN.findall(text))
    )


def split_speaker(line: str) -> tuple[str | None, str]:
    """Split ``"alice: text"`` into ``("alice", "text")``; ``(None, line)`` without a prefix."""
    match = _SPEAKER.match(line)
    if match is None or match.group("name").lower().replace(";", "") in _NOT_SPEAKERS:
        return None, line
    return match.group("name"), line[match.end() :]


def speaker_segments(utterance: str) -> list[tuple[str | None, str]]:
    """An utterance's text cut where the speaker changes."""
    segments: list[tuple[str | None, list[str]]] = []
    speaker: str | None = None
    for raw in utterance.splitlines():
        named, line = split_speaker(_BULLET.sub("", raw, count=1) if "•" in raw else raw)
        if named is not None or not segments:
            speaker = named or speaker
            segments.append((speaker, []))
        segments[-1][1].append(line)
    return [(who, "\n".join(lines)) for who, lines in segments if any(s.strip() for s in lines)]


def sentence_to_claim(
    sentence: str,
    speaker: str | None,
    lang: str = ENGLISH,
    *,
    labelled: bool = False,
    numbered: bool = False,
) -> str | None:
    """The claim a sentence makes, or ``None`` when it is not a verifiable declarative.

    Args:
        sentence: One sentence as a reader sees it.
        speaker: Who said it (a conversation's line), for its first-person pronouns.
        lang: Its language.
        labelled: Whether a ``Label:`` opening it is taken off (outside conversations).
        numbered: Whether it is an item of a numbered list.
    """
    text = normalize_text(sentence.replace("’", "'"))
    if labelled:
        if not_a_claim(text, lang) in (NAVIGATION, LABEL):
            # "Weiter: …" says where to go; "Invitada: Dra. Hanna Lindqvist, radioastrónoma de
            # Chalmers" is a record: its value alone would read as a sentence
            return None
        text = _unlabelled(text, lang)
        if is_writers_wish(text):
            return None
    if not text or not_a_claim(text, lang, numbered=numbered) is not None:
        return None
    if not text.isascii() and is_nonlatin(text):
        return nonlatin_claim(text)
    if lang != ENGLISH:
        return _other_claim(text, lang)
    stripped = _DISCOURSE.sub("", text)
    if not stripped or _INTERJECTION_ONLY.match(stripped.rstrip(".!")):
        return None
    if stripped != text and text[0].isupper():
        stripped = stripped[0].upper() + stripped[1:]
    words = [w.lower() for w in WORD_PATTERN.findall(stripped)]
    if not _is_claim(stripped, words):
        return None
    claim = resolve_first_person(stripped, speaker) if speaker else stripped
    if claim[-1] not in END_MARKS:
        claim = claim.rstrip(",;:-— ") + "."
    return claim


def _unlabelled(text: str, lang: str) -> str:
    """The claim of ``Label: text``: the text when it is a sentence of its own ("Note: Sync
    keeps …"); the whole line when the label names what a value is ("Encryption algorithm:
    AES-256 using GCM"); nothing when the value is no fact either ("Attendees: Ana, Bo"). A
    record ("Rate: 1.65% fixed") gives nothing before it gets here."""
    label, rest = split_label(text)
    if label is None or not rest.strip():
        return text
    if rest.rstrip()[-1:] in END_MARKS:
        sentence = True
    elif not text.isascii() and is_nonlatin(text):
        sentence = False
    elif lang == ENGLISH:
        words = [w.lower() for w in WORD_PATTERN.findall(rest)]
        sentence = _has_verb(words) and not_a_claim(rest, lang) != LABEL
    else:
        sentence = has_predicate(rest, lang) and not_a_claim(rest, lang) != LABEL
    if sentence:
        return rest
    return text if any(ch.isdigit() for ch in rest) else ""


def _other_claim(text: str, lang: str) -> str | None:
    """A sentence of a Latin-script language other than English: a claim when it has a few
    words, one of them not a function word, and is no question."""
    words = [w.lower() for w in WORD_PATTERN.findall(text)]
    if len(words) < 3 or text.endswith(("?", "？")) or text.startswith("¿"):
        return None
    stop = function_words(lang)
    if all(w in stop for w in words):
        return None
    return text if text[-1] in END_MARKS else text.rstrip(",;— ") + "."


def _is_claim(text: str, words: list[str]) -> bool:
    if len(words) < 3 or text.endswith("?"):
        return False
    first, second = words[0], words[1]
    if first in _GREETING and second != "to":
        return False
    if first in _QUESTION_WORDS and second in _AUXILIARIES:
        return False
    if first in _AUXILIARIES and second in _QUESTION_SUBJECTS:
        return False
    if first in _ALWAYS_IMPERATIVE or (first in _IMPERATIVES and second in _OBJECT_STARTERS):
        return False
    if first in _RESTRICTORS and second in _PREPOSITIONS:
        return False  # "only for enterprise customers": an answer's fragment
    if _OPINION_FRAMES.match(text) and not _has_anchor(text):
        return False
    return any(is_content(w) and w not in _EVALUATIVE for w in words) and _has_verb(words)


def _has_anchor(text: str) -> bool:
    """A number, a name or a technical token: something a reader could check."""
    words = WORD_PATTERN.findall(text)
    return any(
        any(ch.isdigit() for ch in word)
        or (i and word[0].isupper() and word != "I")
        or any(ch.isupper() for ch in word[1:])
        for i, word in enumerate(words)
    )


def _has_verb(words: list[str]) -> bool:
    return any(
        w in _AUXILIARIES
        or w in _IRREGULAR_PAST
        or w.endswith(("ed", "'s", "n't", "'re", "'ve", "'m"))
        or (i and _third_person_verb(w, words[i - 1]))
        for i, w in enumerate(words)
    )


def _third_person_verb(word: str, previous: str) -> bool:
    """'runs' in "the cluster runs", not 'seats' in "than 500 seats" (a guess without a tagger)."""
    if not word.endswith("s") or word.endswith("ss") or len(word) <= 3:
        return False
    return previous not in _NOUN_MARKERS and not any(ch.isdigit() for ch in previous)


def resolve_first_person(text: str, speaker: str) -> str:
    """Replace I/me/my and we/us/our by the speaker, making the following verb agree.

    "I'm" becomes "alice is", "we've" becomes "alice's team has", "I need" becomes
    "alice needs"; "we" is read as the speaker's team.
    """
    if not _FIRST_PERSON_HINT.search(text):
        return text  # the tokens below always join back into the text
    tokens = _TOKEN.findall(text)
    out: list[str] = []
    agree_next = False
    for token in tokens:
        lower = token.lower()
        if token.isspace() or not token[0].isalpha():
            out.append(token)
            continue
        head, _, tail = lower.partition("'")
        tail = f"'{tail}" if tail else ""
        if head in {"i", "we"}:
            subject = speaker if head == "i" else f"{speaker}'s team"
            out.append(subject)
            if tail:
                forms = _FIRST_PERSON_FORMS if head == "i" else _PLURAL_FORMS
                out.append(" " + forms.get(tail, _CONTRACTION_WORDS.get(tail, tail.lstrip("'"))))
            else:
                agree_next = True
            continue
        replacement = (
            _object_pronoun(lower, speaker) if token[1:].islower() or len(token) == 1 else None
        )
        if replacement is not None:
            out.append(replacement)
            continue
        if agree_next and lower not in _ADVERBS:
            out.append(_third_person(token, lower))
            agree_next = False
            continue
        out.append(token)
    return "".join(out)


def _object_pronoun(lower: str, speaker: str) -> str | None:
    form = _OBJECT_FORMS.get(lower)
    return None if form is None else form.format(speaker)


def _third_person(token: str, lower: str) -> str:
    if lower in _FIRST_PERSON_FORMS or lower in _PLURAL_FORMS:
        return _FIRST_PERSON_FORMS.get(lower) or _PLURAL_FORMS[lower]
    if lower in _NEGATED_FORMS:
        return _NEGATED_FORMS[lower]
    if (
        lower in _UNCHANGED
        or lower in _IRREGULAR_PAST
        or (lower.endswith("ed") and lower not in _BASE_FORMS_IN_ED)
        or lower.endswith("n't")
        or not lower.isalpha()
    ):
        return token
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return token + "es"
    if lower.endswith("y") and len(lower) > 2 and lower[-2] not in "aeiou":
        return token[:-1] + "ies"
    return token + "s"
