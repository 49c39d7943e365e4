"""Whether a sentence of a Latin-script language is a step: it tells the reader what to do.

A step's verb is told by where it stands, not by a list of verbs. A word that opens a sentence
and is followed at once by an article, a possessive or an object pronoun ("Shape the dough",
"Tapa el cesto", "Öffne die Datei") is a verb with its object, because a sentence's opening noun
is followed by its verb, not by another noun's article. A Romance infinitive says so by its
ending ("Vérifier si …", "Comprobar que …"), a German step by its infinitive at the end after no
subject ("Das Öl in einem Topf erwärmen"), and in a numbered list a verb needs no object
("Bake for 20 minutes"). Where a language writes a step and a statement alike, the statement
wins: "Obtiene las predicciones …" (it fetches) is no step.

The closed word classes (articles, pronouns, auxiliaries) are this module's own tables, as are
the verbs of help pages (click, open, select …) in their imperative forms: they open a step
before a name ("Click Settings").
"""

from __future__ import annotations

import re
from itertools import pairwise

import stopwordsiso

from aclarai.agents.offline.features import word_set
from aclarai.agents.offline.language import function_words
from aclarai.agents.offline.verb_forms import is_imperative, is_inflected_verb, is_only_a_verb
from aclarai.agents.offline.words import WORD_PATTERN, word_count

_CLAUSE = re.compile(r"(?:^|[,;，、；]\s*)")

_OPENERS = {
    "en": word_set(
        "to if when once after before in on from for under then next now finally first over "
        "during within while"
    ),
    "de": word_set("um wenn falls sobald nachdem bevor im am auf unter dann danach"),
    "fr": word_set(
        "pour si s'il s'ils quand lorsque dès après avant dans en sous puis ensuite au pendant"
    ),
    "es": word_set("para si cuando una después antes en bajo luego al durante"),
    "it": word_set("per se quando una dopo prima nel nella sotto poi durante"),
    "pt": word_set("para se quando depois antes em no na sob ao durante"),
    "nl": word_set("om als wanneer zodra na voordat in op onder dan daarna tijdens"),
}
"""Words that open a phrase before the main clause: "To open it, click Settings", "In the
menu, choose Export". A comma after any other opening ends a list item or a clause of a
statement ("The code depends on httpx, click and jinja2")."""

_OPENING_WORDS = 4
"""The longest opening phrase a comma ends: "Nesse caso,", "L'autunno prima,"."""

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
        erstelle lösche benutze verwende speichere suche kopiere schalte starte prüfe warte
        verbinde trenne schließe bestätige aktualisiere lege nimm schneide mische sende
        schicke bereite wiederhole lerne zahle kündige überweise
        """
    ),
    "fr": word_set(
        """
        clique ouvre sélectionne choisis appuie active désactive tape va saisis glisse installe
        ajoute crée supprime utilise enregistre cherche copie colle faites faire laisser
        vérifie attends redémarre débranche éteins allume confirme télécharge mets laisse envoie
        prépare révise annule
        """
    ),
    "es": word_set(
        """
        sigue siga haga haz abra abre seleccione selecciona pulse pulsa presione presiona active
        activa desactive desactiva elija elige escriba escribe vaya ve introduzca introduce arrastre
        arrastra instale instala añada añade cree crea use usa toque toca habilite habilita
        ingrese ingresa copie copia pegue pega guarde guarda busque busca escoja marque marca
        mantén mantenga procesa revisa desplázate desplácese repasa establece encuentra comprueba
        cambia compruebe verifique revise consulte espere reinicie conecte desconecte apague
        encienda confirme descargue actualice deje ponga coloque retire mezcle envíe prepare
        cancele inicia inicie pon ponte ten ven
        """
    ),
    "it": word_set(
        """
        segui fai clicca apri seleziona scegli premi attiva disattiva digita vai inserisci trascina
        installa aggiungi abilita tocca crea usa utilizza copia incolla salva cerca imposta
        controlla elabora passa scorri tieni trova verifica attendi riavvia scollega spegni
        accendi chiudi conferma scarica aggiorna metti togli mescola invia prepara ripassa
        annulla
        """
    ),
    "pt": word_set(
        """
        siga clique abra selecione escolha pressione ative desative digite vá acesse arraste instale
        adicione toque habilite crie use copie cole salve pesquise defina marque insira
        role revise processe confira encontre mantenha troque verifique faça espere aguarde
        reinicie conecte desconecte desligue ligue feche confirme baixe transfira atualize deixe
        ponha coloque retire misture envie prepare reveja estude cancele inicie
        """
    ),
    "nl": word_set(
        """
        klik open selecteer kies druk activeer schakel typ ga sleep installeer voeg tik zet vul
        maak gebruik kopieer plak sla zoek verwerk controleer houd voer loop stel scrol neem
        doe geef kijk lees wacht herstart verbind ontkoppel sluit bevestig leg snijd meng bereid
        herhaal betaal annuleer
        """
    ),
}

_OBJECT_WORDS: dict[str, frozenset[str]] = {
    "en": word_set(
        "the a an your it them this these those all each every both its his her their our my "
        "any some"
    ),
    "de": word_set(
        "die das den ein eine einen dein deine deinen ihren ihre ihn es sie alle jeden jede jedes "
        "beide dich dir mich mir uns euch weder nichts"
    ),
    "fr": word_set(
        "le la les un une des du au aux ce cet cette ces son sa ses leur leurs mon ma mes "
        "votre vos ton ta tes tout toute tous toutes chaque"
    ),
    "es": word_set(
        "el la los las lo un una unos unas al del su sus tu tus este esta estos estas ese esa "
        "esos esas todo toda todos todas cada"
    ),
    "it": word_set(
        "il lo la i gli le un uno una del della dello dei degli delle al alla allo ai agli "
        "alle il suo sua suoi sue tuo tua tuoi tue questo questa questi queste quel quella "
        "quei quelle tutto tutta tutti tutte ogni"
    ),
    "pt": word_set(
        "o a os as um uma uns umas ao aos à às do da dos das no na nos nas seu sua seus suas "
        "este esta estes estas esse essa esses essas todo toda todos todas cada"
    ),
    "nl": word_set("de het een je jouw uw haar hun dit deze alle elk elke ze hem ons mij me beide"),
}
"""What follows a verb and never a sentence's opening noun: articles, possessives,
demonstratives and object pronouns. "Leave it covered", "Verser les lentilles"."""

_ELIDED = ("l'", "l’", "d'", "d’", "un'", "dell'", "all'", "nell'", "sull'")
"""An elided article joined to its noun: "l'huile", "l'aglio"."""

_PARTICLES = word_set("off up out down back away")
"""An English phrasal verb's particle comes between it and its object: "Switch off the heating"."""

_INFINITIVE = {
    "fr": ("er", "ir", "re"),
    "es": ("ar", "er", "ir"),
    "pt": ("ar", "er", "ir"),
    "it": ("are", "ere", "ire"),
}

_AFTER_INFINITIVE = word_set(
    """
    à avec dans sur pendant en environ si que bien doucement de par vers
    con en a por sobre durante que si
    con in per su che se bene
    com em por sobre durante que se bem
    """
)
"""What follows an infinitive that gives a step: "Assaisonner avec du sel", "Comprobar si …"."""

