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
