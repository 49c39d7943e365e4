"""DiscordChatExporter JSON."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from aclarai.parsers.exports import DiscordReader

SAMPLE = next((Path(__file__).parent / "samples" / "discord").glob("*.json"))


def test_sample_keeps_spoken_messages_with_nicknames_and_mentions() -> None:
    [help_channel] = DiscordReader().parse(SAMPLE.read_bytes(), SAMPLE.name)
    assert (help_channel.title, help_channel.id, help_channel.format) == (
        "Rust Learners #help",
        "1045678901234567999",
        "discord",
    )
    # The join and the pin notice are not utterances; the attachment without text shows its file.
    assert [(m.speaker, m.text, m.id) for m in help_channel.messages] == [
        (
            "theo.dev",
            "Why does the borrow checker reject `let r = &mut v; v.push(1);`?",
            "1247000000000000002",
        ),
        (
            "Mira (mod)",
            "@theo.dev because `r` is still alive when you push.\nDrop it first.",
            "1247000000000000003",
        ),
        ("theo.dev", "[image: error.png]", "1247000000000000004"),
        ("theo.dev", "Thanks, that fixed it!", "1247000000000000006"),
    ]
    assert [m.created_at for m in help_channel.messages] == [
        datetime(2024, 6, 3, 9, 0, 1, 456000, tzinfo=UTC),
        datetime(2024, 6, 3, 9, 2, 30, 789000, tzinfo=timezone(timedelta(hours=2))),
        datetime(2024, 6, 3, 9, 3, tzinfo=UTC),
        datetime(2024, 6, 3, 9, 5, 10, tzinfo=UTC),
    ]
    assert help_channel.created_at == help_channel.messages[0].created_at