_DUTCH_STEP_FOLLOWERS = word_set(
    """
    met in op naar voor vóór aan uit bij over tot om door tegen eerst nooit niet pas toch
    eind altijd alleen ook er twee drie waar dat hoofdstuk na iets
    """
)
"""What follows a Dutch imperative when no object does: "Zaai eind april", "Begin toch …". A
name before its verb ("Priya liet …") is followed by neither."""

_DUTCH_SUBORDINATE = re.compile(
    r"\b(?:zodra|als|dat|die|wanneer|omdat|want|tot|terwijl|nadat|voordat|waar|zodat|of)\b"
)
"""Where a Dutch subordinate clause begins: its verb ("… zodra de tank leeg is") is not the
main clause's."""

_STEP_FOLLOWERS = _AFTER_INFINITIVE | word_set(
    """
    for on in at with into onto over until through only gently well about
    für mit in auf bei bis über nur etwa
    más solo bien unos unas
    circa via solo bene per
    mais só bem cerca
    voor met op in tot over alleen ongeveer
    """
)
"""What follows a step's verb in a numbered list when no object does: "Bake for 20 minutes"."""

_IMPERATIVE_ENDINGS = {
    "es": ("a", "e"),
    "pt": ("a", "e"),
    "it": ("a", "i", "ate", "ete", "ite"),
}
"""The endings a verb that opens a step may have where a sentence may also open with its
conjugated verb, its subject left out ("Obtiene las …", "Scarica le …"): the familiar and
polite imperatives ("Calienta", "Scaldate")."""

_PARTICIPLES = ("ado", "ada", "ido", "ida")

_POLITE = {
    "en": re.compile(r"(?:^|[,;]\s*)please\s+(?!note\b|be aware\b)[a-z]", re.I),
    "de": re.compile(r"^\s*Bitte\s+[a-zäöü]|\bSie\b[^.,;]*\sbitte\b|,\s*bitte\s+[a-zäöü]"),
    "fr": re.compile(r"(?:^|[,;]\s*)(?:veuillez|merci de|merci d['’])", re.I),
    "es": re.compile(r"(?:^|[,;]\s*)por favor\b|,\s*por favor[.!]?$", re.I),
    "it": re.compile(
        r"(?:^|[,;]\s*)(?:per favore|per cortesia|si prega di|vi preghiamo di)\b"
        r"|,\s*per favore[.!]?$",
        re.I,
    ),
    "pt": re.compile(r"(?:^|[,;]\s*)por favor\b|,\s*por favor[.!]?$", re.I),
    "nl": re.compile(r"(?:^|[,;]\s*)gelieve\b", re.I),
}
"""A request says "please", where a sentence or a clause opens ("For more than 10 days, please
ask 6 weeks ahead", "merci de faire votre demande …") or, in German, after "Sie" ("stellen Sie
den Antrag bitte …"). Reported ("The customer said please refund …") it is part of a statement,
and "Please note that …" passes on what follows."""

_NOT_STEP_VERBS = word_set(
    """
    today yesterday tomorrow tonight now here there then later soon still sometimes often usually
    once again meanwhile afterwards eventually recently currently also only even just
    puoi devi vuoi può deve sai puedes debes quieres puede debe sabes podes pode deves queres
    incluye ofrece permite admite contiene requiere necesita soporta existe funciona depende
    cuesta dura ocupa pesa mide tarda demora include offre permette supporta contiene richiede
    funziona dipende costa dura pesa misura inclui oferece permite suporta contém requer
    funciona depende custa dura pesa mede
    enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre
    gennaio febbraio aprile maggio giugno luglio settembre ottobre dicembre
    janeiro fevereiro março maio junho julho setembro outubro novembro dezembro
    """
)
"""Words that open a sentence before an article and are no step: an adverb of time ("Today
it is …"), a modal ("Puoi installare …": you can), the verbs with which a description
leaves its subject out ("Incluye una variante oscura": it includes), and the months ("Aprile
copre le settimane …" is no "apri" with "le" joined on)."""

_SPANISH_INDICATIVE = word_set("puedes debes tienes sabes quieres eres estás vas haces")

_PORTUGUESE_INDICATIVE = word_set(
    "funciona aceita precisa consegue sabe quer vale basta importa existe fica gosta usa cabe"
)

_JOINED_OBJECT = {
    "es": re.compile(
        r"[áéíóú]\w*?(?:la|lo|las|los|le|les|te|se|me|nos)$|\w{3}(?:ar|er|ir)(?:la|lo|las|los|le|les|se)$"
        r"|^(?:da|di|haz|pon|ten|ve|sal)(?:le|les|lo|la|los|las|me|nos|te)$"
    ),
    "pt": re.compile(r"\w{2}[ae]-(?:a|o|as|os|lo|la|los|las|lhe|lhes|se|nos|me|te)$"),
    "it": re.compile(
        r"\w{3}(?:ate|ete|ite)(?:la|lo|li|le|ne|ci|vi)$|\w{3}(?:ar|er|ir)(?:la|lo|li|le|ne|si)$"
        r"|^\w{5,}[ai](?:la|lo)$"
    ),
}
"""A verb with its object pronoun joined on: "Presiónala", "Asegúrate", "Mantenerlo",
"Coloque-a", "Mettetelo", "Esercitarsi", "Eliminala"."""

_NOT_JOINED = re.compile(r"[úu](?:la|lo|las|los)$")
"""Spanish nouns with the same look: "Película", "Capítulo", "Válvula"."""

_NEVER = re.compile(r"(?!)")

_FRENCH_NOUNS_IN_ER = word_set(
    """
    premier dernier métier quartier papier dossier clavier fichier calendrier janvier février
    cahier atelier escalier dîner déjeuner souper cancer hiver laser poster rocher boucher
    plaisir loisir avenir désir sourire navire empire livre lettre centre théâtre titre filtre
    """
)
"""Nouns ending like an infinitive that may follow "le" or "la": "Le premier …", "Le fichier …"."""

_AMOUNT = re.compile(r"\d{1,3}(?:[.,]\d+)?$")
"""A number that is an amount, not a year: what follows an infinitive that opens a step."""

_CONJUNCTIONS = word_set("and or et ou y e o ed oder und en of")

_NEGATIONS = {"en": ("never",), "fr": ("ne",), "es": ("no",), "it": ("non",), "pt": ("não",)}

