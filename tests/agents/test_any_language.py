"""What a reader of any note, in any language, is graded on (issue 35): the examples of the
issue, copied as they were reported."""

from __future__ import annotations

import pytest

from aclarai.agents.base import EvalItem, ExtractionInput, Utterance
from aclarai.agents.offline import OfflineClaimExtractor, OfflineEvaluator
from aclarai.agents.offline.decontext import decontextualization
from aclarai.agents.offline.extractor import extract_claim_texts
from aclarai.agents.offline.language import language_of
from aclarai.parsers import reader_text


def claims_of(block: str, *, conversation: bool = False) -> list[str]:
    item = ExtractionInput(Utterance("blk-1", block), conversation=conversation)
    return [c.text for c in OfflineClaimExtractor().extract(item)]


def test_inline_code_reads_as_its_literal_content_in_claim_and_source() -> None:
    block = (
        "You can embed base files in [[Embed files|any other file]] using the `![[File.base]]` "
        "syntax."
    )
    [claim] = claims_of(block)
    assert reader_text(claim) == (
        "You can embed base files in any other file using the ![[File.base]] syntax."
    )
    [score] = OfflineEvaluator().evaluate_batch([EvalItem(claim, block)])
    assert score.coverage_score == 1.0
    assert "File.base" not in score.omitted


@pytest.mark.parametrize(
    ("block", "literal"),
    [
        ("Inkwell hides a `<!-- HTML Comment -->` in reading view.", "<!-- HTML Comment -->"),
        ("Inkwell reads `[[A|B]]` as a link to A shown as B.", "[[A|B]]"),
        ("The `map` option draws a map of the embedded base.", "map"),
    ],
)
def test_code_spans_of_comments_and_links_stay_in_the_claim(block: str, literal: str) -> None:
    [claim] = claims_of(block)
    assert literal in reader_text(claim)
    [score] = OfflineEvaluator().evaluate_batch([EvalItem(claim, block)])
    assert score.coverage_score == 1.0


def test_generic_you_needs_no_context_but_it_and_we_do() -> None:
    said = "When you reach your storage limit, the Sync plugin will cease syncing files."
    assert decontextualization(said).score == 1.0
    assert decontextualization("It stops syncing files.").score < 0.5
    assert decontextualization("We moved the launch to May 3.").score < 1.0


@pytest.mark.parametrize(
    "line",
    [
        "Click Restore default settings",
        "Ouvrez les Paramètres.",
        "「启用 Importer 插件。」",
        "「設定を開きます。」",
        "Edit In GitHub | Copy this note | Download this vault.",
        "UI Font sizes",
        "Muted text color",
        "插件有三种模式：",
        "Official website: https://example.org/",
        "Documentation: https://help.figma.com/hc/en-us",
        "Klicken Sie auf Standardeinstellungen wiederherstellen.",
        "Fai clic su Ripristina impostazioni predefinite.",
        "Klik op Standaardinstellingen herstellen.",
        "Clique em Restaurar configurações padrão.",
        "Attendees: Ana Lopes, Ben Carter, Priya Shah",
        "「Ctrl+P」と入力します。",
        "To open settings, click the gear icon.",
        "Under Themes, click Manage.",
    ],
)
def test_what_is_not_a_claim_gives_none(line: str) -> None:
    assert claims_of(line) == []


@pytest.mark.parametrize(
    ("line", "claim"),
    [
        ("Note: Sync keeps 12 months of history.", "Sync keeps 12 months of history."),
        ("PS: The office closes at 18:00.", "The office closes at 18:00."),
        ("**Layout**: The sidebar holds the panels.", "The sidebar holds the panels."),
        (
            "- **Encryption algorithm:** AES-256 using [Galois/Counter Mode (GCM)](https://x.org)",
            "Encryption algorithm: AES-256 using Galois/Counter Mode (GCM).",
        ),
    ],
)
def test_a_label_is_not_content_the_claim_is_what_follows(line: str, claim: str) -> None:
    assert claims_of(line) == [claim]


@pytest.mark.parametrize(
    "said",
    [
        "The code is MIT-licensed and depends only on httpx, click and jinja2.",
        "For example, foods can have high flavor per dollar, like hot sauce, pickles, or curry.",
        "Somebody successful said: 99% of success is just showing up.",
    ],
)
def test_a_statement_is_not_taken_for_a_step_or_a_label(said: str) -> None:
    assert claims_of(said) == [said]


