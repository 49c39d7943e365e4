"""Grading reads the text a reader sees (issue 21, items 1, 2 and 9).

Markdown syntax never changes a score, text that is not prose never becomes a claim, and
Japanese or Chinese text is split, extracted and scored as sentences of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from aclarai.agents.base import EvalItem, ExtractionInput, Score, Utterance
from aclarai.agents.llm.agents import LLMClaimExtractor, LLMEvaluator, RoleModels
from aclarai.agents.llm.client import LLMClient
from aclarai.agents.offline import OfflineClaimExtractor, OfflineEvaluator
from tests.helpers.cli import run_cli
from tests.helpers.scripted_llm import (
    ScriptedLLMServer,
    claim_ids,
    grades_responder,
    json_reply,
)

SCORES = ("entailed_score", "coverage_score", "decontextualization_score")
TOLERANCE = 0.05

# (source, claim) with Markdown syntax, then the same text without it.
LINK_SYNTAX_CASES = [
    pytest.param(
        "The app has no [[Ribbon]].",
        "The app has no Ribbon.",
        "The app has no Ribbon.",
        "The app has no Ribbon.",
        id="wikilink",
    ),
    pytest.param(
        "Obsidian opens many [[Accepted file formats|file types]] without a plugin.",
        "Obsidian opens many file types without a plugin.",
        "Obsidian opens many file types without a plugin.",
        "Obsidian opens many file types without a plugin.",
        id="alias-link",
    ),
    pytest.param(
        "Obsidian stores properties in [YAML](https://yaml.org/)-format at the top of a note.",
        "Obsidian stores properties in YAML-format at the top of a note.",
        "Obsidian stores properties in YAML-format at the top of a note.",
        "Obsidian stores properties in YAML-format at the top of a note.",
        id="markdown-link-inside-word",
    ),
    pytest.param(
        "- The Ribbon holds the commands Obsidian users run most often.",
        "The Ribbon holds the commands Obsidian users run most often.",
        "The Ribbon holds the commands Obsidian users run most often.",
        "The Ribbon holds the commands Obsidian users run most often.",
        id="list-marker",
    ),
    pytest.param(
        "It’s possible to hide the Ribbon in the Appearance settings since version 1.5.",
        "It's possible to hide the Ribbon in the Appearance settings since version 1.5.",
        "It's possible to hide the Ribbon in the Appearance settings since version 1.5.",
        "It's possible to hide the Ribbon in the Appearance settings since version 1.5.",
        id="curly-apostrophe",
    ),
    pytest.param(
        "Open [[Settings#Appearance]] to hide the Ribbon on Windows.",
        "Open Settings > Appearance to hide the Ribbon on Windows.",
        "Open Settings > Appearance to hide the Ribbon on Windows.",
        "Open Settings > Appearance to hide the Ribbon on Windows.",
        id="heading-link",
    ),
    pytest.param(
        "The **Ribbon** is *not* shown on ==mobile== since `v1.0`.",
        "The Ribbon is not shown on mobile since v1.0.",
        "The Ribbon is not shown on mobile since v1.0.",
        "The Ribbon is not shown on mobile since v1.0.",
        id="emphasis-highlight-code",
    ),
    pytest.param(
        "> [!tip] Canvas\n> Canvas files are stored as JSON in the vault.[^1] ![[canvas.png]]",
        "Canvas files are stored as JSON in the vault.",
        "Canvas\n\nCanvas files are stored as JSON in the vault.",
        "Canvas files are stored as JSON in the vault.",
        id="callout-footnote-embed",
    ),
    pytest.param(
        "The “Sync” add-on costs 4\\$ a month and %%draft%% keeps 12 months of history.",
        'The "Sync" add-on costs 4$ a month and keeps 12 months of history.',
        'The "Sync" add-on costs 4$ a month and keeps 12 months of history.',
        'The "Sync" add-on costs 4$ a month and keeps 12 months of history.',
        id="quotes-escape-comment",
    ),
    pytest.param(
        "The app has no Ribbon.",
        "The app has no [[Ribbon]].",
        "The app has no Ribbon.",
        "The app has no Ribbon.",
        id="syntax-in-the-claim",
    ),
]


def _score(source: str, claim: str, evaluator: OfflineEvaluator | None = None) -> Score:
    return (evaluator or OfflineEvaluator()).evaluate(EvalItem(claim, source))


def _claims(text: str) -> list[str]:
    item = ExtractionInput(Utterance("blk-1", text))
    return [claim.text for claim in OfflineClaimExtractor().extract(item)]


@pytest.mark.parametrize(("source", "claim", "plain_source", "plain_claim"), LINK_SYNTAX_CASES)
def test_link_syntax_scores_as_the_text_without_it(
    source: str, claim: str, plain_source: str, plain_claim: str
) -> None:
    evaluator = OfflineEvaluator()
    marked, plain = evaluator.evaluate_batch(
        [EvalItem(claim, source), EvalItem(plain_claim, plain_source)]
    )
    assert marked.status == plain.status == "ok"
    for name in SCORES:
        assert abs(getattr(marked, name) - getattr(plain, name)) <= TOLERANCE, name
    assert marked.omitted == plain.omitted


def test_wikilink_does_not_flip_polarity() -> None:
    score = _score("The app has no [[Ribbon]].", "The app has no Ribbon.")
    assert score.entailed_score is not None and score.entailed_score > 0.5
    assert score.verdict == "supported"
    assert "negates" not in (score.justification or "")


def test_alias_link_target_not_counted_as_omitted() -> None:
    score = _score(
        "Obsidian reads several [[Accepted file formats|file types]] in 2024.",
        "Obsidian reads several file types in 2024.",
    )
    assert score.coverage_score == 1.0
    assert score.omitted == ()


def test_markdown_link_inside_word() -> None:
    source = "Notes keep their metadata in [YAML](https://yaml.org/)-format properties."
    [claim] = _claims(source)
    assert claim == "Notes keep their metadata in YAML-format properties."
    score = _score(source, claim)
    assert score.coverage_score == 1.0
    assert score.entailed_score is not None and score.entailed_score > 0.8


def test_list_marker() -> None:
    source = "- The Ribbon holds the commands you use most often."
    assert _claims(source) == ["The Ribbon holds the commands you use most often."]
    plain = _score("The Ribbon holds the commands you use most often.", "The Ribbon holds it.")
    marked = _score(source, "The Ribbon holds it.")
    assert marked.entailed_score == plain.entailed_score


def test_curly_apostrophe() -> None:
    source = "It’s possible to hide the Ribbon in Settings."
    assert _claims(source) == ["It's possible to hide the Ribbon in Settings."]
    curly = _score(source, "It’s possible to hide the Ribbon in Settings.")
    straight = _score("It's possible to hide the Ribbon in Settings.", "It's possible to hide it.")
    assert curly.entailed_score is not None and curly.entailed_score > 0.8
    assert straight.status == "ok"


def test_claim_charged_only_for_its_own_sentence() -> None:
    source = (
        "Alice moved to Berlin in 2019. Alice met Bob at the Siemens office in Berlin. "
        "The office has 300 desks."
    )
    evaluator = OfflineEvaluator()
    for claim in _claims(source):
        score = _score(source, claim, evaluator)
        assert score.coverage_score == 1.0, (claim, score.omitted)
    merged = _score(source, "Alice moved to Berlin in 2019 and met Bob there.", evaluator)
    assert merged.omitted == ("Siemens",)


def test_code_fence_is_never_a_claim() -> None:
    block = (
        "The script below renames files.\n\n```python\n"
        "# The server restarted at noon because the config changed.\n"
        "print('The deploy failed twice on Tuesday.')\n```"
    )
    assert _claims(block) == ["The script below renames files."]


def test_indented_code_is_never_a_claim() -> None:
    block = "Run this once.\n\n    The server restarted at noon because the config changed.\n"
    assert _claims(block) == []


def test_math_block_with_blank_line() -> None:
    block = "The proof is short.\n\n$$\nThe sum of the angles is 180 degrees.\n\nx = y\n$$"
    assert _claims(block) == ["The proof is short."]


def test_comments_are_never_claims() -> None:
    block = (
        "The deploy failed on Monday. %% The deploy was cancelled by Carol. %%\n"
        "%%\nThe budget was cut by 40 percent.\n\nIt was restored in May.\n%%\n"
        "<!-- The office moved to Porto in 2020. -->"
    )
    assert _claims(block) == ["The deploy failed on Monday."]


def test_html_block_is_never_a_claim() -> None:
    block = "<div class='note'>\nThe office moved to Porto in 2020.\n</div>"
    assert _claims(block) == []


def test_front_matter_and_embeds_are_never_claims() -> None:
    block = (
        "---\nsummary: The office moved to Porto in 2020.\n---\n"
        "![[The office moved to Porto in 2020]]\nThe team grew to 40 people."
    )
    assert _claims(block) == ["The team grew to 40 people."]


def test_task_item_not_a_claim() -> None:
    block = "- [ ] Call the plumber about the leak on Monday.\n- [x] Paid the invoice of 300 euros."
    assert _claims(block) == []


def test_questions_and_imperatives_are_not_claims() -> None:
    block = (
        "Call the plumber.\nDid the plumber fix the sink?\nThe plumber fixed the sink on Monday."
    )
    assert _claims(block) == ["The plumber fixed the sink on Monday."]


def test_japanese_claims_end_once() -> None:
    claims = _claims("東京は日本の首都です。人口は約1400万人です！首都はどこですか？")
    assert claims == ["東京は日本の首都です。", "人口は約1400万人です！"]
    for claim in claims:
        assert claim[-1] in "。！" and claim[-2] not in "。！.!"


# The same facts, written in English, Japanese and Chinese.
PARALLEL = [
    (
        "Obsidian stores notes as Markdown files in a folder.",
        "Obsidianはノートをフォルダ内のMarkdownファイルとして保存します。",
        "Obsidian将笔记作为Markdown文件保存在文件夹中。",
    ),
    (
        "The Ribbon shows the commands you use most often.",
        "リボンにはよく使うコマンドが表示されます。",
        "功能区显示最常用的命令。",
    ),
    (
        "Canvas files are stored as JSON.",
        "キャンバスファイルはJSONとして保存されます。",
        "白板文件以JSON格式保存。",
    ),
    (
        "Sync keeps twelve months of version history.",
        "同期機能はバージョン履歴を12か月間保持します。",
        "同步功能会保留12个月的版本历史。",
    ),
    (
        "Properties are written in YAML at the top of a note.",
        "プロパティはノートの先頭にYAMLで書かれます。",
        "属性以YAML格式写在笔记的顶部。",
    ),
    (
        "Community plugins are disabled in restricted mode.",
        "制限モードではコミュニティプラグインが無効になります。",
        "在受限模式下社区插件会被禁用。",
    ),
    (
        "Please open the settings.",
        "設定を開いてください。",
        "请打开设置。",
    ),
    (
        "Where is the vault folder?",
        "保管庫フォルダはどこですか？",
        "仓库文件夹在哪里？",
    ),
]


@pytest.mark.parametrize("language", [1, 2], ids=["japanese", "chinese"])
def test_cjk_declaratives_give_as_many_claims_as_english(language: int) -> None:
    english = _claims("\n\n".join(row[0] for row in PARALLEL))
    other = _claims("".join(row[language] for row in PARALLEL))
    assert len(english) == 6
    assert len(other) == len(english)
    assert all(claim.endswith("。") and not claim.endswith("。。") for claim in other)


def test_cjk_scores_are_sensible() -> None:
    source = "東京は日本の首都です。人口は約1400万人です。富士山は静岡県と山梨県にあります。"
    evaluator = OfflineEvaluator()
    restated = _score(source, "富士山は静岡県と山梨県にあります。", evaluator)
    unrelated = _score(source, "大阪城は豊臣秀吉が建てました。", evaluator)
    wrong_number = _score(source, "人口は約900万人です。", evaluator)
    assert restated.entailed_score is not None and restated.entailed_score > 0.8
    assert restated.coverage_score == 1.0 and restated.decontextualization_score == 1.0
    assert unrelated.entailed_score is not None and unrelated.entailed_score < 0.3
    assert wrong_number.entailed_score is not None and wrong_number.entailed_score < 0.5
    assert "900" in (wrong_number.justification or "")
    leaning = _score(source, "彼はそこに住んでいます。", evaluator)
    assert leaning.decontextualization_score is not None
    assert leaning.decontextualization_score < 0.7


def test_llm_evaluator_is_sent_the_rendered_text(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.responder = grades_responder()
    evaluator = LLMEvaluator(make_client(), models=RoleModels(default="grader"))

    [score] = evaluator.evaluate_batch(
        [EvalItem("The app has no [[Ribbon]].", "- The app has no [[Ribbon|ribbon]].")]
    )

    assert score.status == "ok"
    sent = llm_server.chat_requests[0].user_text
    assert '<untrusted kind="source">\nThe app has no ribbon.\n</untrusted>' in sent
    assert "\nc1: The app has no Ribbon.\n</untrusted>" in sent
    assert "[[" not in sent


def test_items_equal_once_rendered_are_asked_once(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    # A scripted model that, like a small real one, answers a repeated claim only once.
    llm_server.responder = grades_responder(skip=frozenset({"c2"}))
    evaluator = LLMEvaluator(make_client(), models=RoleModels(default="grader"))

    marked, plain = evaluator.evaluate_batch(
        [
            EvalItem("The app has no Ribbon.", "The app has no [[Ribbon]]."),
            EvalItem("The app has no Ribbon.", "The app has no Ribbon."),
        ]
    )

    assert marked.status == plain.status == "ok"
    assert marked == plain
    [request] = llm_server.chat_requests
    assert claim_ids(request) == ["c1"]


def test_llm_extractor_reads_the_prose(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    llm_server.queue(json_reply({"claims": []}))
    block = Utterance("blk-1", "- The app has no [[Ribbon]].\n```\nprint('x')\n```\n- [ ] Call Bob")
    item = ExtractionInput(block, before=(Utterance("blk-0", "A **bold** neighbour."),))

    assert LLMClaimExtractor(make_client(), model="m").extract(item) == []

    sent = llm_server.chat_requests[0].user_text
    assert "\nThe app has no Ribbon.\n</untrusted>" in sent
    assert "\nA bold neighbour.\n</untrusted>" in sent
    for hidden in ("[[", "print", "Call Bob", "**"):
        assert hidden not in sent


def test_evaluate_cli_scores_the_ribbon_pair_as_without_brackets(tmp_path: Path) -> None:
    lines = [
        {"id": "marked", "source": "The app has no [[Ribbon]].", "claim": "The app has no Ribbon."},
        {"id": "plain", "source": "The app has no Ribbon.", "claim": "The app has no Ribbon."},
    ]
    env = {"ACLARAI_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path), "PATH": "/usr/bin"}
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    out = run_cli("evaluate", "-", env=env, stdin=stdin)
    assert out.returncode == 0, out.stderr
    marked, plain = (json.loads(line) for line in out.stdout.splitlines())
    assert marked["status"] == plain["status"] == "ok"
    for name in SCORES:
        assert abs(marked[name] - plain[name]) <= TOLERANCE, name
    assert marked["entailed_score"] > 0.5
    assert marked["verdict"] == "supported"


def test_an_item_that_is_not_text_fails_alone() -> None:
    bad = EvalItem(["not", "text"], "The deploy failed.")  # type: ignore[arg-type]
    good = EvalItem("The deploy failed.", "The deploy failed on Tuesday.")

    failed, scored = OfflineEvaluator().evaluate_batch([bad, good])

    assert failed.entailed_score is None and failed.status != "ok"
    assert scored.status == "ok" and scored.entailed_score is not None
