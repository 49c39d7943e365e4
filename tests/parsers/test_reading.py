"""The text a reader sees: every Obsidian construct, and which lines are not prose."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aclarai.parsers import LineKind, line_kinds, prose_text, reader_text
from tests.helpers.vault import KEPANO


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        # The examples, byte for byte.
        ("The app has no [[Ribbon]].", "The app has no Ribbon."),
        ("[[Accepted file formats|file types]]", "file types"),
        ("[YAML](https://yaml.org/)-format", "YAML-format"),
        ("- The app has no Ribbon.", "The app has no Ribbon."),
        ("It’s", "It's"),
        # Wikilinks.
        ("See [[Note#Heading]].", "See Note > Heading."),
        ("See [[Note#Heading#Sub]].", "See Note > Heading > Sub."),
        ("See [[#Heading]].", "See Heading."),
        ("See [[Note#^abc123]].", "See Note."),
        ("See [[Note#^abc123|this paragraph]].", "See this paragraph."),
        ("See [[Folder/Note]].", "See Folder/Note."),
        ("| [[Canvas\\|lærred]] |", "| lærred |"),
        ("Before ![[diagram.png]] after.", "Before after."),
        ("Before ![[Other note#Part]] after.", "Before after."),
        # Markdown links, images, autolinks, HTML.
        ("Read [the guide](https://example.com/a_(b)) now.", "Read the guide now."),
        ('Read [the guide](<My Note.md> "title") now.', "Read the guide now."),
        ("Read [the guide][ref] now.", "Read the guide now."),
        ("A picture ![a cat](cat.png) here.", "A picture here."),
        ("Mail <https://obsidian.md/help> today.", "Mail https://obsidian.md/help today."),
        ("Plain https://obsidian.md stays.", "Plain https://obsidian.md stays."),
        ("Press <kbd>Ctrl</kbd> and <b>go</b>.", "Press Ctrl and go."),
        ("One<br>two", "One two"),
        ("Tom &amp; Jerry", "Tom & Jerry"),
        # Emphasis and friends.
        ("It is **very** *much* ***so*** __now__ _here_.", "It is very much so now here."),
        ("A **bold *and italic* mix**.", "A bold and italic mix."),
        (
            "Keep snake_case_names and 2 * 3 * 4 intact.",
            "Keep snake_case_names and 2 * 3 * 4 intact.",
        ),
        ("It was ~~Monday~~ Tuesday.", "It was Monday Tuesday."),
        ("This is ==important== text.", "This is important text."),
        ("Run `git [[status]] *now*` first.", "Run git [[status]] *now* first."),
        ("Use `` a`b `` here.", "Use a`b here."),
        ("Mass is $E = mc^2$ here.", "Mass is E = mc^2 here."),
        ("It costs $5 and $10 now.", "It costs $5 and $10 now."),
        # Escapes, quotes, footnotes, block ids, tags.
        ("Not \\*emphasis\\* and not \\[[a link]].", "Not *emphasis* and not [[a link]]."),
        ("A path C:\\\\temp stays.", "A path C:\\temp stays."),
        ("“Quoted” and ‘single’ and „low“.", '"Quoted" and \'single\' and "low".'),
        ("A fact.[^1] Another.^[inline note]", "A fact. Another."),
        ("[^1]: The footnote text.", "The footnote text."),
        ("A paragraph with an id. ^abc-123", "A paragraph with an id."),
        ("Tagged #project/alpha today.", "Tagged #project/alpha today."),
        # Line structure.
        ("# Title", "Title"),
        ("## Title ##", "Title"),
        ("#notaheading here", "#notaheading here"),
        ("1. first\n2) second", "first\n\nsecond"),
        ("- [ ] Call the plumber\n- [x] Paid", "Call the plumber\n\nPaid"),
        ("* one\n+ two", "one\n\ntwo"),
        ("> quoted line\n> goes on", "quoted line\ngoes on"),
        ("> [!note] Title\n> Body.", "Title\n\nBody."),
        ("> [!tip]- Folded title\n> Body.", "Folded title\n\nBody."),
        ("> [!warning]\n> Body.", "Body."),
        ("# Heading\nText under it.", "Heading\n\nText under it."),
        ("soft\nwrapped line", "soft\nwrapped line"),
        # What shows no words.
        ("Visible %%hidden%% text.", "Visible text."),
        ("Before\n%%\nhidden\n\nstill hidden\n%%\nAfter", "Before\n\nAfter"),
        ("Before <!-- hidden --> after", "Before after"),
        # Code shows comment openers as typed; only those outside it open a comment.
        ("`%%` code and %% out", "%% code and"),
        ("Run `a %% b` and `<!--` here.", "Run a %% b and <!-- here."),
        ("A %%hidden `x%% and `%%`", "A and %%"),
        ("`` %% `` then %%gone%% and `%%`", "%% then and %%"),
        ("Unclosed `%% is a comment", "Unclosed `"),
        ("Before\n<!--\nhidden\n-->\nAfter", "Before\n\nAfter"),
        ("---\ntags: [a]\n---\nBody.", "Body."),
        ("\ufeff# Title after a byte-order mark", "Title after a byte-order mark"),
        ("Above\n\n---\n\nBelow", "Above\n\nBelow"),
        ("| a | b |\n|---|:-:|\n| 1 | 2 |", "| a | b |\n\n| 1 | 2 |"),
        ("[ref]: https://example.com", ""),
        ("^abc-123", ""),
        ("", ""),
        ("   \n\t\n", ""),
        ("a\r\nb", "a\nb"),
    ],
)
def test_reader_text(markdown: str, expected: str) -> None:
    assert reader_text(markdown) == expected


@pytest.mark.parametrize(
    ("markdown", "reader", "prose"),
    [
        ("```python\nprint('x')\n```\nAfter.", "print('x')\n\nAfter.", "After."),
        ("~~~\ncode\n~~~", "code", ""),
        (
            "Text.\n\n    indented code\n\nMore.",
            "Text.\n\n    indented code\n\nMore.",
            "Text.\n\nMore.",
        ),
        ("$$\na = b\n\nc = d\n$$\nAfter.", "a = b\n\nc = d\n\nAfter.", "After."),
        ("$$x^2$$", "x^2", ""),
        ("<div>\nInside <b>html</b>\n</div>\n\nAfter.", "Inside html\n\nAfter.", "After."),
        ("![[Embedded note]]", "", ""),
        ("<span>Warning:</span> the server is down.", *["Warning: the server is down."] * 2),
        ("<img src='chart.png'>\n\nAfter.", "After.", "After."),
        ("- [ ] Call the plumber", "Call the plumber", ""),
        (
            "- [x] Called the plumber\n- The plumber came.",
            "Called the plumber\n\nThe plumber came.",
            "The plumber came.",
        ),
        ("> ```\n> code in a callout\n> ```\n> After.", "code in a callout\n\nAfter.", "After."),
    ],
)
def test_prose_text_leaves_out_what_is_not_prose(markdown: str, reader: str, prose: str) -> None:
    assert reader_text(markdown) == reader
    assert prose_text(markdown) == prose


def test_line_kinds() -> None:
    text = "\n".join(
        [
            "---",
            "title: x",
            "---",
            "Prose.",
            "- [ ] A task",
            "",
            "```",
            "code",
            "```",
            "$$",
            "",
            "$$",
            "%% a",
            "comment %%",
            "<details>",
            "",
            "![[embed]]",
            "***",
            "    indented",
        ]
    )
    assert line_kinds(text) == [
        LineKind.FRONT_MATTER,
        LineKind.FRONT_MATTER,
        LineKind.FRONT_MATTER,
        LineKind.PROSE,
        LineKind.TASK,
        LineKind.BLANK,
        LineKind.CODE,
        LineKind.CODE,
        LineKind.CODE,
        LineKind.MATH,
        LineKind.MATH,
        LineKind.MATH,
        LineKind.COMMENT,
        LineKind.COMMENT,
        LineKind.HTML,
        LineKind.BLANK,
        LineKind.EMBED,
        LineKind.MARKUP,
        LineKind.PROSE,
    ]


def test_nested_list_items_are_not_indented_code() -> None:
    text = "- parent\n\n    - child item\n\tmore text"
    assert LineKind.CODE not in line_kinds(text)
    assert prose_text(text) == "parent\n\nchild item\nmore text"


def test_code_spans_and_comments_are_read_in_linear_time() -> None:
    line = "`%%` <!-- `x` --> %%" * 20_000 + " `" * 20_000
    assert reader_text(line).startswith("%%")
    assert line_kinds(line) == [LineKind.PROSE]


def test_an_unclosed_fence_runs_to_the_end() -> None:
    assert prose_text("Before.\n```\nx = 1\nAfter?") == "Before."


@given(st.text(alphabet=st.sampled_from(list("ab *_~=`\\[]()!#>-|^$%<>\n\t1.:’“&;")), max_size=80))
def test_rendering_is_total(markdown: str) -> None:
    for render in (reader_text, prose_text):
        text = render(markdown)
        assert text == text.strip()
        assert "\n\n\n" not in text
    assert len(line_kinds(markdown)) == len(markdown.split("\n"))


def test_plain_text_renders_as_itself() -> None:
    text = "alice: The deploy to staging failed twice on Tuesday, and bob rolled back to v2.3."
    assert reader_text(text) == text == prose_text(text)


def test_kepano_vault_renders_without_syntax(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(KEPANO, vault)
    notes = sorted(vault.rglob("*.md"))
    assert len(notes) > 50
    rendered = [reader_text(note.read_text(encoding="utf-8")) for note in notes]
    text = "\n".join(rendered)
    for syntax in ("[[", "]]", "![", "](", "%%", "<!--", "**", "==", "’"):
        assert syntax not in text, syntax
    # Templates and tags survive as words; nothing a reader sees is lost wholesale.
    assert sum(map(len, rendered)) > 0.5 * sum(len(n.read_text(encoding="utf-8")) for n in notes)
