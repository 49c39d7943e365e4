"""WhatsApp .txt exports: Android and iOS forms, 12- and 24-hour clocks, either date order."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aclarai.parsers import ParseError
from aclarai.parsers.exports import Conversation, WhatsAppReader

SAMPLES = Path(__file__).parent / "samples" / "whatsapp"


def _parse(text: str, name: str = "WhatsApp Chat with Test.txt") -> list[Conversation]:
    return WhatsAppReader().parse(text.encode(), name)


def test_en_us_android_sample() -> None:
    path = SAMPLES / "WhatsApp Chat with Sam Carter.txt"
    [chat] = WhatsAppReader().parse(path.read_bytes(), path.name)
    assert (chat.title, chat.id, chat.format) == ("Sam Carter", None, "whatsapp")
    # The encryption notice, "added Alex" and the deleted message are not utterances; the media
    # keeps its place.
    assert [(m.speaker, m.text, m.created_at) for m in chat.messages] == [
        ("Sam Carter", "Are we still on for tomorrow?", datetime(2023, 12, 31, 21, 5, tzinfo=UTC)),
        (
            "Jo",
            "Yes! Meet at 10\nBring the tickets\nand the map",
            datetime(2023, 12, 31, 21, 7, tzinfo=UTC),
        ),
        ("Jo", "[media]", datetime(2023, 12, 31, 21, 8, tzinfo=UTC)),
        ("Sam Carter", "Happy new year 🎉", datetime(2024, 1, 1, 0, 15, tzinfo=UTC)),
        ("Alex", "Thanks for adding me: see you at 10", datetime(2024, 1, 1, 12, 20, tzinfo=UTC)),
        ("Jo", "Running late, sorry", datetime(2024, 1, 2, 8, 30, tzinfo=UTC)),
    ]
    assert chat.created_at == datetime(2023, 12, 31, 21, 5, tzinfo=UTC)


def test_german_ios_sample_with_crlf_and_lrm_marks() -> None:
    path = SAMPLES / "WhatsApp Chat - Familie.txt"
    [chat] = WhatsAppReader().parse(path.read_bytes(), path.name)
    assert chat.title == "Familie"
    # iOS marks its own text (notice, group creation, media) with U+200E; the media keeps its
    # place, the rest is skipped.
    assert [(m.speaker, m.text, m.created_at) for m in chat.messages] == [
        ("Anna", "Hallo zusammen", datetime(2024, 6, 3, 21, 5, 30, tzinfo=UTC)),
        (
            "Ben",
            "Wer bringt morgen den Kuchen mit?\nIch kann Getränke holen.",
            datetime(2024, 6, 3, 21, 6, 2, tzinfo=UTC),
        ),
        ("Anna", "[image]", datetime(2024, 6, 3, 21, 7, 11, tzinfo=UTC)),
        ("Ben", "[image]", datetime(2024, 6, 3, 21, 7, 40, tzinfo=UTC)),
        ("Anna", "Ich bringe den Kuchen 🎂", datetime(2024, 6, 4, 7, 45, tzinfo=UTC)),
        ("Ben", "Danke!", datetime(2024, 6, 13, 18, 0, tzinfo=UTC)),
    ]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        # Nothing above 12: 24-hour files are day-first, AM/PM files month-first.
        (["01/02/24, 10:00 - A: x"], datetime(2024, 2, 1, 10, 0, tzinfo=UTC)),
        (["01/02/24, 10:00 AM - A: x"], datetime(2024, 1, 2, 10, 0, tzinfo=UTC)),
        # One component over 12 anywhere settles the whole file.
        (
            ["01/02/24, 10:00 - A: x", "01/13/24, 10:00 - A: y"],
            datetime(2024, 1, 2, 10, 0, tzinfo=UTC),
        ),
        (
            ["01/02/24, 10:00 AM - A: x", "13/02/24, 10:00 AM - A: y"],
            datetime(2024, 2, 1, 10, 0, tzinfo=UTC),
        ),
        (["2024-02-01 10:00 - A: x"], datetime(2024, 2, 1, 10, 0, tzinfo=UTC)),
        (["[2024-02-01 10:00:05] A: x"], datetime(2024, 2, 1, 10, 0, 5, tzinfo=UTC)),
        (["12/31/23, 12:05\u202fa.m. - A: x"], datetime(2023, 12, 31, 0, 5, tzinfo=UTC)),
    ],
)
def test_date_order_is_decided_per_file(lines: list[str], expected: datetime) -> None:
    [chat] = _parse("\n".join(lines) + "\n")
    assert chat.messages[0].created_at == expected


def test_contradicting_dates_are_a_parse_error_naming_the_line() -> None:
    with pytest.raises(ParseError, match=r"line 2: month must be in 1\.\.12"):
        _parse("13/01/24, 10:00 - A: x\n01/13/24, 10:00 - A: y\n")


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("WhatsApp Chat with Sam Carter.txt", "Sam Carter"),
        ("WhatsApp-Chat mit Oma.txt", "Oma"),
        ("WhatsApp Chat - Familie/_chat.txt", "Familie"),
        ("exports/holiday.txt", "holiday"),
    ],
)
def test_title_comes_from_the_file_name(name: str, title: str) -> None:
    [chat] = _parse("1/2/24, 10:00 AM - A: x\n", name)
    assert chat.title == title


def test_text_without_message_lines_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="no WhatsApp message lines"):
        _parse("just some text\n")


@pytest.mark.parametrize(
    "text",
    [
        "I sent you the contract (file attached)",
        "I think the video omitted",
        "the audio omitted",
        "my holiday photos.zip (file attached)",
    ],
)
@pytest.mark.parametrize("start", ["12/31/23, 9:05 PM - ", "[31/12/2023, 21:05:07] "])
def test_messages_that_read_like_media_lines_are_kept_verbatim(start: str, text: str) -> None:
    [chat] = _parse(f"{start}Sam: {text}\n")
    assert [m.text for m in chat.messages] == [text]


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (
            "12/31/23, 9:05 PM - Sam: IMG-20231231-WA0001.jpg (file attached)",
            "[image: IMG-20231231-WA0001.jpg]",
        ),
        ("12/31/23, 9:05 PM - Sam: video omitted", "[video]"),
        (
            "[31/12/2023, 21:05:07] Sam: "
            "\u200eReport 2023.pdf \u2022 3 pages \u200edocument omitted",
            "[file]",
        ),
        ("[31/12/2023, 21:05:07] Sam: \u200emy plan.pdf (file attached)", "[file: my plan.pdf]"),
    ],
)
def test_whatsapp_media_lines_become_placeholders(line: str, shown: str) -> None:
    [chat] = _parse(line + "\n")
    assert [m.text for m in chat.messages] == [shown]


# Each locale's line start, written the way WhatsApp writes it (no zero-padded hours).
def _android_us(at: datetime) -> str:
    return f"{at.month}/{at.day}/{at:%y}, {at.hour % 12 or 12}:{at:%M} {at:%p} - "


def _android_us_nnbsp(at: datetime) -> str:
    return f"{at.month}/{at.day}/{at:%y}, {at.hour % 12 or 12}:{at:%M}\u202f{at:%p} - "


def _android_gb(at: datetime) -> str:
    return f"{at:%d/%m/%Y}, {at:%H:%M} - "


def _android_de(at: datetime) -> str:
    return f"{at:%d.%m.%y}, {at:%H:%M} - "


def _ios_gb(at: datetime) -> str:
    return f"[{at:%d/%m/%Y}, {at:%H:%M:%S}] "


def _ios_us(at: datetime) -> str:
    return f"[{at.month}/{at.day}/{at:%y}, {at.hour % 12 or 12}:{at:%M:%S} {at:%p}] "


_WORDS = ["Tea", "at", "10", "ok?", "see:", "you", "Grüße", "🎉", "(soon)", "x-y", "PM", "[1]"]
_FIRST = st.sampled_from(["Hello", "Tea", "Grüße", "Okay", "Über", "Why"])
_LINE = st.builds(
    lambda first, rest: " ".join([first, *rest]),
    _FIRST,
    st.lists(st.sampled_from(_WORDS), max_size=6),
)
_NAME = st.from_regex(r"[A-Z][a-zé]{0,8}( [A-Z][a-z]{0,8})?", fullmatch=True)
_MOMENT = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31))
_FORMS: list[tuple[Callable[[datetime], str], bool]] = [
    (_android_us, False),
    (_android_us_nnbsp, False),
    (_android_gb, False),
    (_android_de, False),
    (_ios_gb, True),
    (_ios_us, True),
]


@given(
    form=st.sampled_from(_FORMS),
    messages=st.lists(
        st.tuples(_NAME, st.lists(_LINE, min_size=1, max_size=3), _MOMENT), min_size=1, max_size=8
    ),
)
def test_written_lines_read_back(
    form: tuple[Callable[[datetime], str], bool],
    messages: list[tuple[str, list[str], datetime]],
) -> None:
    start, seconds = form
    expected = [
        (
            name,
            "\n".join(lines),
            at.replace(second=at.second if seconds else 0, microsecond=0, tzinfo=UTC),
        )
        for name, lines, at in messages
    ]
    text = "".join(f"{start(at)}{name}: {body}\n" for name, body, at in expected)
    [chat] = _parse(text)
    assert [(m.speaker, m.text, m.created_at) for m in chat.messages] == expected
