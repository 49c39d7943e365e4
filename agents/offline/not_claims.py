"""Sentences that state nothing about the world, in any language: they give no claim.

A claim says something checkable with a predicate. What a note holds besides, and how each is
told apart without a tagger:

- a **lead-in**, which ends in a colon ("The plugin has three modes:") and introduces a list;
- a **link line**: a bare address ("https://…"), or an address with a label before it
  ("Documentation: https://…");
- a **navigation** line: short links or labels in a row ("Edit in GitHub | Copy this note");
- a **label**: a short line with no end mark and no verb ("UI font sizes", "Muted text color");
- an **instruction**, a step telling the reader what to do: a clause that opens with an
  imperative ("Click Restore default settings", "Ouvrez les Paramètres", "Klicken Sie auf …",
  「启用 Importer 插件。」), or in Japanese a polite step with no subject (「設定を開きます。」);
- in Japanese and Chinese, a **fragment** that opens with a particle (「と入力します。」).

A label that opens a sentence ("Note: Sync keeps 12 months.", "Layout: The sidebar …") is not
content either: :func:`strip_label` takes it off, and the claim is what follows.

The imperative tables are this module's own: no library lists a language's imperatives. They
hold the verbs of help pages (click, open, select …), each in its imperative forms.
"""

from __future__ import annotations

import re

from aclarai.agents.offline.features import word_set
from aclarai.agents.offline.words import WORD_PATTERN
from aclarai.parsers import split_sentences