def test_speakers_exist_only_in_conversation_notes() -> None:
    line = "Documentation: https://help.figma.com/hc/en-us"
    assert claims_of(line) == []
    said = "alice: I rolled back to v2.3 and it is stable now."
    assert claims_of(said, conversation=True) == ["alice rolled back to v2.3 and it is stable now."]


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("Wenn Sie Ihr Speicherlimit erreichen, synchronisiert Sync keine Dateien mehr.", "de"),
        ("Lorsque vous atteignez votre limite, Sync cesse de synchroniser vos fichiers.", "fr"),
        ("Cuando alcanzas tu límite de almacenamiento, Sync deja de sincronizar archivos.", "es"),
        ("Quando raggiungi il limite di spazio, Sync smette di sincronizzare i file.", "it"),
        ("Quando você atinge o limite de armazenamento, o Sync para de sincronizar.", "pt"),
        ("Als je je opslaglimiet bereikt, stopt Sync met het synchroniseren van bestanden.", "nl"),
        ("当您达到存储上限时，Sync 将停止同步文件。", "zh"),
        ("ストレージの上限に達すると、Sync はファイルの同期を停止します。", "ja"),
    ],
)
def test_a_statement_gives_a_claim_in_every_language(text: str, lang: str) -> None:
    assert language_of(text) == lang
    assert claims_of(text) == [text]
    [score] = OfflineEvaluator().evaluate_batch([EvalItem(text, text)])
    assert score.coverage_score == 1.0
    assert score.decontextualization_score == 1.0


def test_an_icon_leaves_no_empty_brackets() -> None:
    assert reader_text("点击（![[icon.svg]]）打开设置。") == "点击打开设置。"


@pytest.mark.parametrize(
    ("claim", "source", "opening"),
    [
        ("Sync runs every day.", "Sync runs every day at 9:00 in Berlin.", "coverage 0.00: "),
        ("It stops syncing files.", "Sync has a limit. It stops syncing files.", ""),
    ],
)
def test_a_low_grade_is_explained_by_its_weakest_score(
    claim: str, source: str, opening: str
) -> None:
    [score] = OfflineEvaluator().evaluate_batch([EvalItem(claim, source)])
    scores = {
        "entailment": score.entailed_score,
        "coverage": score.coverage_score,
        "decontextualization": score.decontextualization_score,
    }
    weakest = min(scores, key=lambda name: scores[name] or 0.0)
    assert score.justification is not None
    assert score.justification.startswith(f"{weakest} {scores[weakest]:.2f}: ")
    assert score.justification.startswith(opening)


def test_the_reason_names_the_word_outside_the_claim() -> None:
    [score] = OfflineEvaluator().evaluate_batch(
        [EvalItem("It stops syncing files.", "Sync has a limit. It stops syncing files.")]
    )
    assert score.justification is not None
    assert score.justification.startswith(
        "decontextualization 0.40: 'It' refers to something outside the claim"
    )


def test_claim_texts_of_a_plain_note_take_no_speaker() -> None:
    assert extract_claim_texts(
        "Tom disagreed: the import errors come from big files.", conversation=False
    ) == ["Tom disagreed: the import errors come from big files."]


@pytest.mark.parametrize(
    "step",
    [
        "Stir the starter into 330 g of the water until it looks milky.",
        "Leave it covered until it has grown by about half.",
        "Switch off the central heating and wait about 30 minutes.",
        "Do not grout the internal corners or the joint between the tiles and the bath.",
        "Once the surface has dried, buff off the haze with a dry cloth.",
        "1. Bake for 20 minutes with the lid on.",
        "Das Öl in einem großen Topf bei mittlerer Hitze erwärmen.",
        "Zwiebel und Karotten 8 Minuten anbraten, bis die Zwiebel weich ist.",
        "Prüfen, ob `eu_street_trees_lst` die Variable für die Straßenbreite enthält.",
        "Öffne die Datei im Editor.",
        "Faire chauffer l'huile dans une grande casserole à feu moyen.",
        "Vérifier si `eu_street_trees_lst` contient la variable de largeur de rue.",
        "Ne jointoyez pas les angles rentrants.",
        "Calienta el aceite en una olla grande a fuego medio.",
        "Presiónala dentro de las juntas con la llana.",
        "No rellenes con lechada las esquinas interiores.",
        "Deja secar la pared unas horas.",
        "Scaldate l'olio in una pentola capiente a fuoco medio.",
        "Cuocete per 20 minuti con il coperchio.",
        "Scongelatela in frigorifero durante la notte.",
        "Non stuccare gli angoli interni né la fuga tra le piastrelle e la vasca.",
        "Aqueça o azeite em uma panela grande.",
        "Verwarm de olie in een grote pan.",
        "1. 找到放气阀，也就是暖气片顶部一角的方形小螺母。",
        "1. 将酸种倒入 330 克水中搅拌，直至水呈乳白色。",
        "运行一次 `tidewatch init`。",
        "内墙角以及瓷砖与浴缸之间的缝隙不要用填缝剂填。",
        "1. 塩とレモン半個分の果汁で味を調えます。",
        "1. 玉ねぎとにんじんを入れ、玉ねぎがしんなりするまで8分ほど炒めます。",
        "キーを反時計回りに4分の1回転させます。",
        "1. `eu_street_trees_lst`に街路幅の変数が含まれているか確認すること。",
        "Do not vortex after this point.",
        "Le garder humide comme une éponge essorée.",
        "La décongeler une nuit au réfrigérateur.",
        "Anschließend 350 µL N3 zugeben und sofort invertieren.",
        "Ajouter 8 mL de milieu complet pour arrêter la réaction.",
        "Incuber 10 minutes à température ambiante.",
        "Añadir 250 µL de P2 e invertir el tubo 6 veces.",
    ],
)
def test_a_step_gives_no_claim_in_any_language(step: str) -> None:
    """A step is told by where its verb stands: first, with no subject before it, and its
    object after it; at the end, unconjugated, in German; in a numbered list, alone."""
    assert claims_of(step) == []


