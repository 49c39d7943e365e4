"""The dashboard's Markdown, rendered without any I/O."""

from __future__ import annotations

import math
import re

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from aclarai.parsers import (
    ClaimRef,
    DailyQuality,
    DashboardData,
    DeadLetter,
    NoteStats,
    render_dashboard,
    same_dashboard,
)
from aclarai.parsers.dashboard import (
    DAYS_SHOWN,
    NOTES_SHOWN,
    bin_counts,
    block_link,
    escape_link_text,
    escape_text,
    shown_threshold,
    unbroken_time,
    verdict_text,
)

WHEN = "2024-06-03T09:00:00Z"
WIKILINK = re.compile(r"\[\[([^\]|]+?)(?:\|([^\]]*))?\]\]")


def _claim(claim_id: str = "c1", quality: float | None = 0.4, **fields: object) -> ClaimRef:
    base: dict[str, object] = {
        "claim_id": claim_id,
        "text": "The deploy failed twice.",
        "file": "meetings/2024-06-03 Standup.md",
        "block_id": "blk-q1w2e3",
        "block_text": "alice: The deploy to staging failed twice on Tuesday.",
        "entailed_score": 0.5,
        "coverage_score": 0.4,
        "decontextualization_score": 0.3,
        "quality": quality,
        "verdict": "weakly_supported",
        "justification": "Only partly said.",
        "status": "ok",
    }
    base.update(fields)
    return ClaimRef(**base)  # type: ignore[arg-type]


def _data(**fields: object) -> DashboardData:
    base: dict[str, object] = {
        "threshold": 0.7,
        "model": "offline:1",
        "low_quality": [_claim()],
        "low_quality_total": 1,
        "notes": [
            NoteStats("meetings/2024-06-03 Standup.md", 3, 4, 4, 0.81, _claim(), WHEN),
        ],
        "score_counts": {
            "entailed_score": {0: 1, 9: 2, 10: 3, 55: 4, 99: 5, 100: 6},
            "coverage_score": {40: 1},
            "decontextualization_score": {30: 1},
        },
        "daily": [DailyQuality("2024-06-03", 0.81, 4)],
        "blocks": 3,
        "claims": 4,
        "scored": 4,
    }
    base.update(fields)
    return DashboardData(**base)  # type: ignore[arg-type]