_ENGLISH_NOT_BASE = ("ed", "ing", "ly")
_ENGLISH_NOT_VERBS = frozenset(stopwordsiso.stopwords("en")) - word_set(
    """
    ask call fill find get give go keep let look make move open place put run see show stop take
    tell try turn use need help check add end close cut mark set start test announce buy copy fix
    forward join order specify suggest thank
    """
)
"""Words that open no step: "Until the bridge opened …", "No real engine …"."""
_ENGLISH_ASKED = word_set("you we they i it he she there this that these those your our")
"""Who a "Do" that opens a question asks about: "Do you …", "Do these …"."""
_ROMANCE = frozenset({"fr", "es", "it", "pt"})
_COMMA_OR_AND = re.compile(r",\s+|\s+(?:y|e|et|ed)\s+")
"""Where the next of several steps in a row may begin: "…, abre Pedidos y elige el pedido"."""
_ROMANCE_ADVERB = re.compile(r"^\w{4,}(?:[alrz]mente|ement|amment|emment)$")
"""An adverb: "normalmente", "sinceramente", "doucement" (but "experimente" is a verb)."""
_ROMANCE_SUBORDINATE = re.compile(
    r",|;|:|\b(?:que|qui|si|se|quand|lorsque|jusqu|pour|cuando|hasta|para|porque|como|donde|"
    r"che|quando|finché|perché|dove|come|até|onde|em vez)\b",
    re.IGNORECASE,
)
_DUTCH_CONJUNCTIONS = word_set(
    "waardoor waarbij waarin waarop waarmee doordat hoewel indien zodat omdat terwijl nadat"
)
_DUTCH_PARTICIPLE = re.compile(r"\w*ge\w{3,}(?:d|t|en)$")
_PROCLITICS = {
    "es": word_set("lo le les me te se nos"),
    "it": word_set("ne ci si mi ti vi"),
    "pt": word_set("lhe lhes me te se nos"),
    "fr": word_set("se me te nous vous"),
}
"""Object pronouns that come before a conjugated verb: an imperative takes them after it."""

_ADJACENT = re.compile(r"\s*\S*?([^\W\d_][\w'’.-]*)[ \t]+(\S+)")
"""The first two words with nothing but a space between: "Zeiten, die …" is a noun and its
relative clause."""

_GERMANIC_INFINITIVE = re.compile(r"[a-zäöüß]{2,}(?:en|ern|eln)$")

_GERMANIC_SUBJECTS = word_set("ich du er sie es wir ihr man")
_SUBJECTS_AFTER_THE_VERB = word_set("ich er wir man")
"""A subject after an opening verb makes a statement ("Lockere Läufe laufe ich …"); "sie",
"es" and "ihr" after an imperative are its object ("Lösch sie …", "Bring ihr die Unterlagen
…")."""

_DUTCH_SUBJECTS = word_set("ik jij hij zij ze we wij jullie men")
"""("je" is "your" as well: "Rol je kleding op".)"""

_GERMANIC_SUBORDINATORS = word_set(
    """
    bis wenn damit sodass dass ob bevor nachdem sobald solange während weil da falls wann
    wie obwohl sofern wodurch
    """
)
"""What opens a subordinate clause: the main clause is before or after it."""

_CLAUSE_OPENERS = _GERMANIC_SUBORDINATORS | word_set(
    "der die das welche welcher welches und aber doch denn sondern oder dann ohne um statt anstatt"
)
"""What opens the clause after a main one: a subordinate, a relative or a coordinate clause."""

_GERMAN_NEGATIONS = word_set("nicht niemals nie")

_DUTCH_DETERMINERS = word_set("de het een die deze alle veel sommige beide twee drie vier geen")

_NUMBER = re.compile(r"^\d[\d.,⁰-⁹]*$")
_SMALL_NUMBER = re.compile(r"^\d{1,3}(?:[.,]\d+)?$|^\d+[⁰-⁹]+$")
"""An amount, not a year: "3 minuten", "10⁶ cellen"; after "2020" a verb may come first."""

_ITALIAN_YOU_DO = word_set("sai hai puoi devi vuoi sei")
"""The verbs that make "Scrivi SQL solido e sai leggere …" describe the reader, not instruct."""
_SUBORDINATE_OPENERS = _GERMANIC_SUBORDINATORS | word_set(
    "als wanneer zodat omdat voordat totdat dat of die wat que qui si se cuando quando che "
    "porque perché como come donde dove onde"
)
_DIARY_NOW = word_set("gerade net")
"""Right after its verb, a diary's "just now": "Komm gerade vom Arzt", "Kom net terug"."""
_DIARY_SINCE = word_set("seit sinds inmiddels")
"""A diary leaves out its "I": "Wohne seit März in Köln", "Lig sinds gisteren met griep op
bed". A step does not say since when."""
_DUTCH_NOT_FINITE = word_set("niet direct eerst echt zacht licht")
"""Words in -t after an imperative that are no verb: "Controleer direct …", "Doe eerst …"."""
_DUTCH_PAST = re.compile(r"^\w{2,}(?:de|te|den|ten)$")
"""A Dutch verb in the past: "Jonas vulde …", "Baker legde …"."""
_DUTCH_FINITE = re.compile(r"^\w{2,}(?:t|de|te|den|ten)$")
"""A conjugated Dutch verb: the present in -t ("bekijkt"), the past in -de, -te, -den or -ten
("volgde", "kostte", "voegden"); nouns that end so ("minuten") make the rule pass by."""

_DUTCH_ADVERBS_IN_EN = word_set("meteen samen even open boven binnen buiten beneden tegen")

_GE_INFINITIVES_NL = word_set("gebruiken geloven genieten gebeuren gehoorzamen")

_DUTCH_AFTER_INFINITIVE = word_set(
    "bij in op met tegen van naar uit voor door gedurende zonder tijdens na onder en"
)
"""What may follow a Dutch to-do's infinitive: a phrase of place, means or time ("… draaien
tegen staging"), or the next to-do ("… afzuigen en één keer spoelen")."""

_DUTCH_STRONG_PAST = word_set(
    """
    kwam kwamen ging gingen vond vonden kreeg kregen zag zagen nam namen gaf gaven bleef bleven
    stond stonden lag lagen zat zaten liep liepen vroeg vroegen sprak spraken schreef schreven
    las lazen begon begonnen bracht brachten dacht dachten hield hielden liet lieten viel vielen
    """
)

_GERMAN_AFTER_STEM = word_set(
    """
    in im am an auf aus bei beim mit nach vor vom zu zum zur über unter durch für gegen ohne um
    danach dann zuerst vorher früh spät immer nie nicht
    """
)
"""What follows a German imperative of the familiar form when no object does: "Kontrollier
danach das Manometer", "Leere nach jeder Ladung …", "Geh in dem Fall …"."""

_ARTICLES_DE = word_set(  # after which a word in -en is an adjective, not a verb
    "der die das den dem des ein eine einen einem einer eines kein keine keinen keinem "
    "zum zur vom im am ins beim mein meine meinen dein deine deinen sein seine seinen ihr ihre "
    "ihren unser unsere unseren jede jeden jedem jeder dieser diese diesen diesem"
)

_GERMAN_STRONG_PAST = word_set(
    """
    schrieb fiel kam ging lag stand sah gab nahm fand blieb hielt rief trug wuchs zog sprach
    traf lief fuhr wurde war hatte stieg sank sagte fragte meinte
    """
)

_GERMAN_NOUN_ENDINGS = (
    "en",
    "t",
    "st",
    "ung",
    "heit",
    "keit",
    "schaft",
    "tion",
    "ion",
    "er",
    "el",
    "chen",
    "lein",
    "ie",
    "ik",
    "ität",
    "ismus",
    "in",
    "nis",
    "um",
    "us",
    "a",
    "o",
    "i",
    "y",
    "s",
)
"""How the nouns that may open a German statement end ("Kaffee" aside): a familiar imperative is
a bare stem ("Schreib", "Komm", "Kontrollier") or one in -e ("Leere")."""