@pytest.mark.parametrize(
    "line",
    [
        "Murre & Dros (2015), Replication and Analysis of Ebbinghaus' Forgetting Curve, "
        "PLOS ONE 10(7): e0120644.",
        "What a dense six pages!",
        "¡Gracias a todos!",
        "- cemented carbide for cutting tools and drill bits",
        "- einen alten Lappen oder eine kleine Schüssel",
        "Maya Lindqvist、Leo Brandt、Priya Raman.",
        "事故の経過は次のとおりである。",
        "Weiter: Kahneman 2011.",
        "See also [[Backups]] and [[Restore a database]].",
        "Voir aussi Règles de la maison · Chauffage.",
        "另见家规和给看房人的说明。",
        "Robin Wall Kimmerer, Braiding Sweetgrass, Milkweed Editions, 2013.",
        "- DMEM high glucose with 1% pen/strep, pre-warmed to 37 °C",
        "- Cebador reverso NLS-R-XhoI (10 µM), 1,25 µL",
        "- 200 g de farine T65, tamisée",
        "Suite : Digestion de restriction 2024-03-12.",
        "Onderhoud ketel: Harlow Heating, 0161 555 0142",
        "Nos portables : Tom 07700 900412, Priya 07700 900587.",
        "Contact: hr@example.org",
        "ボイラー点検：Harlow Heating、0161 555 0142",
        "Voto: 4/5.",
        "Ehrlich gesagt, eine wunderbare Lektüre.",
        "Sinceramente, el paseo más bonito de todo el viaje.",
        "Quel livre frustrant.",
        "Six pages d'une densité folle !",
        "说实话，这本书太精彩了。",
        "平底96ウェルプレート（Greiner 655101）。",
        "溶出バッファーEB（10 mM Tris-HCl、pH 8.5）、1本あたり50 µL。",
    ],
)
def test_references_exclamations_navigation_and_list_items_give_no_claim(line: str) -> None:
    assert claims_of(line) == []


