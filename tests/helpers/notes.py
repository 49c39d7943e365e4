"""Hypothesis strategies for notes, and what a note says once aclarai's comments are cut out."""

from __future__ import annotations

from hypothesis import strategies as st

from aclarai.parsers import scan_line

PARTS = (
    "The deploy to staging failed twice on Tuesday.",
    "Paris hosted the summit with 40 delegates.\nIt ran for three days.",
    "The invoice for order 5521 was paid on 3 June. ^invoice-5521",
    "- Alice owns the fix.\n- Bob reviews it ^bob-1\n  - nested detail",
    "1.  first point\n2.  second point",
    "- \n- [ ] \n- [x] Call the plumber",
    "# A heading",
    "## Heading\nText right under it.",
    "```python\nprint('not a block')\n\nprint('still code')\n```",
    "    indented code",
    "$$\na = b\n\nc = d\n$$",
    "%%\nhidden draft\n\nstill hidden\n%%",
    "A %%half hidden%% sentence.",
    "> [!note]\n> A callout stays a callout.",
    "| day | failures |\n|-----|----------|\n| Tue | 2        |",
    "![[diagram.png]]",
    "<div>raw html</div>",
    "---",
    "^my-own-anchor",
    "Trailing spaces here.   ",
)


@st.composite
def ordinary_notes(draw: st.DrawFn) -> str:
    """An ordinary note of the constructs adopt meets, with any line ending, a BOM or
    frontmatter, and any end of file."""
    parts = draw(st.lists(st.sampled_from(PARTS), min_size=1, max_size=8))
    gaps = draw(st.lists(st.sampled_from(["\n\n", "\n\n\n", "\n"]), min_size=len(parts)))
    body = "".join(part + gap for part, gap in zip(parts, gaps, strict=False))
    head = draw(st.sampled_from(["", "\ufeff", "---\ntags: [a]\n---\n", "\ufeff# Title\n\n"]))
    text = head + body.rstrip("\n") + draw(st.sampled_from(["", "\n", "\n\n"]))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text


def without_aclarai_comments(text: str) -> tuple[list[str], str]:
    """Every line (split on LF only, like the parser) with its aclarai comments cut out, lines
    holding only comments dropped, and how the note ends.

    Line endings are compared apart from the lines: rewriting a comment zone moves the ending
    of its last line (LF, CRLF, a final lone CR or none) to the zone's new last line.
    """
    kept = []
    for line in text.split("\n"):
        # The line's own CR goes before its comments are cut: ":\r<!-- … -->" keeps its CR.
        piece = line.removesuffix("\r")
        found = scan_line(piece)
        cut = []
        position = 0
        for comment in found.comments:
            cut.append(piece[position : comment.start])
            position = comment.end
        cut.append(piece[position:])
        remainder = "".join(cut)
        if not found.comments or remainder.strip():
            kept.append(remainder)
    return kept, final_ending(text)


def final_ending(text: str) -> str:
    return next(e for e in ("\r\n", "\n", "\r", "") if text.endswith(e))