_STEP_ADVERBS_DE = word_set("nicht niemals nie immer zuerst erst dann danach bitte vorher")

_COMMA = re.compile(r",\s+")

_CODE_SPAN = re.compile(r"`[^`]*`")
"""A comma between clauses or list items; "2,4 m" is a number."""

_GERMANIC_COORDINATORS = word_set("und aber doch denn sondern oder")
_RELATIVES = word_set("der die das")
_GERMAN_PARTICIPLE = re.compile(
    r"(?:ab|an|auf|aus|bei|ein|mit|nach|vor|weg|zu|zurück|durch|um|los|fest|hin|her|dar|über|"
    r"unter|wieder)?ge[a-zäöüß]{3,}en$"
)
_GE_INFINITIVES = word_set("gehen geben genießen gewinnen gestalten gebrauchen gelten geraten")

_REFLEXIVES = word_set("sich zich")

_GERMAN_NOT_FINITE = word_set(
    """
    nicht jetzt erst meist zuerst zuletzt seit sanft leicht weit bereit fest halt recht samt
    mindestens höchstens etwa spät breit dicht flach glatt hart heiß kalt laut leicht matt
    mittlerst nett platt sacht schlecht schnell straff warm welt zart bunt statt direkt exakt
    perfekt sonst selbst fast trotzdem zunächst sofort dort fort oft kurz gut
    """
)

_CLITIC = re.compile(
    r"(?<=\w{3})(?:-?(?:lo|la|los|las|le|les|li|ne|me|te|se|nos|a|o)|-(?:vous|nous|moi|toi|lui|"
    r"leur|en|y))$"
)
"""An object pronoun joined to an imperative: "añádelo", "aggiungilo", "adicione-a",
"connectez-vous"."""

_CLITIC_LANGUAGES = frozenset({"es", "it", "pt", "fr"})
"""The languages that join it: in English "pickles" would read as "pick" and "les"."""

_FORMAL_PRONOUNS = {"de": "sie", "nl": "u"}
"""The polite imperative puts its pronoun after the verb: "Klicken Sie", "Klikt u"."""

_FRENCH_NOT_VERBS = word_set("chez assez nez rez")

_FRENCH_ELIDED_NEGATION = re.compile(r"\b[nN]['’](?=[^\W\d_])")

_VERB_MARKERS: dict[str, frozenset[str]] = {
    "en": word_set(
        "is are was were be been has have had will would can could should may might must does "
        "did do"
    ),
    "de": word_set(
        "ist sind war waren bin bist seid sei wäre wären hat haben hatte hatten habe hast hätte "
        "wird werden wurde wurden würde würden kann können konnte konnten könnte kannst muss "
        "müssen musste musst soll sollen sollte sollten sollst darf dürfen darfst will wollen "
        "wollte willst mag mögen möchte möchten lässt ließ gibt gab bleibt blieb liegt lag steht "
        "stand geht ging kommt kam"
    ),
    "fr": word_set("est sont était a ont avait sera peut peuvent doit fait font prend va reste"),
    "es": word_set(
        "es son era está están tiene tienen puede pueden ha han será hay hace lleva va queda"
    ),
    "it": word_set("è sono era ha hanno può possono sarà deve fa va resta"),
    "pt": word_set("é são era está estão tem têm pode podem há será deve faz leva vai fica"),
    "nl": word_set(
        "is zijn was waren ben bent heeft hebben had hadden heb hebt kan kun kunt kunnen kon "
        "konden wordt worden werd werden zal zul zult zullen zou zouden moet moeten mag mogen wil "
        "wilt willen blijft ligt staat gaat komt"
    ),
}
"""Verbs that make even a short line a statement ("Sync is free")."""

ANY_VERB_MARKER = frozenset().union(*_VERB_MARKERS.values())


def is_step(sentence: str, lang: str, *, numbered: bool = False) -> bool:
    """Whether ``sentence`` (its label taken off) tells the reader what to do.

    Args:
        sentence: One sentence as a reader sees it.
        lang: Its language.
        numbered: Whether it is an item of a numbered list, where a verb needs no object.
    """
    polite = _POLITE.get(lang)
    if polite is not None and polite.search(sentence):
        return True
    if _opens_with_imperative(sentence, lang):
        return True  # "Prüf, ob …", "Volg vanaf de parkeerplaats …", "Desça pelo ombro …"
    if lang == "de" and (_ends_in_infinitive(sentence) or _german_stem_step(sentence)):
        return True
    if lang == "nl" and _dutch_imperative_then(sentence):
        return True  # "Wil je slapen, boek daar dan geen kamer."
    if lang == "nl" and _then_clause(sentence, lang):
        return False  # "Staat je vraag er niet bij, dan reageert …": a condition
    if lang == "nl" and _dutch_infinitive_step(sentence):
        return True
    if lang in _ROMANCE and _steps_in_a_row(sentence, lang):
        return True  # "Inicia sesión en loamgarden.com, abre Pedidos y elige el pedido"
    return any(
        _clause_is_step(clause, sentence, lang, numbered=numbered, after_opening=n > 0)
        for n, clause in enumerate(_clauses(sentence, lang))
    )


def _opens_with_imperative(sentence: str, lang: str) -> bool:
    """Whether the sentence opens with what the lexicon knows as an imperative
    (:func:`~aclarai.agents.offline.verb_forms.is_imperative`) in a statement's place: not
    asking ("Heb je …?"), not before its subject ("Wil je …, dan"), not a name or a noun before
    its verb ("Bas heeft …", "Jonas vulde …", "Stop 4 van de wandeling …", "Tenda e sacos-cama
    …"), not a concession ("Diga lo que diga, …") and not a diary's line with its "I" left out
    ("Arbeite seit 2019 als …", "Woon sinds 2018 in Utrecht")."""
    text = sentence.strip()
    words = WORD_PATTERN.findall(text)
    if len(words) < 2 or text.endswith("?") or text.startswith("¿"):
        return False
    first, second = words[0], words[1]
    if not (first[0].isupper() and first.isalpha() and is_imperative(first.lower(), lang)):
        return False
    lower = [w.lower() for w in words]
    if (
        lower[1] in _VERB_MARKERS.get(lang, ())
        or lower[1] in _CONJUNCTIONS
        or second[0].isdigit()
        or (second[0].isupper() and lang != "de")  # German writes its nouns so
        or lower[0] in lower[2:]
        or lower[1] in _DIARY_NOW
        or any(w in _DIARY_SINCE for w in lower[1:])
        # "Acht jaar … was toen …"; the imperative itself is never a marker, and so it stays
        # first, where German counts a capital as a verb ("Prüf Stand und Pegel" names nouns)
        or has_verb_marker(" ".join(_main_clause(text)), lang)
        or (lang in _ROMANCE and text[len(first) : len(first) + 1] == ",")  # "Vea, la perra …"
    ):
        return False
    if lang == "de":
        head = WORD_PATTERN.findall(_COMMA.split(text)[0])
        return not (
            (first.endswith("e") and second[0].isupper())
            or any(w.lower() in _SUBJECTS_AFTER_THE_VERB for w in head[1:])
        )
    if lang == "nl":
        return not (
            lower[1] in _DUTCH_SUBJECTS
            or lower[1] in ("je", "u")
            or _DUTCH_PAST.match(lower[1]) is not None
            or _DUTCH_PARTICIPLE.match(lower[1]) is not None  # "Crash opgelost bij …"
            # "Bas werkt …", "Fiets staat …": a subject and its verb
            or (lower[1].endswith("t") and len(lower[1]) > 3 and lower[1] not in _DUTCH_NOT_FINITE)
            # "Praat langzaam en verheft nooit haar stem": its verbs agree with a subject
            or any(
                w == "en" and nxt.endswith("t") and is_imperative(nxt[:-1], lang)
                for w, nxt in pairwise(lower)
            )
        )
    if lang == "it":
        # "Scrivi SQL solido e sai leggere …" (a job's ad): its verbs say what the reader does
        return not any(w == "e" and nxt in _ITALIAN_YOU_DO for w, nxt in pairwise(lower))
    return True


