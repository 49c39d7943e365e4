"""Claude's conversations.json."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from aclarai.parsers.exports import ClaudeReader

SAMPLE = Path(__file__).parent / "samples" / "claude" / "conversations.json"


def test_sample_reads_text_items_and_flat_text() -> None:
    regex, haiku = ClaudeReader().parse(SAMPLE.read_bytes(), "conversations.json")

    assert (regex.title, regex.id, regex.format) == (
        "Regex for ISO dates",
        "28d595a3-5db0-492d-a49a-af74f13de505",
        "claude",
    )
    assert regex.created_at == datetime(2024, 6, 3, 9, 14, 0, 123456, tzinfo=UTC)
    # Tool use and its result are not said by anyone; the attachment-only message shows its file.
    assert [(m.speaker, m.text, m.id) for m in regex.messages] == [
        (
            "user",
            "How do I match an ISO date like 2024-06-03 in Python?",
            "b1e8c0a2-1111-4a1a-9a1a-000000000001",
        ),
        (
            "assistant",
            'Use a pattern with three groups:\n\n`re.fullmatch(r"(\\d{4})-(\\d{2})-(\\d{2})", s)` '
            "matches it.",
            "b1e8c0a2-1111-4a1a-9a1a-000000000002",
        ),
        ("user", "[file: dates.csv]", "b1e8c0a2-1111-4a1a-9a1a-000000000003"),
        ("user", "Thanks, that works.", "b1e8c0a2-1111-4a1a-9a1a-000000000004"),
    ]
    assert regex.messages[1].created_at == datetime(2024, 6, 3, 9, 14, 9, 500000, tzinfo=UTC)

    assert haiku.title == "Untitled conversation"
    assert [(m.speaker, m.text) for m in haiku.messages] == [
        ("user", "Give me a haiku about rain."),
        (
            "assistant",
            "Soft rain on the roof\nthe gutters hum their one note\nnight leans on the glass",
        ),
    ]
    assert haiku.created_at == datetime(2023, 11, 20, 18, 2, 44, tzinfo=UTC)