@pytest.mark.parametrize(
    "said",
    [
        "Murre & Dros (2015) replicated Ebbinghaus' forgetting curve with one subject.",
        "Today it is one of the most popular research plugins, with about 40,000 active users.",
        "Water in a running system is hot and under pressure.",
        "At 9:04, the cargo explodes.",
        "Wenn Sie die eingebettete Datei umbenennen, aktualisiert Inkwell alle Einbettungen.",
        "Tomás lässt seine Wochen am Montag beginnen, die Vorlage funktioniert aber mit jedem Tag.",
        "Diese Fugen arbeiten, und starrer Fugenmörtel reißt dort.",
        "Ich habe die Jubiläumsausgabe zum 50. Jahrestag von 2012 gelesen.",
        "Incluye una variante oscura llamada Paperfold Night.",
        "No puedes pasar una bóveda existente de un modo a otro.",
        "En 1910, William D. Coolidge desarrolló un método para estirar el wolframio en hilo.",
        "Corregido un fallo que se producía cuando una estación no devolvía predicciones.",
        "Si las horas aparecen desfasadas una hora, normalmente es porque el timezone no coincide.",
        "Gigerenzer 1996 sostuvo que varios de estos sesgos se reducen con frecuencias.",
        "Puoi installare altri temi dal Community Hub.",
        "Aggiunto il flag --units, che accetta metric e imperial.",
        "Correction d'un plantage lorsqu'une station ne renvoyait aucune prévision.",
        "Notities die je lokaal bewerkt, blijven op je apparaat staan.",
        "Als je een formule in de laatste rij typt, houdt de plug-in het resultaat bij.",
        "Inkwell versleutelt je kluizen, zodat alleen mensen met het wachtwoord ze kunnen lezen.",
        "roundは、設定した小数点以下の桁数に値を丸めます。",
        "すべてのテストが終わるまでに40秒ほどかかります。",
        "在科学革命中，新范式取代旧范式。",
        "起火的船漂向里士满区，撞上 6 号码头。",
        "Until the Quebec Bridge opened in 1917, these were the longest spans in the world.",
        "We don't recommend it, because some updates include security fixes.",
        "Next Sunday's long run is 16 km.",
        "20.4.: 16 km mit einem Schnitt von 6:02/km gelaufen.",
        "Nehmen Sie stattdessen grüne Linsen, braucht die Suppe etwa 40 Minuten.",
        "Die Autoren vermuten, dass der Schlaf den Sprung erklären könnte.",
        "Englisch und Französisch verwenden tungsten, das Symbol W ist aber überall dasselbe.",
        "Edsger Dijkstra lo diseñó en 1956 y lo publicó tres años después.",
        "Pasar el rodillo de espuma no alarga de verdad los músculos.",
        "Purger un radiateur fait un peu baisser la pression de la chaudière.",
        "On taille les pommiers en hiver, entre la chute des feuilles et début mars.",
        "Disraeli, alors chancelier de l'Échiquier, présenta un projet de loi le 15 juillet.",
        "Lena l'ha costruito attorno a una sola regola.",
        "Aprile copre le settimane dalla 3 alla 7 del piano.",
        "Visitei-o em 2019 com o meu irmão.",
        "Staat je vraag er niet bij, dan reageert ons supportteam binnen één werkdag.",
        "Reservezakjes voor het bakje liggen in de la onder het aanrecht.",
        "Doing the dishes takes 20 minutes.",
        "Ajouter 2013 au tableau a pris une heure.",
        "Kahneman, Tversky and Slovic edited the volume in 1982.",
        "The oven at the bakery runs at 230 °C.",
        "Le fichier contient toutes les réservations de juin.",
        "Le premier train part à 6 h 10.",
        "The SKA-Low telescope will have 131 072 antennas in Western Australia.",
        "Honestly, the bridge is 2 km long.",
        "Honestly, more people came than we expected.",
        "Wie erwartet stieg der Preis im Juni um zwei Euro.",
        "Che Guevara arrivò a Cuba nel 1956.",
        "バス代は2.10ユーロ。",
        "京都から奈良までは、近鉄特急で35分。",
        "Sinceramente, la ruta dura cuatro horas.",
        "Our plumber, whose number is on the fridge, fixed the leak in March.",
    ],
)
def test_a_statement_shaped_like_a_step_still_gives_its_claim(said: str) -> None:
    assert claims_of(said) == [said]


@pytest.mark.parametrize(
    "said",
    [
        "Sync keeps 12 months of history.",
        "Water in a running system is hot and under pressure.",
        "Gigerenzer 1996 sostuvo que varios de estos sesgos se reducen con frecuencias.",
        "在科学革命中，新范式取代旧范式。",
        "起火的船漂向里士满区，撞上 6 号码头。",
        "带有 location 属性的笔记可以在地图上显示为图钉。",
        "roundは、設定した小数点以下の桁数に値を丸めます。",
    ],
)
def test_a_numbered_item_with_a_subject_is_no_step(said: str) -> None:
    assert claims_of(f"1. {said}") == [said]


@pytest.mark.parametrize(
    "step",
    [
        "For more than 10 working days in a row, please ask at least 6 weeks in advance.",
        "Für mehr als 10 Arbeitstage am Stück stellen Sie den Antrag bitte 6 Wochen im Voraus.",
        "Pour plus de 10 jours ouvrés d'affilée, merci de faire votre demande à l'avance.",
        "Vergewissern Sie sich, dass die Lüftungsschlitze nicht verdeckt sind.",
        "Compruebe que su router permite el tráfico saliente por el puerto 8883.",
        "1. Do four sets of stretch and folds, 30 minutes apart.",
        "1. Faça quatro séries de dobras, com 30 minutos de intervalo.",
        "Buy your ticket in the DOT Tickets app before you go down to the platform.",
        "Lorsque l'application vous le demande, connectez-vous au réseau temporaire.",
        "N'essayez pas de la forcer.",
        "Inicia sesión en Google Workspace con la contraseña temporal.",
        "Hornea 20 minutos con la tapa puesta.",
        "Versuch nicht, sie mit Gewalt aufzumachen.",
        "Schreib am Ende deiner Woche eine Übergabenotiz in #oncall-handover.",
        "Bitte sag uns Bescheid, falls das passiert.",
        "De fles onder de microscoop bekijken en de confluentie noteren.",
        "QA vragen om de mobiele-webronde goed te keuren.",
        "30 seconden denatureren bij 98 °C.",
        "Mail ons je bestelnummer en een korte beschrijving van het probleem.",
        "Valida los billetes de papel en las máquinas antes de subir.",
        "Pon una pastilla de Persil en el tambor, encima de la ropa.",
        "Dales un enjuague rápido a los tarros y las latas.",
        "1. 盖上锅盖烤 20 分钟，然后将温度调低至 230 °C。",
        "1. 检查灯头背面的通风口是否被纸张或布料遮挡。",
        "点按申请维修，然后选择你的台灯。",
        "要嵌入文件，请在内部链接前加一个感叹号。",
        "在 Sentry 仪表盘上检查 staging 环境最近 48 小时内的新错误。",
        "在会议室检查投影仪。",
        "万一警报响了，把密码输入两次。",
        "记得提前订位。",
        "1. シードがはじけはじめたら、クミン、にんにく、唐辛子を加えて40秒ほど炒める。",
        "入口で番号札をもらって、外で待とう。",
        "朝早く、ツアーの団体が来る前に行くのがおすすめ。",
        "Ben je ziek, meld dat dan op de eerste dag vóór 9:30 bij je manager.",
        "Komt E04 na het drogen terug, neem dan contact met ons op.",
    ],
)
def test_requests_and_steps_of_every_form_give_no_claim(step: str) -> None:
    """A step says "please" or its polite or familiar imperative (Sie, du, vous, usted), puts
    its Dutch or German infinitive last, or opens a Chinese clause with 请, 记得 or 把."""
    assert claims_of(step) == []