def _main_clause(text: str) -> list[str]:
    """The words of a sentence up to its first comma or subordinate clause, whose verbs are its
    own: "Zet de oven aan als die nog koud is"."""
    words = WORD_PATTERN.findall(_COMMA.split(text)[0])
    for i, word in enumerate(words):
        if i > 0 and word.lower() in _SUBORDINATE_OPENERS:
            return words[:i]
    return words


def _steps_in_a_row(sentence: str, lang: str) -> bool:
    """Steps in a row: a sentence that opens with what may be an imperative, and a later part
    (after a comma or an "and") that opens with a help page's verb. "El job se ejecuta … y
    guarda 14 snapshots" opens with no verb: its "guarda" states."""
    first = _first_word(sentence)
    endings = _IMPERATIVE_ENDINGS.get(lang, ("ez",))
    if (
        not first.isalpha()
        or first in function_words(lang)
        or first in _NOT_STEP_VERBS
        or not (first.endswith(endings) or _is_infinitive(first, lang))
    ):
        return False
    verbs = _IMPERATIVES.get(lang, frozenset())
    return any(_first_word(part) in verbs for part in _COMMA_OR_AND.split(sentence)[1:])


def _clause_is_step(
    clause: str, sentence: str, lang: str, *, numbered: bool, after_opening: bool
) -> bool:
    if lang == "fr":
        clause = _FRENCH_ELIDED_NEGATION.sub("ne ", clause)  # "N'essayez pas …"
    words = [w.lower() for w in WORD_PATTERN.findall(clause)[:4]]
    if after_opening and lang in ("de", "nl") and words and words[0].endswith("t"):
        return False  # after "Als je …," the verb comes first in a statement: "houdt de plug-in"
    if lang == "en" and words[:1] == ["do"] and words[1:2] != ["not"]:
        written = WORD_PATTERN.findall(clause)
        # "Do four sets of …"; "Do you …?" asks, and "Do Kwon founded …" names
        return len(words) > 1 and words[1] not in _ENGLISH_ASKED and not written[1][0].isupper()
    negated = bool(words) and _skipped(words[0], lang) and words[0] not in _LEADING_ADVERBS
    while words and _skipped(words[0], lang):
        words.pop(0)
    if not words or words[0] in _NOT_STEP_VERBS:
        return False
    first, second = words[0], (words[1] if len(words) > 1 else "")
    if lang == "en" and _english_verb_first(clause, after_opening=after_opening):
        return True  # "Validate paper tickets …", "Escalate to the secondary …"
    bare = _CLITIC.sub("", first) if lang in _CLITIC_LANGUAGES else first
    if first in _IMPERATIVES.get(lang, ()) or bare in _IMPERATIVES.get(lang, ()):
        return True
    formal = _FORMAL_PRONOUNS.get(lang)
    if (
        formal is not None
        and second == formal
        and first.endswith(("en", "rn", "ln", "t"))
        and first not in function_words(lang)
        and first not in ANY_VERB_MARKER
        and not _then_clause(sentence, lang)
    ):
        return True  # "Klicken Sie auf …", "Klikt u op …"
    if (
        lang == "fr"
        and bare.endswith("ez")
        and bare not in _FRENCH_NOT_VERBS
        and first != "rendez-vous"  # the noun
    ):
        return True
    if negated and _negative_step(first, lang):
        return True  # "No rellenes las esquinas", "Não tire mais de 20 %": the subjunctive
    if lang == "fr" and _pronoun_infinitive(first, second) and not has_verb_marker(clause, lang):
        return True  # "Le garder humide", "La décongeler une nuit", "L'étaler au rouleau"
    return _verb_with_object(clause, lang, numbered=numbered)


def _english_verb_first(clause: str, *, after_opening: bool) -> bool:
    """Whether an English clause opens with a word that can only be a verb's bare form, where
    a statement has its subject. Names and brands are such words too ("Sue", "Zoom", "Excel"):
    one written with a capital after an opening phrase ("In 2019, Sue opened …"), or followed
    by a capital ("Kindle Unlimited costs …"), a verb of being or an inflected verb ("Sue moved
    …", "Deploy took …", "Render times dropped …") is a subject."""
    written = WORD_PATTERN.findall(clause)
    at = 0
    while at < len(written) and _skipped(written[at].lower(), "en"):
        at += 1
    if at >= len(written) or not is_only_a_verb(written[at].lower()):
        return False
    if after_opening and at == 0 and written[at][0].isupper():
        return False
    following = written[at + 1] if at + 1 < len(written) else ""
    return not (
        following[:1].isupper()
        or following.lower() in _VERB_MARKERS["en"]
        or is_inflected_verb(following.lower())
    )


def _pronoun_infinitive(first: str, second: str) -> bool:
    """A French object pronoun before an infinitive opens a step: "Le garder …", "L'étaler …"
    (a noun after "le" does not end like an infinitive, "Le premier" and "La mer" aside)."""
    if first.startswith(("l'", "l’")):
        verb = first[2:]
    elif first in ("le", "la", "les", "lui", "leur"):
        verb = second
    else:
        return False
    return len(verb) > 5 and _is_infinitive(verb, "fr") and verb not in _FRENCH_NOUNS_IN_ER