LEAD_IN, LINK, NAVIGATION, LABEL, INSTRUCTION, FRAGMENT = (
    "lead-in",
    "link",
    "navigation",
    "label",
    "instruction",
    "fragment",
)
_LABEL = re.compile(
    r"^[ \t]*(?P<label>[^\W\d_][\w.'’&/-]*(?:[ \t]+[^\W\d_][\w.'’&/-]*){0,2})"
    r"(?:[ \t]*:[ \t]+|[ \t]*：[ \t]*)(?=\S)"
)
_URL = re.compile(r"(?:https?|ftp)://\S+|www\.\S+", re.I)
_NAV_SEPARATORS = re.compile(r"\s[|·•»›→←]\s|\s[|·•»›→←]$|^[|·•»›→←]\s")
_NAV_PART_WORDS = 5
_LABEL_WORDS = 6
_UNSPACED_LABEL_CHARS = 25
_END = ".!?…。！？．｡"
_CLAUSE = re.compile(r"(?:^|[,;，、；]\s*)")
_OPENERS = word_set(
    """
    to if when once after before in on from for under then next now finally first
    um wenn falls sobald nachdem bevor im am auf unter dann danach
    pour si quand lorsque dès après avant dans en sous puis ensuite
    para si cuando una después antes en bajo luego
    per se quando una dopo prima nel nella sotto poi
    para se quando depois antes em no na sob
    om als wanneer zodra na voordat in op onder dan daarna
    """
)
"""Words that open a phrase before the main clause: "To open it, click Settings", "In the
menu, choose Export". A comma after any other opening ends a list item or a clause of a
statement ("The code depends on httpx, click and jinja2")."""
_LEADING_ADVERBS = word_set(
    """
    then next first finally now also afterwards
    dann danach zuerst anschließend jetzt
    puis ensuite enfin alors
    luego después primero finalmente
    poi quindi infine dopo
    depois então
    dan daarna eerst vervolgens nu
    """
)
_IMPERATIVES: dict[str, frozenset[str]] = {
    "en": word_set(
        """
        click tap press select choose open enable disable type enter navigate drag drop install
        uninstall toggle hover scroll expand collapse rename paste copy configure restart reload
        right-click double-click go add remove create delete set use see find search save check
        uncheck switch turn make ensure pick follow visit refer try run launch process
        """
    ),
    "de": word_set(
        """
        klicke öffne wähle aktiviere deaktiviere gib drücke gehe tippe ziehe installiere füge
        erstelle lösche benutze verwende speichere suche kopiere schalte starte
        """
    ),
    "fr": word_set(
        """
        clique ouvre sélectionne choisis appuie active désactive tape va saisis glisse installe
        ajoute crée supprime utilise enregistre cherche copie colle faites
        """
    ),
    "es": word_set(
        """
        haga haz abra abre seleccione selecciona pulse pulsa presione presiona active activa
        desactive desactiva elija elige escriba escribe vaya ve introduzca introduce arrastre
        arrastra instale instala añada añade cree crea use usa toque toca habilite habilita
        ingrese ingresa copie copia pegue pega guarde guarda busque busca escoja marque marca
        mantén mantenga procesa revisa desplázate desplácese repasa establece encuentra comprueba
        cambia
        """
    ),
    "it": word_set(
        """
        fai clicca apri seleziona scegli premi attiva disattiva digita vai inserisci trascina
        installa aggiungi abilita tocca crea usa utilizza copia incolla salva cerca imposta
        controlla elabora passa scorri tieni trova verifica
        """
    ),
    "pt": word_set(
        """
        clique abra selecione escolha pressione ative desative digite vá acesse arraste instale
        adicione toque habilite crie use copie cole salve pesquise defina marque insira
        role revise processe confira encontre mantenha troque verifique
        """
    ),
    "nl": word_set(
        """
        klik open selecteer kies druk activeer schakel typ ga sleep installeer voeg tik zet vul
        maak gebruik kopieer plak sla zoek verwerk controleer houd voer loop stel scrol
        """
    ),
}
_CLITIC = re.compile(r"(?<=\w{3})(?:-?(?:lo|la|los|las|le|les|li|ne|me|te|se|nos|a|o))$")
"""An object pronoun joined to an imperative: "añádelo", "aggiungilo", "adicione-a"."""
_CLITIC_LANGUAGES = frozenset({"es", "it", "pt", "fr"})
"""The languages that join it: in English "pickles" would read as "pick" and "les"."""
_FORMAL_PRONOUNS = {"de": "sie", "nl": "u"}
"""The polite imperative puts its pronoun after the verb: "Klicken Sie", "Klikt u"."""
_FRENCH_NOT_VERBS = word_set("chez assez nez rez")
_CHINESE_IMPERATIVES = tuple(
    word_set(
        """
        点击 单击 双击 右键 打开 启用 禁用 停用 选择 选中 输入 按下 按 转到 前往 拖动 拖放
        安装 卸载 添加 删除 创建 新建 设置 使用 复制 粘贴 保存 搜索 查看 请 勾选 取消勾选 切换
        关闭 进入 返回 访问
        """
    )
)
_JAPANESE_STEP = re.compile(
    r"(?:します|きます|ぎます|びます|みます|ります|ちます|ください)[。．]?$"
)
_JAPANESE_STATEMENT_ENDINGS = ("できます", "あります", "います", "れます", "なります", "せます")
_JAPANESE_SUBJECT = re.compile("[はがも]")
_UNSPACED_PARTICLES = tuple("とをにはがでもの、")
_VERB_MARKERS: dict[str, frozenset[str]] = {
    "en": word_set(
        "is are was were be been has have had will would can could should may might must does "
        "did do"
    ),
    "de": word_set("ist sind war waren hat haben hatte wird werden kann können muss soll"),
    "fr": word_set("est sont était a ont avait sera peut peuvent doit"),
    "es": word_set("es son era está están tiene tienen puede pueden ha han será hay"),
    "it": word_set("è sono era ha hanno può possono sarà deve"),
    "pt": word_set("é são era está estão tem têm pode podem há será deve"),
    "nl": word_set("is zijn was waren heeft hebben kan kunnen wordt worden zal moet"),
}
"""Verbs that make even a short line a statement ("Sync is free")."""
_ANY_VERB_MARKER = frozenset().union(*_VERB_MARKERS.values())
_SPEECH_VERBS = word_set("said says say wrote writes told tells thinks thought asked asks")
"""Who said what is part of it: "Somebody successful said: 99% of success is showing up"."""