@pytest.mark.parametrize(
    "line",
    [
        "- *The Mythical Man-Month* by Fred Brooks (1975)",
        "- *Een patroontaal* van Christopher Alexander e.a. (1977)",
        "- Thomas Kuhn 的《科学革命的结构》（1962）",
        "Datum: 3. März 2025",
        "Fecha: 27 de enero de 2025",
        "- Rate: 1.65% fixed",
        "- Active time: 30 minutes",
        "Invitada: Dra. Hanna Lindqvist, radioastrónoma de la Universidad Tecnológica Chalmers",
        "Fontes: Montréal, la formation d'une société (Trudel), Biografia de Jeanne Mance",
        "Mantenimiento de la caldera: Harlow Heating, 0161 555 0142",
        "- Semanas 1–4: 6 × 800 m a 5:00/km, recuperación de 90 s trotando",
        "- Plancha lateral 3 × 30 s por lado",
        "- per la tarka: 2 cucchiai di ghee, 1 cucchiaino di semi di cumino",
        "资料来源：The Forth Bridge (Paxton)、Bridging the Firth",
        "This episode was a delight from start to finish.",
        "La luz de la tarde sobre el canal era preciosa.",
        "这一周太棒了！",
        "いい一日だった！",
    ],
)
def test_records_reading_lists_and_verdicts_give_no_claim(line: str) -> None:
    """A key with a short value or short parts in a row is a record, a book with its author
    and year an entry of a reading list, and a short sentence that only praises or blames an
    opinion: none states anything a reader could check."""
    assert claims_of(line) == []


@pytest.mark.parametrize(
    "said",
    [
        "Exports van meer dan 10.000 rijen draaien op de bestaande Sidekiq-queue.",
        "Latere declaraties schuiven door naar de volgende maand.",
        "Een Cotton 40-programma duurt 3 uur en 10 minuten.",
        "In dit log staan de beslissingen van het productteam van Tally, de nieuwste bovenaan.",
        "Albrecht von Treileben en Andreas Peckell bergen met een duikklok de bronzen kanonnen.",
        "De treinen rijden om de 10 minuten.",
        "Alarme mit dem Schweregrad low lösen zwischen 22:00 und 07:00 Uhr keinen Page aus.",
        "It describes three of them: representativeness, availability, and anchoring.",
        "Brooks wrote The Mythical Man-Month in 1975.",
        "对 NOAA API 的请求失败后，现在会以指数退避方式最多重试三次。",
        "在桌面浏览器中可以正常使用，但图表在手机上还不能自适应尺寸。",
        "在零售商处购买的产品按该零售商的退货政策处理。",
        "1. Sales grew 20% in 2023.",
        "Terminada la reunión, el equipo volvió a la oficina.",
        "The bridge has a lovely 521 m main span, finished in 1890.",
        "人口は約1400万人です！",
        "The customer said please refund the order, and support refunded it on 3 May.",
        "Linda manages the Berlin office.",
        "Do Kwon founded Terraform Labs.",
        "Wait times at the clinic fell to 20 minutes after the new triage desk opened.",
        "Umsatz im Mai stieg um 12 Prozent.",
        "Denn sie wussten nicht, dass der Server ausgefallen war.",
        "Rendez-vous fixé au 12 mars avec le notaire.",
        "Sinds 2020 dalen de prijzen.",
        "通用汽车旗下的别克品牌成立于一九零三年。",
        "大家都记得那次停电。",
        "中国太空站已经建成了。",
        "新版本已于三月一日正式发布！",
        "雨が降りそう。",
        "Turkish delight is made from starch and sugar.",
        "在上海使用共享单车的人数超过一百万。",
        "Als het regent, blijven we dan thuis.",
        "Support kreeg 520 tickets binnen, veel meer dan de 300 die Tom had verwacht.",
        "Ik vond dat de vriendschap het hele boek droeg, meer nog dan de plot.",
        "Omdat het regende, kwamen veel minder mensen dan verwacht.",
        "In 2023, exporteerde Nederland meer bloemen dan Colombia.",
        "Is de accu leeg, piept elke sensor dan drie keer.",
        "Toen we aankwamen, was Lisa dan al vertrokken.",
    ],
)
def test_statements_near_the_new_step_and_record_rules_keep_their_claim(said: str) -> None:
    claim = said.removeprefix("1. ")
    assert claims_of(said) == [claim]


