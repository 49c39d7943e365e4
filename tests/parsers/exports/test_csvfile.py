"""CSV and TSV chat logs."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from aclarai.parsers import ParseError
from aclarai.parsers.exports import CsvReader

SAMPLES = Path(__file__).parent / "samples" / "csv"


def test_csv_sample_with_quoting_multiline_fields_and_empty_rows() -> None:
    [chat] = CsvReader().parse((SAMPLES / "finance-chat.csv").read_bytes(), "finance-chat.csv")
    assert (chat.title, chat.format) == ("finance-chat", "csv")
    assert [(m.speaker, m.text, m.created_at) for m in chat.messages] == [
        ("alice", "Budget review moved to Thursday, 3pm", datetime(2024, 6, 3, 9, 14, tzinfo=UTC)),
        (
            "bob",
            'OK. I\'ll bring the "Q2 actuals" sheet',
            datetime(2024, 6, 3, 9, 15, 30, tzinfo=UTC),
        ),
        (
            "carol",
            "Two things:\n1. the travel line is over\n2. so is software",
            datetime(2024, 6, 3, 9, 16, tzinfo=UTC),
        ),
        ("bob", "Noted", datetime(2024, 6, 3, 9, 18, tzinfo=UTC)),
    ]


def test_tsv_sample_with_epoch_milliseconds_and_seconds() -> None:
    [chat] = CsvReader().parse((SAMPLES / "release.tsv").read_bytes(), "release.tsv")
    assert [(m.speaker, m.text, m.created_at) for m in chat.messages] == [
        ("Kim", "Ship it?", datetime(2024, 6, 3, 9, 0, tzinfo=UTC)),
        ("Lee", "Ship it; tests are green", datetime(2024, 6, 3, 9, 1, tzinfo=UTC)),
        ("Kim", "Shipped", datetime(2024, 6, 3, 9, 2, tzinfo=UTC)),
    ]


def test_semicolon_delimiter_and_id_column_are_found() -> None:
    data = "Message ID;From;Body;Created-At\n7;Ana;Hola, ¿qué tal?;2024-06-03 10:00:00+02:00\n"
    [chat] = CsvReader().parse(data.encode(), "export.csv")
    [message] = chat.messages
    assert (message.id, message.speaker, message.text) == ("7", "Ana", "Hola, ¿qué tal?")
    assert message.created_at == datetime(2024, 6, 3, 8, 0, tzinfo=UTC)


def test_header_without_text_column_is_a_parse_error_listing_the_columns() -> None:
    with pytest.raises(ParseError, match=r"no text column in the header \(author, when\)"):
        CsvReader().parse(b"author,when\nx,1\n", "bad.csv")