def _mermaid_blocks(text: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(text)
    return [t.content for t in tokens if t.type == "fence" and t.info == "mermaid"]


def test_link_jumps_to_the_block_with_the_note_name_and_first_words() -> None:
    link = block_link(
        "meetings/2024-06-03 Standup.md",
        "blk-q1w2e3",
        "alice: The deploy to\nstaging failed twice on Tuesday.",
    )
    assert link == (
        "[[meetings/2024-06-03 Standup#^blk-q1w2e3|2024-06-03 Standup › alice: The deploy to "
        "staging failed …]]"
    )
    assert block_link("Top.md", "b", "short text", in_table=True) == "[[Top#^b\\|Top › short text]]"


@pytest.mark.parametrize("bad", ["|", "]]", "#", "^", "[["])
def test_link_display_text_cannot_break_the_link(bad: str) -> None:
    link = block_link("a/Note.md", "blk-1", f"x {bad} y")
    [match] = WIKILINK.findall(link)
    assert match[0] == "a/Note#^blk-1"
    assert bad not in match[1]
    assert link.count("[[") == 1 and link.count("]]") == 1
    assert escape_link_text("a|b]]c#d^e") == "a¦b⟧⟧c＃dˆe"


def test_note_text_is_shown_as_plain_text() -> None:
    hostile = "*bold* <!-- x --> [[Link]] #tag ^blk-1 ==mark== %%c%% $x$ a|b `code` &amp;"
    rendered = MarkdownIt("commonmark").render(escape_text(hostile))
    assert "<em>" not in rendered and "<code>" not in rendered and "<!--" not in rendered
    # What the reader sees is the original text (as HTML-escaped characters).
    plain = re.sub(r"<[^>]+>", "", rendered).strip()
    assert plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&") == hostile
    assert escape_text("a\n  b") == "a b"


def test_bins_fold_hundredths_into_ten_bins() -> None:
    assert bin_counts({0: 1, 9: 2, 10: 3, 55: 4, 99: 5, 100: 6}) == [3, 3, 0, 0, 0, 4, 0, 0, 0, 11]
    assert bin_counts({}) == [0] * 10
    assert bin_counts({-3: 1, 250: 2}) == [1] + [0] * 8 + [2]
    assert bin_counts({50: 1}, bins=4) == [0, 0, 1, 0]


def test_full_dashboard_sections_and_charts() -> None:
    text = render_dashboard(_data(dead_letters=[DeadLetter("blk-9", "x.md", "boom | bang")]), WHEN)

    assert text.startswith("# aclarai dashboard\n\nWritten by aclarai at 2024-06-03T09:00:00Z.")
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert "- **0.40** The deploy failed twice. ([[meetings/2024-06-03 Standup#^blk-q1w2e3|" in text
    assert "    - entailed 0.50 · coverage 0.40 · decontextualization 0.30" in text
    assert "    - Weakly supported: Only partly said." in text
    assert "- model: offline:1" in text
    assert "- dead letters: 1\n    - [[x#^blk-9|x]]: boom \\| bang" in text
    charts = _mermaid_blocks(text)
    assert len(charts) == 4
    assert charts[0].splitlines() == [
        "xychart-beta",
        '    title "Entailment"',
        '    x-axis ["0.0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"]',
        '    y-axis "claims" 0 --> 11',
        "    bar [3, 3, 0, 0, 0, 4, 0, 0, 0, 11]",
    ]
    assert charts[3].splitlines()[-1] == "    bar [0.810]"
    assert "(2024-06-03 to 2024-06-03). Latest: 2024-06-03, 0.81 over 4 claims." in text
    assert '    x-axis ["06-03"]' in charts[3]


def test_notes_table_is_one_row_per_note_with_escaped_cells() -> None:
    weak = _claim(text="a | b", block_text="bob: x | y")
    notes = [
        NoteStats("n/One.md", 2, 3, 2, 0.5, weak, WHEN),
        NoteStats("Two.md", 1, 0, 0, None, None, None),
    ]
    text = render_dashboard(_data(notes=notes), WHEN)
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    cells = [t.content for t in tokens if t.type == "inline" and _in_table(tokens, t)]
    assert cells[:6] == [
        "note",
        "blocks",
        "claims",
        "mean quality",
        "weakest claim",
        "last evaluated",
    ]
    one = cells[6:12]
    assert one[:4] == ["[[n/One]]", "2", "3", "0.50"]
    # The table keeps its six cells; the reader sees the pipe and the link whole.
    assert one[4] == (
        "0.40 a | b [[meetings/2024-06-03 Standup#^blk-q1w2e3|2024-06-03 Standup › bob: x ¦ y]]"
    )
    assert cells[12:18] == ["[[Two]]", "1", "0", "", "", ""]


def _in_table(tokens: list[Token], target: Token) -> bool:
    depth = 0
    for token in tokens:
        if token.type == "table_open":
            depth += 1
        elif token.type == "table_close":
            depth -= 1
        if token is target:
            return depth > 0
    return False


def test_empty_vault_renders_every_section_without_charts() -> None:
    text = render_dashboard(DashboardData(threshold=0.7, model="offline:1"), WHEN)

    assert _mermaid_blocks(text) == []
    for heading in (
        "## Claims below quality 0.70\n\nNone.",
        "## Notes\n\nNo notes with aclarai blocks yet.",
        "## Score distributions\n\nNo scores yet.",
        "## Quality over time\n\nNo scores yet.",
        "## Failed evaluations\n\nNone.",
        "## Queue\n\n- queue depth: 0\n- paused: no\n- dead letters: 0",
    ):
        assert heading in text


def test_failed_evaluations_show_null_scores_and_status() -> None:
    failed = _claim("c9", None, entailed_score=None, status="timeout", verdict=None)
    text = render_dashboard(_data(failed=[failed], failed_total=3), WHEN)
    assert "The first 1 of 3, retried on every resync" in text
    assert "    - entailed null · coverage 0.40 · decontextualization 0.30; status: timeout" in text


def test_long_lists_say_how_many_are_left_out() -> None:
    text = render_dashboard(_data(low_quality_total=250), WHEN)
    assert "The first 1 of 250, by reason, worst first (`aclarai claims` lists them all)." in text


def test_weak_claims_are_grouped_by_what_to_fix_and_the_block_rule_is_said() -> None:
    claims = [
        _claim("c1", 0.30, entailed_score=0.9, coverage_score=0.1, decontextualization_score=1.0,
               justification="coverage 0.10: leaves out Berlin. Supported: all words appear."),
        _claim("c2", 0.40, entailed_score=0.9, coverage_score=1.0, decontextualization_score=0.2,
               justification="decontextualization 0.20: 'It' refers to something outside."),
        _claim("c3", 0.50, entailed_score=0.1, coverage_score=1.0, decontextualization_score=1.0,
               verdict="unsupported", justification="entailment 0.10: the source says no."),
        _claim("c4", 0.60, entailed_score=0.9, coverage_score=0.3, decontextualization_score=1.0),
    ]  # fmt: skip
    text = render_dashboard(_data(low_quality=claims, low_quality_total=4), WHEN)
    section = text.split("## Claims below quality 0.70", 1)[1].split("\n## ", 1)[0]
    headings = re.findall(r"^### (.+)$", section, re.MULTILINE)
    assert headings == [
        "Not said by the note (1)",
        "Leaves out a name or number (2)",
        "Needs context (1)",
    ]
    leaves_out = section.split("### Leaves out a name or number (2)", 1)[1].split("###", 1)[0]
    assert leaves_out.index("**0.30**") < leaves_out.index("**0.60**"), "worst first in a group"
    assert "shows 0.40" in section and "the lowest" in section
    assert "    - coverage 0.10: leaves out Berlin. Supported: all words appear.\n" in section
    assert "    - entailment 0.10: the source says no.\n" in section


def test_no_churn_when_only_the_time_differs() -> None:
    first = render_dashboard(_data(), "2024-06-03T09:00:00Z")
    later = render_dashboard(_data(), "2024-06-04T10:00:00Z")
    assert first != later
    assert same_dashboard(first, later)
    assert not same_dashboard(first, render_dashboard(_data(queue_depth=1), WHEN))
    assert not same_dashboard(first, render_dashboard(_data(paused=True), WHEN))


def test_notes_table_lists_the_weakest_notes_first_and_at_most_its_cap() -> None:
    notes = [NoteStats(f"n{i:04d}.md", 1, 1, 1, (i % 7) / 10, None, WHEN) for i in range(600)]
    notes.append(NoteStats("unscored.md", 1, 0, 0, None, None, None))
    text = render_dashboard(_data(notes=notes), WHEN)
    rows = [line for line in text.splitlines() if line.startswith("| [[")]
    assert len(rows) == NOTES_SHOWN
    assert f"The {NOTES_SHOWN} of 601 notes of lowest mean quality." in text
    assert rows[0].startswith("| [[n0000]] | 1 | 1 | 0.00 |")
    assert rows[1].startswith("| [[n0007]] |")
    small = render_dashboard(_data(notes=notes[:3] + notes[-1:]), WHEN)
    rows = [line.split(" | ")[0] for line in small.splitlines() if line.startswith("| [[")]
    assert rows == ["| [[n0000]]", "| [[n0001]]", "| [[n0002]]", "| [[unscored]]"]


def test_quality_over_time_shows_the_last_days_with_legible_labels() -> None:
    days = [DailyQuality(f"2024-{m:02d}-{d:02d}", 0.5, 1) for m in (11, 12) for d in range(1, 29)]
    [*_, chart] = _mermaid_blocks(render_dashboard(_data(daily=days), WHEN))
    axis = chart.splitlines()[2]
    last = days[-DAYS_SHOWN:]
    assert axis == "    x-axis [" + ", ".join(f'"{d.day[5:]}"' for d in last) + "]"
    assert axis.endswith('"12-28"]')
    assert axis.count(",") == DAYS_SHOWN - 1
    across = [DailyQuality("2024-12-31", 0.5, 1), DailyQuality("2025-01-01", 0.7, 1)]
    [*_, chart] = _mermaid_blocks(render_dashboard(_data(daily=across), WHEN))
    assert '    x-axis ["2024-12-31", "2025-01-01"]' in chart
    assert "    line [0.500, 0.700]" in chart


# --- issue 21, item 8: the dashboard as a reader sees it ------------------------------------


@pytest.mark.parametrize(
    ("block_text", "label"),
    [
        ("See [[Canvas|lærred]] for the docs.", "Note › See lærred for the docs."),
        ("[YAML](https://yaml.org/)-format properties.", "Note › YAML-format properties."),
        ("# Accepted file formats", "Note › Accepted file formats"),
        ("- A list item, [[Accepted file formats|file types]].", "Note › A list item, file types."),
        ("It’s **bold** and ==marked==.", "Note › It's bold and marked."),
    ],
    ids=["wikilink_alias", "markdown_link", "heading", "list_item", "emphasis_and_quotes"],
)
def test_labels_show_the_rendered_text(block_text: str, label: str) -> None:
    link = block_link("a/Note.md", "blk-1", block_text)
    assert link == f"[[a/Note#^blk-1|{label}]]"
    assert not {"⟦", "⟧", "¦", "＃"} & set(link)


def test_labels_stay_safe_when_the_rendered_text_holds_link_syntax() -> None:
    # Code keeps its characters when rendered; in a label they must not end the link.
    link = block_link("Note.md", "blk-1", "Type `]] | #` here", in_table=True)
    [match] = WIKILINK.findall(link)
    assert match == ("Note#^blk-1\\", "Note › Type ⟧⟧ ¦ ＃ here")


def test_claim_text_is_shown_rendered() -> None:
    text = render_dashboard(_data(low_quality=[_claim(text="The app has no [[Ribbon]].")]), WHEN)
    assert "- **0.40** The app has no Ribbon. ([[meetings/" in text


@pytest.mark.parametrize("threshold", [0.7, 0.4, 0.5, 0.05, 0.2, 0.99, 1.0, 0.3])
def test_a_claim_shown_as_the_threshold_is_not_below_it(threshold: float) -> None:
    bound = shown_threshold(threshold)
    near = [bound, math.nextafter(bound, 0), math.nextafter(bound, 1), threshold - 0.005]
    near += [threshold - k / 1000 for k in range(12)] + [threshold + 0.001]
    for quality in near:
        shown = float(f"{quality:.2f}")
        assert (quality < bound) == (shown < threshold), (threshold, quality, f"{quality:.2f}")
    assert 0.694 < shown_threshold(0.70) <= 0.697


def test_each_entry_says_the_verdict_once() -> None:
    claim = _claim(
        verdict="supported",
        justification="Supported: 100% of the claim's content words appear in the source.",
    )
    text = render_dashboard(_data(low_quality=[claim]), WHEN)
    assert "    - Supported: 100\\% of the claim's content words appear in the source.\n" in text
    assert text.lower().count("supported") == 1
    assert verdict_text("weakly_supported", "Only partly said.") == (
        "Weakly supported: Only partly said."
    )
    assert verdict_text("unsupported", None) == "Unsupported"
    assert verdict_text(None, "No verdict, a reason.") == "No verdict, a reason."


def test_a_chart_with_one_day_draws_a_bar() -> None:
    [*_, one] = _mermaid_blocks(render_dashboard(_data(), WHEN))
    assert one.splitlines()[-2:] == ['    y-axis "quality" 0 --> 1', "    bar [0.810]"]
    two = [DailyQuality("2024-06-03", 0.81, 4), DailyQuality("2024-06-04", 0.5, 1)]
    [*_, chart] = _mermaid_blocks(render_dashboard(_data(daily=two), WHEN))
    assert chart.splitlines()[-1] == "    line [0.810, 0.500]"


def test_timestamps_do_not_wrap_in_the_table() -> None:
    text = render_dashboard(_data(), WHEN)
    [row] = [line for line in text.splitlines() if line.startswith("| [[meetings/")]
    cell = row.split(" | ")[-1].removesuffix(" |")
    assert cell == "2024\u201106\u201103\u00a009:00\u00a0UTC"
    assert not re.search(r"[\s-]", cell.replace("\u00a0", "")), "no place to break the line"
    assert unbroken_time("soon ish") == "soon\u00a0ish"