@pytest.mark.parametrize(
    "judged",
    [
        "Some chapters felt too long, but the ending was worth it.",
        "Hat sich total gelohnt.",
        "Ça valait vraiment le coup.",
        "Mereció totalmente la pena.",
        "Ne è valsa assolutamente la pena.",
        "Valeu muito a pena.",
        "Sommige hoofdstukken waren te lang, maar het einde was het waard.",
        "待った甲斐は十分にあった。",
        "Kowalczyk interrupts her guests far too often.",
        "Drei Meetings vor dem Mittagessen sind einfach zu viel.",
        "Tres reuniones antes de comer son demasiadas.",
        "Drie vergaderingen voor de lunch is te veel.",
        "I would like to see newer figures.",
        "Ehrlich gesagt bezweifle ich, dass unser Stadtrat die Geduld dafür hätte.",
        "Sinceramente, dudo que nuestro ayuntamiento tuviera paciencia para algo así.",
        "Ik zou graag recentere cijfers zien.",
    ],
)
def test_judgements_give_no_claim(judged: str) -> None:
    """Worth it, too much, a doubt or a wish of the writer's: a judgement, with nothing a
    reader could check."""
    assert claims_of(judged) == []


@pytest.mark.parametrize(
    "said",
    [
        "The upgrade cost €40, and it was worth it.",
        "The API returns 429 when a client sends too many.",
        "She ran the best time of the 2019 season so far.",
        "The bridge is too long for the 1890 cranes to lift in one piece.",
        "Fixed a crash when the file name was too long.",
        "The form rejects passwords that are too long.",
        "We were charged too much.",
        "Le magasin m'a rendu cinq euros de trop.",
        "O primeiro voo atrasou, assim como os demais.",
        "Het huis is nu het dubbele waard.",
        "Laut Stiftung Warentest lohnt sich der Aufpreis nicht.",
        "Bisher ist keine Bestellung eingegangen.",
        "Thriller is the best-selling album ever.",
        "Q3 was our best quarter so far.",
        "毎朝、駅の前を通りすぎる。",
        "会議が終わったのは三時すぎだ。",
    ],
)
def test_statements_beside_a_judgement_keep_their_claim(said: str) -> None:
    """A number, a limit, a price or a fact said with the words of a judgement."""
    assert claims_of(said) == [said]


def test_a_wish_in_a_conversation_is_what_the_speaker_asked_for() -> None:
    said = "Ana: I'd like to see the revised budget before Friday."
    assert extract_claim_texts(said, conversation=True, lang="en") == [
        "Ana would like to see the revised budget before Friday."
    ]
    assert extract_claim_texts(said, conversation=False, lang="en") == []


def _claims_after(before: list[str], block: str) -> list[str]:
    window = tuple(Utterance(f"blk-b{i}", text) for i, text in enumerate(before))
    item = ExtractionInput(Utterance("blk-1", block), before=window, conversation=False)
    return [c.text for c in OfflineClaimExtractor().extract(item)]


@pytest.mark.parametrize(
    ("lead_in", "item"),
    [
        ("You need:", "- A phone with iOS 15 or Android 10 or later"),
        ("La garantie ne couvre pas :", "- Les dommages causés par une tondeuse"),
        ("Necesitas:", "- Un teléfono con iOS 15 o Android 10 o posterior"),
        ("你需要：", "- 一个采用 WPA2 或 WPA3 加密的 2.4 GHz Wi-Fi 网络"),
    ],
)
def test_an_item_of_a_lead_in_list_finishes_its_sentence_and_gives_no_claim(
    lead_in: str, item: str
) -> None:
    assert _claims_after([lead_in, "- Another item"], item) == []