def _verb_with_object(clause: str, lang: str, *, numbered: bool = False) -> bool:
    """Whether a clause opens with a verb: an article, a possessive or an object pronoun
    right after its first word, or a Romance infinitive. Adverbs and a negation before it
    are passed over ("Primeiro, corte toda …", "No quitar más del 20 %")."""
    objects = _OBJECT_WORDS.get(lang)
    words = list(WORD_PATTERN.finditer(clause))
    skip = 0
    while skip < len(words) and _skipped(words[skip].group().lower(), lang):
        skip += 1
    negated = any(w.group().lower() in _NEGATIONS.get(lang, ()) for w in words[:skip])
    match = _ADJACENT.match(clause, words[skip].start()) if skip < len(words) else None
    if objects is None or match is None:
        return False
    first, second = match.group(1).lower(), match.group(2).lower().rstrip(",.;:!?")
    if first in _NOT_STEP_VERBS or first in _OPENERS.get(lang, ()) or not _may_be_verb(first, lang):
        return False
    markers = _VERB_MARKERS.get(lang, frozenset())
    if second in _PROCLITICS.get(lang, ()) or (
        second.startswith(_ELIDED) and second.split("'")[-1].split("’")[-1] in markers
    ):
        return False  # "Lena lo montó …", "Lena l'ha costruito …": an object before its verb
    reflexive = lang == "fr" and first.startswith(("s'", "s’"))
    verb = first[2:] if reflexive else first
    infinitive = _is_infinitive(verb, lang) and not (
        lang == "fr"
        and verb.endswith("ier")
        and second not in objects
        and second not in ("si", "que")
    )
    if infinitive and _infinitive_is_subject(clause, lang):
        return False  # "Purger un radiateur fait baisser …", "Pasar el rodillo no alarga …"
    if reflexive or (lang == "fr" and first == "se"):
        return infinitive or _is_infinitive(second, lang)  # "S'assurer que …", "Se connecter"
    if infinitive and (negated or _loose_infinitive(verb, match.group(2), lang)):
        return True  # "Leer la Vida de …", "Trasplantar fuera solo …", "Non dimenticare di …"
    if infinitive and len(verb) > 4 and _AMOUNT.match(match.group(2)):
        return True  # "Ajouter 8 mL de milieu", "Incubar 10 minutos" (a year: "Gigerenzer 1996")
    if _JOINED_OBJECT.get(lang, _NEVER).search(first) and not _NOT_JOINED.search(first):
        return True  # "Presiónala dentro de las juntas", "Mantenerlo húmedo", "Eliminala entro …"
    plural_step = lang == "it" and first.endswith(("ate", "ete", "ite"))
    if not first.isalpha() or (
        first in function_words(lang)
        and not (infinitive or plural_step)
        and first not in (_IMPERATIVES.get(lang, ()))
    ):
        return False
    if lang == "en":
        if words[0].group().lower() in ("do", "don't", "don’t") and (
            skip > 1 or words[0].group().lower() != "do"
        ):
            return True  # "Do not vortex after this point", "Don't skip the rest"
        if first.endswith(_ENGLISH_NOT_BASE) or (first.endswith("s") and not first.endswith("ss")):
            return False
        if second in _PARTICLES:
            rest = WORD_PATTERN.findall(clause[match.end(2) :])
            second = rest[0].lower() if rest else ""
    elif lang == "fr" and not infinitive:
        return False  # its imperatives end in -ez, or are help verbs; "Correction des …" is a title
    elif lang in ("de", "nl"):
        subjects = _GERMANIC_SUBJECTS if lang == "de" else _DUTCH_SUBJECTS
        if second in subjects or (lang == "de" and first.endswith(("t", "en", "st"))):
            return False  # "Bleibt ein Heizkörper …", "Loopt hij vast, …": a conditional
        if lang == "de" and second in _GERMAN_NEGATIONS:
            return True  # "Versuch nicht, sie …", "Vergiss nie, …": a stem before "nicht"
        head = _DUTCH_SUBORDINATE.split(clause, maxsplit=1)[0]
        if (
            lang == "nl"
            and second in _DUTCH_STEP_FOLLOWERS
            and not has_verb_marker(head, lang)
            and (not first.endswith("s") or first in _IMPERATIVES["nl"])
        ):
            return True  # "Snoei eerst al het dode hout weg", "Tank bij zodra de tank half leeg is"
    elif (
        lang in _IMPERATIVE_ENDINGS
        and not infinitive
        and (
            not first.endswith(_IMPERATIVE_ENDINGS[lang])
            or (first.endswith(_PARTICIPLES) and not _participle_is_verb(clause, second, objects))
        )
    ):
        return False
    if second in objects or second.startswith(_ELIDED) or second.startswith("`"):
        return True
    if _is_infinitive(second, lang):
        return True  # "Deja secar la pared", "Fate cuocere la cipolla"
    if plural_step:
        return True  # "Cuocete per 20 minuti": the plural imperative says so by itself
    if lang in _IMPERATIVE_ENDINGS and not infinitive and _AMOUNT.match(second):
        return True  # "Hornea 20 minutos", "Aggiungi 200 g" ("Cuesta 20 euros" is no step)
    if numbered and second in _STEP_FOLLOWERS and not has_verb_marker(clause, lang):
        return True  # "1. Bake for 20 minutes", "2. Sazona con sal"
    return infinitive and second in _AFTER_INFINITIVE


def _participle_is_verb(clause: str, second: str, objects: frozenset[str]) -> bool:
    """ "Valida los billetes …", "Cuida las plantas": a verb ending like a participle, before
    its object with no comma soon after; "Terminada la reunión, …" opens with a participle."""
    head = clause.split(",", 1)[0]
    return second in objects and word_count(head) > _OPENING_WORDS + 1


def _negative_step(verb: str, lang: str) -> bool:
    """A negative step takes the subjunctive: "No rellenes …" (es), "Não tire …" (pt)."""
    if lang == "es":
        return (
            verb.endswith(("es", "as"))
            and verb not in _SPANISH_INDICATIVE
            and verb not in ANY_VERB_MARKER
        )
    if lang == "pt":
        return (
            verb.endswith(("e", "a"))
            and verb not in _NOT_STEP_VERBS
            and verb not in ANY_VERB_MARKER
            and verb not in _PORTUGUESE_INDICATIVE
        )
    return False


def _loose_infinitive(verb: str, second: str, lang: str) -> bool:
    """Whether an infinitive opens a step with no object after it ("Trasplantar fuera solo …"):
    a name or a number ends like one ("Murre et Dros", "Quatre participants", "Gigerenzer
    1996"), so a word in lower case must follow, and no conjunction or verb of being."""
    return (
        len(verb) > 4
        and not (lang == "fr" and verb.endswith("re"))
        and second.isalpha()
        and second.islower()
        and second not in _CONJUNCTIONS
        and second not in _VERB_MARKERS.get(lang, ())
    )  # ``second`` as written: "Edsger Dijkstra" is a name


def _infinitive_is_subject(clause: str, lang: str) -> bool:
    """An infinitive that a verb of its own clause follows, before any comma or subordinate
    clause, is its subject: "Peindre le pont est devenu …", "Restaurar la configuración no
    elimina …" (but "Comprobar que la batería está cargada" is a step)."""
    head = _ROMANCE_SUBORDINATE.split(clause, maxsplit=1)[0]
    rest = [w.lower() for w in WORD_PATTERN.findall(head)[1:]]
    markers = _VERB_MARKERS.get(lang, frozenset())
    negations = _NEGATIONS.get(lang, ())
    return any(w in markers or w in negations for w in rest)