def split_label(sentence: str) -> tuple[str | None, str]:
    """``sentence``'s opening label and the rest ("Note: x" → ``("Note", "x")``, "注意：x" →
    ``("注意", "x")``), or ``(None, sentence)``.

    A label is one to three words with no verb: a time ("14:02"), an address ("https://") or a
    clause ("Tom disagreed: …") is none.
    """
    match = _LABEL.match(sentence)
    if match is None:
        return None, sentence
    words = [w.lower() for w in WORD_PATTERN.findall(match.group("label"))]
    if any(
        w in _ANY_VERB_MARKER or w in _SPEECH_VERBS or (len(w) > 3 and w.endswith("ed"))
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
    return _has_verb_marker(sentence, lang) or _words(sentence) > _LABEL_WORDS + 1


def not_a_claim(sentence: str, lang: str) -> str | None:
    """Why ``sentence`` gives no claim (one of the kinds above), or ``None`` when it may.

    Args:
        sentence: One whitespace-normalised sentence as a reader sees it, its label taken off.
        lang: Its language (:func:`aclarai.agents.offline.language.language_of`).
    """
    body = sentence.rstrip()
    if body.endswith((":", "：")):
        return LEAD_IN
    if _NAV_SEPARATORS.search(body) and _is_navigation(body):
        return NAVIGATION
    if _URL.search(body) and _words(strip_label(_URL.sub(" ", body))) < 3:
        return LINK
    if lang in ("ja", "zh"):
        return _unspaced_kind(body, lang)
    if _is_instruction(body, lang):
        return INSTRUCTION
    if body[-1:] not in _END and (
        (_words(body) <= _LABEL_WORDS and not _has_verb_marker(body, lang)) or _is_list(body)
    ):
        return LABEL
    return None


def states_nothing(prose: str, lang: str, *, conversation: bool = False) -> bool:
    """Whether no sentence of a block's prose could state a claim: every one is a question or
    one of the kinds above. A model is not asked for the claims of such a block: asked, a
    small one turns "Does the jump show up in the data?" into "The jump does not show up"."""
    sentences = split_sentences(prose)
    return bool(sentences) and all(
        s.rstrip().endswith(("?", "？"))
        or not_a_claim(s if conversation else strip_label(s), lang) is not None
        for s in sentences
    )


def _is_list(line: str) -> bool:
    """Names or short items in a row, with no end mark: "Ana Lopes, Ben Carter, Priya Shah"."""
    parts = re.split(r"[,、;；]", line)
    return len(parts) >= 2 and all(0 < _words(p) <= 3 for p in parts)


def _is_navigation(line: str) -> bool:
    parts = [p for p in re.split(r"\s*[|·•»›→←]\s*", line) if p.strip()]
    return len(parts) >= 2 and all(_words(p) <= _NAV_PART_WORDS for p in parts)


def _is_instruction(sentence: str, lang: str) -> bool:
    verbs = _IMPERATIVES.get(lang)
    formal = _FORMAL_PRONOUNS.get(lang)
    for clause in _clauses(sentence):
        words = [w.lower() for w in WORD_PATTERN.findall(clause)[:3]]
        while words and words[0] in _LEADING_ADVERBS:
            words.pop(0)
        if not words:
            continue
        first, second = words[0], (words[1] if len(words) > 1 else "")
        bare = _CLITIC.sub("", first) if lang in _CLITIC_LANGUAGES else first
        if verbs is not None and (first in verbs or bare in verbs):
            return True
        if formal is not None and second == formal and first.endswith(("en", "t")):
            return True
        if lang == "fr" and bare.endswith("ez") and bare not in _FRENCH_NOT_VERBS:
            return True
    return False


def _clauses(sentence: str) -> list[str]:
    """The sentence, and what follows each comma when an opening phrase comes first: "To open
    it, click Settings" holds a step. Chinese marks its clauses with "，" alone."""
    first = WORD_PATTERN.match(sentence.lstrip())
    if first is None or first.group().lower() not in _OPENERS:
        return [sentence]
    starts = [m.end() for m in _CLAUSE.finditer(sentence)]
    return [sentence[s:] for s in starts if s < len(sentence)]


def _unspaced_kind(sentence: str, lang: str) -> str | None:
    body = sentence.lstrip("「『（(【 ")
    if body.startswith(_UNSPACED_PARTICLES):
        return FRAGMENT
    # Japanese and Chinese end a sentence with 。: a short line without it is a setting or a name.
    if body[-1:] not in _END and len(body) <= _UNSPACED_LABEL_CHARS:
        return LABEL
    if lang == "zh":
        for clause in re.split(r"[，、；]", body):
            if clause.lstrip().startswith(_CHINESE_IMPERATIVES):
                return INSTRUCTION
        return None
    core = body.rstrip("。．！ ")
    # The main clause comes last: 「表示するには、名前を追加します。」 is a step.
    main = _outside_quotes(core).rsplit("、", 1)[-1]
    if (
        _JAPANESE_STEP.search(core)
        and not core.endswith(_JAPANESE_STATEMENT_ENDINGS)
        and not _JAPANESE_SUBJECT.search(main)
    ):
        return INSTRUCTION
    return None


def _outside_quotes(text: str) -> str:
    """Japanese text without its quoted names: 「設定」は is a name, not a topic."""
    return re.sub(r"「[^」]*」|『[^』]*』", "", text)


def _has_verb_marker(sentence: str, lang: str) -> bool:
    markers = _VERB_MARKERS.get(lang)
    if markers is None:
        return True  # no table: a short line gets the benefit of the doubt
    return any(w.lower() in markers for w in WORD_PATTERN.findall(sentence))


def _words(text: str) -> int:
    return len(WORD_PATTERN.findall(text))
