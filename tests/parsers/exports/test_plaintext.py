"""Plain `speaker: text` transcripts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from aclarai.parsers import ParseError
from aclarai.parsers.exports import PlainTextReader

SAMPLE = Path(__file__).parent / "samples" / "plaintext" / "2024-06-03 standup.txt"


def test_sample_with_time_prefixes_and_continuation_lines() -> None:
    [standup] = PlainTextReader().parse(SAMPLE.read_bytes(), SAMPLE.name)
    assert (standup.title, standup.id, standup.format) == ("2024-06-03 standup", None, "plaintext")
    # Times without a date take the file name's date, then the last full date seen.
    assert [(m.speaker, m.text, m.created_at) for m in standup.messages] == [
        (
            "alice",
            "The deploy to staging failed twice on Tuesday.\nIt failed again this morning.",
            datetime(2024, 6, 3, 9, 14, tzinfo=UTC),
        ),
        (
            "bob",
            "I rolled back to v2.3 and it is stable now.",
            datetime(2024, 6, 3, 9, 15, tzinfo=UTC),
        ),
        (
            "alice",
            "Good. Can you write down what you changed?\nConfig and the migration, I mean.",
            datetime(2024, 6, 3, 9, 17, tzinfo=UTC),
        ),
        ("bob", "Done, it is in the runbook.", datetime(2024, 6, 4, 10, 0, tzinfo=UTC)),
        ("alice", "Thanks: closing the ticket.", datetime(2024, 6, 4, 10, 2, tzinfo=UTC)),
    ]


def test_one_message_per_line_without_times_and_a_preamble() -> None:
    text = (
        "Call with the landlord\nMe: Is the heating fixed?\nLandlord:\nNot yet.\nMe: When then?\n"
    )
    [call] = PlainTextReader().parse(text.encode(), "call.txt")
    assert [(m.speaker, m.text, m.created_at) for m in call.messages] == [
        ("Me", "Is the heating fixed?", None),
        ("Landlord", "Not yet.", None),
        ("Me", "When then?", None),
    ]


def test_invalid_time_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="line 2: invalid time"):
        PlainTextReader().parse(b"[09:00] a: x\n[25:99] b: y\n", "2024-01-01.txt")


def test_invalid_date_is_a_parse_error_but_a_date_like_file_name_is_not() -> None:
    with pytest.raises(ParseError, match="line 1: invalid date 2024-13-45"):
        PlainTextReader().parse(b"[2024-13-45 09:00] a: x\n", "chat.txt")
    [chat] = PlainTextReader().parse(b"[09:00] a: x\n", "2024-99-99 chat.txt")
    assert chat.messages[0].created_at is None


def test_no_speaker_lines_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="no 'speaker: text' lines"):
        PlainTextReader().parse(b"Just a paragraph of prose.\n", "prose.txt")


@pytest.mark.parametrize(
    "text",
    [
        "# Log\n\nalice: hi\nbob: hello\nalice: bye\n",  # a heading makes it Markdown
        "Name: Alice\nRole: admin\nTeam: core\nSince: 2020\n",  # keys, not turns
        "alice: hi\nsome prose\nmore prose\nand more\nalice: bye\n",  # mostly not turns
        "Visit https://example.com: it has docs\nor https://example.org: the same\n",
    ],
)
def test_detection_is_conservative(text: str) -> None:
    assert not PlainTextReader().detect(text.encode(), "x.txt")