_DUTCH_IMPERATIVE_THEN = re.compile(
    r"^(?!(?:omdat|hoewel|toen|na|nadat|in|sinds|terwijl|doordat|voordat|zodat|ook)\b)[^,]+, "
    r"(?!(?:dan|en|maar|of|want|die|dat|wat|waar|als|zodat)\b)(?P<verb>[a-zà-ÿ]+) "
    r"(?P<between>(?:[^\s,]+ ){0,3}?)dan\b",
    re.I,
)

_DUTCH_NOT_AFTER_THE_VERB = word_set(
    """
    ik jij je hij zij ze we wij jullie u het er men de een mijn onze ons elke ieder iedere
    deze dit zijn haar hun jouw uw meer minder zoveel evenveel anders
    """
)
"""What follows the verb of a statement before its "dan": a subject ("…, blijven we dan thuis",
"…, piept elke sensor dan drie keer") or a comparison ("…, kwamen veel minder mensen dan
verwacht")."""


def _dutch_imperative_then(sentence: str) -> bool:
    """A condition, then what to do about it, "dan" after the verb and no subject before it:
    "Ben je ziek, meld dat dan …", "Komt E04 terug, neem dan contact met ons op". A name after
    the verb is its subject ("…, was Lisa dan al vertrokken"), and a word in -er before "dan"
    compares ("…, heeft Philips meer personeel dan ASML")."""
    match = _DUTCH_IMPERATIVE_THEN.search(sentence)
    if match is None or match.group("verb").endswith("er"):
        return False
    between = match.group("between").split()
    return not any(
        w.lower() in _DUTCH_NOT_AFTER_THE_VERB or w[:1].isupper() or w.lower().endswith("er")
        for w in between
    )


def _then_clause(sentence: str, lang: str) -> bool:
    """A condition put first, its verb first, and its consequence after a comma: "Nehmen Sie
    grüne Linsen, braucht die Suppe 40 Minuten", "Knippert het lampje, dan valt …"."""
    _, comma, rest = sentence.partition(", ")
    following = WORD_PATTERN.findall(rest)[:1]
    if not comma or not following:
        return False
    word = following[0]
    return word.lower() == "dan" if lang == "nl" else _looks_finite(word)


def _may_be_verb(word: str, lang: str) -> bool:
    """Not a word no verb is: English's function words (save the verbs among them), a Romance
    adverb ("normalmente"), a Dutch conjunction ("waardoor") or participle ("bijeengehouden")."""
    if lang == "en":
        return word not in _ENGLISH_NOT_VERBS
    if lang in _ROMANCE:
        return _ROMANCE_ADVERB.search(word) is None
    if lang == "nl":
        return word not in _DUTCH_CONJUNCTIONS and _DUTCH_PARTICIPLE.match(word) is None
    return True


def _is_infinitive(word: str, lang: str) -> bool:
    """A Romance infinitive by its ending: "vérifier", "leer", "fare"."""
    endings = _INFINITIVE.get(lang)
    return endings is not None and len(word) >= 3 and word.isalpha() and word.endswith(endings)


def _skipped(word: str, lang: str) -> bool:
    return (
        word in _LEADING_ADVERBS
        or word in _NEGATIONS.get(lang, ())
        or word in ("do", "not", "don't")
        or (lang == "fr" and word.startswith(("n'", "n’")))
        or (lang == "fr" and word in ("en", "pas", "jamais", "plus"))
        or (lang in ("es", "it", "pt") and word in ("nunca", "mai", "jamais"))
    )


def _ends_in_infinitive(sentence: str) -> bool:
    """A German step puts its verb last, unconjugated, after no subject: "Das Öl in einem
    Topf erwärmen", "Sobald die Blüten erscheinen, zweimal pro Woche gießen", "Warten, bis …".
    (Dutch writes its nouns in lower case, and "je kluizen" ends the same way.)"""
    chunks = _COMMA.split(sentence)
    start = 0
    while start < len(chunks) - 1 and _first_word(chunks[start]) in _GERMANIC_SUBORDINATORS:
        start += 1  # "Sobald die Blüten erscheinen, …": the main clause follows
    end = start + 1
    while end < len(chunks) and _first_word(chunks[end]) not in _CLAUSE_OPENERS:
        end += 1  # "Niemals gekochte Essensreste, Fleisch oder Milch hineingeben, weil …"
    main = ", ".join(chunks[start:end])
    rest = ", ".join(chunks[end:])
    words = WORD_PATTERN.findall(_CODE_SPAN.sub(" ", main))
    if (
        not words
        or any(w.lower() in _GERMANIC_SUBJECTS or w.lower() in _REFLEXIVES for w in words)
        or has_verb_marker(main, "de")
        or any(_looks_finite(w) for w in words[1:-1])
        or _GERMANIC_INFINITIVE.match(words[-1] if len(words) > 1 else words[0].lower()) is None
    ):
        return False
    following = _first_word(rest)
    if following in _GERMANIC_COORDINATORS or (
        following not in _CLAUSE_OPENERS and has_verb_marker(rest, "de")
    ):
        return False  # "Diese Fugen arbeiten, und …", "Viele meinten, beide würden …"
    if following in _RELATIVES and _verb_second(rest):
        return False  # "…, das Symbol W ist aber überall dasselbe": a new main clause
    if _GERMAN_PARTICIPLE.match(words[-1]) and words[-1].lower() not in _GE_INFINITIVES:
        return False  # "16 km gelaufen", "Intervalle ausgelassen": a log, not a step
    if len(words) == 1:
        return following in _GERMANIC_SUBORDINATORS  # "Prüfen, ob …", "Warten, bis …"
    if following in ("dass", "ob"):
        return False  # "Die Autoren vermuten, dass …": who says what
    return len(words) >= 3 or words[0].lower() in _STEP_ADVERBS_DE