def test_an_item_of_a_list_whose_lead_in_is_out_of_sight_gives_no_claim() -> None:
    """Three entries above it and no lead-in in the window: the list began further up."""
    entries = ["- Ein Router mit WPA2", "- Die Loam-App ab Version 4.2", "- Ein Telefon mit iOS 15"]
    assert _claims_after(entries, "- Ein WLAN im 2,4-GHz-Band mit WPA2 oder WPA3") == []
    sentences = ["- Der Router ist neu.", "- Die App läuft.", "- Das Telefon lädt."]
    assert _claims_after(sentences, "- Ein WLAN im 2,4-GHz-Band mit WPA2 oder WPA3") == [
        "Ein WLAN im 2,4-GHz-Band mit WPA2 oder WPA3."
    ]


def test_an_item_that_states_a_result_keeps_its_claim_after_a_lead_in() -> None:
    assert _claims_after(["Ergebnisse:"], "- Der Umsatz stieg im dritten Quartal um 12 %") == [
        "Der Umsatz stieg im dritten Quartal um 12 %."
    ]
    assert _claims_after(["Resultados:"], "- Las ventas crecieron con fuerza en marzo") == [
        "Las ventas crecieron con fuerza en marzo."
    ]


@pytest.mark.parametrize(
    ("lead_in", "item", "claim"),
    [
        (
            "The plugin has three modes:",
            "- Reading mode shows the note as it will look when printed",
            "Reading mode shows the note as it will look when printed.",
        ),
        (
            "Le plugin a trois modes :",
            "- Le mode lecture est le plus simple.",
            "Le mode lecture est le plus simple.",
        ),
        ("Notes:", "1. Water damage to a sensor is common", "Water damage to a sensor is common."),
    ],
)
def test_an_item_that_states_something_keeps_its_claim_after_a_lead_in(
    lead_in: str, item: str, claim: str
) -> None:
    assert _claims_after([lead_in], item) == [claim]


def _claims_before(block: str, after: str) -> list[str]:
    item = ExtractionInput(
        Utterance("blk-1", block), after=(Utterance("blk-2", after),), conversation=False
    )
    return [c.text for c in OfflineClaimExtractor().extract(item)]


@pytest.mark.parametrize(
    "lead_in",
    [
        "Syncは次の設定を使用します。",
        "このプラグインを使うと次のオプションが追加されます。",
        "插件会添加如下选项。",
    ],
)
def test_a_sentence_that_names_the_list_below_is_its_lead_in(lead_in: str) -> None:
    assert _claims_before(lead_in, "- 暗号化方式：AES-256") == []
    assert _claims_before(lead_in, "その後、保管庫を開きます。") == [lead_in]


@pytest.mark.parametrize(
    "said",
    [
        "追加日数は、入社記念日を迎えた次の休暇年度から適用されます。",
        "30 以下の方は無料です。",
        "最后 3 km 心率一直保持在 150 以下。",
    ],
)
def test_the_next_year_or_a_bound_before_a_list_is_no_lead_in(said: str) -> None:
    assert _claims_before(said, "- 5年目：1日") == [said]


@pytest.mark.parametrize(
    "step",
    [
        "Validate paper tickets in the red or orange punching machines before you board.",
        "Escalate to the secondary if you have made no progress after 30 minutes.",
        "Never restore over the primary.",
        "Prüf, ob die Auswertung im Ordner des Kandidaten abgelegt ist.",
        "Kehr um, wenn die Gruppe den Col bis 13:00 Uhr nicht erreicht hat.",
        "Folge vom Parkplatz aus den gelben Markierungen über den Forstweg hinauf.",
        "Den Stand des Stromzählers mit der Rechnung abgleichen.",
        "Volg vanaf de parkeerplaats de gele markering over de bosweg omhoog.",
        "Stuur geen motivatiebrief van meer dan één pagina.",
        "Desça pelo ombro relvado do outro lado até ao refúgio.",
        "Volte para trás se o grupo não tiver chegado ao colo até às 13:00.",
        "Vuelva a enchufar la lámpara y enciéndala.",
        "Scendi lungo la spalla erbosa sul versante opposto.",
        "Esegui pytest -q dalla radice del repository.",
        "Tenga a mano el número de reserva.",
        "Bring ihr die Unterlagen bis Montag vorbei.",
    ],
)
def test_a_step_that_opens_with_what_the_lexicon_knows_as_a_verb_gives_no_claim(
    step: str,
) -> None:
    """A word that is only a verb (English) or an imperative (the shipped table) opens a step
    where a statement would have its subject."""
    assert claims_of(step) == []