def _dutch_infinitive_step(sentence: str) -> bool:
    """A Dutch to-do puts its infinitive last, after no subject and no conjugated verb: "De
    fles onder de microscoop bekijken en de confluentie noteren", "QA vragen om … te keuren".
    Dutch writes its nouns in lower case, so a plural noun ends the same way; a verb in -t
    ("bekijkt"), in the past ("volgde", "kwamen") or a plural subject before its verb ("De
    treinen rijden …") make a statement, and such a sentence is passed by."""
    text = _CODE_SPAN.sub(" ", sentence)
    written = WORD_PATTERN.findall(text)
    words = [w.lower() for w in written]
    if len(words) < 3 or _DUTCH_SUBORDINATE.search(text.lower()):
        return False  # a subordinate clause has a verb of its own, which this cannot tell
    stop = function_words("nl")
    verb = len(words) - 1
    if words[verb - 1] == "te":
        # "QA vragen om de ronde goed te keuren": the infinitive before "om" is the to-do's
        verb = words.index("om") - 1 if "om" in words[1:verb] else -1
    else:
        # "De suite draaien tegen staging", "30 seconden denatureren bij 98 °C": a phrase of
        # place, means or time may follow the infinitive
        while verb > 1 and not _is_dutch_infinitive(words[verb], stop):
            verb -= 1
        if verb + 1 < len(words) and words[verb + 1] not in _DUTCH_AFTER_INFINITIVE:
            return False
    if verb < 1 or not written[verb].islower() or not _is_dutch_infinitive(words[verb], stop):
        return False  # "… in Londen": a name
    others = words[:verb] + words[verb + 1 :]
    counted = {
        i + 1 for i, w in enumerate(others) if _SMALL_NUMBER.match(w) or w in _DUTCH_DETERMINERS
    }
    return not (
        any(w in _DUTCH_SUBJECTS or w in _VERB_MARKERS["nl"] or w == "er" for w in words)
        or any(w.endswith(("aan", "oen", "ien", "ijn")) and w not in stop for w in others)
        or (verb > 1 and words[verb - 1].endswith("s") and not _NUMBER.match(words[verb - 2]))
        or (verb > 1 and words[0].endswith(("s", "en")) and words[0] not in stop)
        or any(_DUTCH_PARTICIPLE.match(w) and w not in _GE_INFINITIVES_NL for w in others)
        or any(
            # "Albrecht en Andreas bergen met een duikklok …": a plural verb before the last word
            _is_dutch_infinitive(w, stop)
            and i not in counted
            and (i + 1 >= len(others) or others[i + 1] != "en")
            for i, w in enumerate(others[:verb])
            if i > 0
        )
        or any(
            _DUTCH_FINITE.search(w) and w not in stop and i not in counted  # "3 minuten"
            for i, w in enumerate(others)
            if i > 0
        )
        or any(w in _DUTCH_STRONG_PAST for w in others)
        or (others[0] not in _DUTCH_DETERMINERS and _is_dutch_infinitive(others[0], stop))
        or (
            words[0] in _DUTCH_DETERMINERS
            and words[1].endswith(("en", "s"))
            and _is_dutch_infinitive(words[2], stop)
        )
    )


def _is_dutch_infinitive(word: str, stop: frozenset[str]) -> bool:
    """An infinitive by its ending, not a participle ("gegeven"), an adverb ("meteen") or a
    function word."""
    if word in _DUTCH_ADVERBS_IN_EN:
        return False
    participle = word.startswith("ge") and len(word) >= 7 and word not in _GE_INFINITIVES_NL
    return (
        len(word) >= 5 and word.endswith("en") and word.isalpha() and word not in stop
    ) and not participle


def _german_stem_step(sentence: str) -> bool:
    """A German statement has its verb second, so one opened by a bare verb stem before a
    preposition or an adverb, with no verb or subject after it, is a step: "Schreib am Ende
    deiner Woche eine Übergabenotiz", "Komm früh am Morgen, bevor …"."""
    words = WORD_PATTERN.findall(_COMMA.split(sentence)[0])
    if len(words) < 3 or not words[0].isalpha():
        return False
    first, second = words[0].lower(), words[1].lower()
    return (
        first not in function_words("de")
        and first not in _NOT_STEP_VERBS
        and first != "bitte"  # "bitte um Rückruf": a request quoted
        and not first.endswith(_GERMAN_NOUN_ENDINGS)
        and second in _GERMAN_AFTER_STEM
        and not any(
            w.lower() in _VERB_MARKERS["de"] or w.lower() in _GERMANIC_SUBJECTS or _looks_finite(w)
            for w in words[1:]
        )
        # "Exporte mit mehr als 10.000 Zeilen laufen …": a plural subject and its verb; "Bach
        # in Leipzig komponierte …", "Goethe in Weimar schrieb …": a verb in the past
        and not any(
            w.islower()
            and len(w) > 3
            and (w.endswith(("en", "te")) or w in _GERMAN_STRONG_PAST)
            and w not in function_words("de")
            and not _declined(words, i)
            for i, w in enumerate(words[1:], start=1)
        )
        and not (len(words) > 2 and words[2][:1].isdigit())  # "Abflug um 7:40 Uhr"
    )


_DECLINED_RUN = 3
"""How many adjectives in -en may stand between an article and the word asked about."""


def _declined(words: list[str], i: int) -> bool:
    """Whether the German word at ``i`` is an adjective declined after its article, not a verb:
    "auf der anderen Seite", "den gelben Markierungen", "einen kurzen Eintrag"."""
    j = i - 1
    while (
        j > max(0, i - _DECLINED_RUN)
        and words[j].lower() not in _ARTICLES_DE
        and words[j].islower()
        and words[j].endswith("en")
    ):
        j -= 1  # "den diensthabenden Tourenleiter", "mit den gelben alten Markierungen"
    return words[j].lower() in _ARTICLES_DE


def _verb_second(clause: str) -> bool:
    """A marker verb in second place or later but not last: a main clause, not a relative."""
    words = [w.lower() for w in WORD_PATTERN.findall(_COMMA.split(clause)[0])]
    return any(w in _VERB_MARKERS["de"] for w in words[1:-1])


def _first_word(text: str) -> str:
    match = WORD_PATTERN.search(text)
    return match.group().lower() if match else ""


def _looks_finite(word: str) -> bool:
    """A German present-tense verb: lower case, in -t or -st ("aktualisiert", "lässt"), not a
    participle ("abgedeckt") or one of the words that end so."""
    return (
        word.islower()
        and len(word) > 3
        and word.endswith("t")
        and "ge" not in word[:5]
        and word not in _GERMAN_NOT_FINITE
        and word not in function_words("de")
    )


def _clauses(sentence: str, lang: str) -> list[str]:
    """The sentence, and what follows each comma when an opening phrase comes first: "To open
    it, click Settings", "Mesmo assim, comece a renovação" hold a step. An opening phrase is one
    that starts with an opening word, or, outside German and Dutch, a short one ended by a comma
    in a Romance language, a short one ended by a comma that opens with a function word
    ("Mesmo assim,", "Per prima cosa,"; not "Disraeli, alors chancelier, …"). In German and
    Dutch the verb comes first after such a phrase in a statement too: "Während die Luft
    entweicht, hören Sie ein Zischen"."""
    first = WORD_PATTERN.match(sentence.lstrip())
    comma = sentence.find(",")
    if first is not None and first.group().lower() in _OPENERS.get(lang, ()):
        starts = [m.end() for m in _CLAUSE.finditer(sentence)]
        return [sentence[s:] for s in starts if s < len(sentence)]
    if (
        lang in _ROMANCE
        and comma > 0
        and word_count(sentence[:comma]) <= _OPENING_WORDS
        and first is not None
        and (
            first.group().lower() in function_words(lang)
            or first.group().lower().startswith(_ELIDED)
        )
    ):
        return [sentence, sentence[comma + 1 :].lstrip()]  # "Nesse caso, volte um dia"
    return [sentence]


def has_verb_marker(sentence: str, lang: str) -> bool:
    markers = _VERB_MARKERS.get(lang)
    if markers is None:
        return True  # no table: a short line gets the benefit of the doubt
    if lang == "de":
        # German writes its nouns with a capital: "Stand", "Lag" inside a sentence name things;
        # after a label's colon a verb opens its part ("Status Küche: Ist bestellt")
        return any(
            w.lower() in markers and (i == 0 or w.islower())
            for part in sentence.split(":")
            for i, w in enumerate(WORD_PATTERN.findall(part))
        )
    return any(w.lower() in markers for w in WORD_PATTERN.findall(sentence))