@pytest.mark.parametrize(
    "said",
    [
        "Jonas vulde onze flessen bij de bron van Clot.",
        "Praat langzaam en verheft nooit haar stem.",
        "Woon je in Portugal, dan zijn de nationale musea op zondag gratis.",
        "Lockere Läufe laufe ich in Zone 2.",
        "Bach in Leipzig komponierte die Matthäus-Passion.",
        "Scrivi SQL solido e sai leggere i piani di esecuzione.",
        "Fazia 3 °C na largada.",
        "Iba hasta los topes, y el trayecto duró casi 40 minutos.",
        "Book club meets on the first Tuesday of each month.",
        "Sue moved to Leeds in 2019 and now runs the bakery on Kirk Street.",
        "In 2019, Sue opened a second shop in York.",
        "Kindle Unlimited costs $11.99 a month in the US.",
        "Deploy took twelve minutes because the cache was cold.",
        "Arbeite seit 2019 als Pflegekraft in der Uniklinik.",
        "Woon sinds 2018 in Utrecht, vlak bij het station.",
        "Bas werkt sinds januari bij de gemeente Zwolle.",
        "Stop 4 van de wandeling ligt bij de oude molen.",
        "Acht jaar rentevast was toen de goedkoopste optie.",
        "Pese a la lluvia, el partido se jugó hasta el final.",
        "Diga lo que diga el jefe, el plazo es el viernes.",
        "Llegaste a Madrid el martes y te quedaste hasta el domingo.",
        "Tenda e sacos-cama ficam na garagem da avó.",
        "Bianchi ha presentato il budget alla riunione di lunedì.",
    ],
)
def test_a_statement_that_opens_with_a_verb_or_a_name_keeps_its_claim(said: str) -> None:
    """A name or a noun before its verb, a condition, a subject after the verb, verbs that
    agree with a subject, the imperfect: statements."""
    assert claims_of(said) == [said]


@pytest.mark.parametrize(
    "pointer",
    [
        "See NAS backups for how all of this is backed up.",
        "Siehe Debrief Priya Nair als Beispiel für eine schriftliche Nachbesprechung.",
        "Voir Vendors and deposits pour les conditions des contrats et le plan de table.",
        "Véase Debrief Priya Nair para ver un ejemplo de evaluación por escrito.",
        "Vedi anche NAS backups per come viene fatto il backup di tutto questo.",
        "Veja Debrief Priya Nair para um exemplo de debrief escrito.",
        "Zie Debrief Priya Nair voor een voorbeeld van een uitgeschreven debrief.",
        "これら全体のバックアップ方法は NAS backups も参照。",
    ],
)
def test_a_sentence_that_sends_the_reader_elsewhere_gives_no_claim(pointer: str) -> None:
    assert claims_of(pointer) == []


@pytest.mark.parametrize(
    "said",
    [
        "プランは12週間で、週4回のランと短めの筋トレ2回で構成している（筋トレメニューを参照）。",
        "このスクリプトは起動時に環境変数HOMEを参照。",
        "Quisimos ver el eclipse desde la playa de Zarautz en 2026.",
        "Consulta médica cuesta 60 euros en esa clínica.",
        "Ver Lisboa do miradouro ao pôr do sol foi o melhor da viagem.",
        "Siehe da, der Bus kam pünktlich.",
        "See the appendix: the survey had a 38 percent response rate.",
    ],
)
def test_a_pointer_in_brackets_or_a_verb_inside_a_statement_keeps_its_claim(said: str) -> None:
    assert claims_of(said) != []


@pytest.mark.parametrize(
    "felt",
    [
        "I can't wait for the first look.",
        "Ich kann den First Look kaum erwarten.",
        "J'ai tellement hâte d'être au first look.",
        "Non vedo l'ora del first look.",
        "Mal posso esperar pelo first look.",
        "Ik kan niet wachten op de first look.",
        "ファーストミートが待ちきれない！",
        "今回の選考に関わった皆さん、お疲れさまでした。",
        "Great work from everyone on this loop.",
        "Bravo à tous pour ce processus.",
        "Goed werk van iedereen in deze procedure.",
    ],
)
def test_looking_forward_or_a_thank_you_gives_no_claim(
    felt: str,
) -> None:
    assert claims_of(felt) == []


@pytest.mark.parametrize(
    "said",
    [
        "Honestly, the bridge is 2 km long.",
        "J'y ai mangé une fois, en mai 2023, donc j'avais hâte d'entendre sa cuisine.",
        "Thanks to the new cache, pages load in half the time.",
        "Gracias a la nueva caché, las páginas cargan el doble de rápido.",
        "Grazie alla nuova cache, le pagine si caricano il doppio più veloci.",
        "Thanks to everyone who came, the hall was full.",
        "Merci à Paul, le serveur tourne de nouveau depuis hier soir.",
        "Good work boots cost about a hundred pounds at the market.",
        "Checkout can't wait for the payment webhook, so it polls the API instead.",
        "Maya can't wait to start at Google next month.",
    ],
)
def test_a_fact_beside_the_words_of_a_feeling_or_a_thank_you_keeps_its_claim(said: str) -> None:
    assert claims_of(said) != []
