"""Telegram Desktop result.json: one chat, and the whole-account form."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from aclarai.parsers.exports import TelegramReader

SAMPLE = Path(__file__).parent / "samples" / "telegram" / "result.json"


def test_single_chat_joins_entity_text_and_skips_service_messages() -> None:
    [falcon] = TelegramReader().parse(SAMPLE.read_bytes(), "result.json")
    assert (falcon.title, falcon.id, falcon.format) == ("Project Falcon", "4400123456", "telegram")
    # The group creation and the pin are service messages; the photo without caption shows.
    assert [(m.speaker, m.text, m.id) for m in falcon.messages] == [
        ("Ivan Petrov", "Kickoff notes are here", "102"),
        (
            "Lena Vogel",
            "Read https://example.org/falcon first, then ping @ivan_p — deadline is Friday.",
            "103",
        ),
        ("Ivan Petrov", "[image: photo_1@03-06-2024_10-03-05.jpg]", "104"),
        ("Ivan Petrov", "Got it.\nWill do.", "105"),
    ]
    assert falcon.messages[1].created_at == datetime(2024, 6, 3, 10, 2, 40, tzinfo=UTC)


def test_full_export_reads_every_chat_and_falls_back_to_date() -> None:
    chat = json.loads(SAMPLE.read_bytes())
    saved = {
        "type": "saved_messages",
        "id": 777,
        "messages": [
            {
                "id": 1,
                "type": "message",
                "date": "2024-01-05T08:00:00",
                "from": "Me",
                "text": "note",
            }
        ],
    }
    full = {
        "about": "Here is the data you requested.",
        "chats": {"about": "", "list": [chat, saved]},
    }
    falcon, notes = TelegramReader().parse(json.dumps(full).encode(), "result.json")
    assert falcon.title == "Project Falcon"
    assert (notes.title, notes.id) == ("Saved Messages", "777")
    assert notes.messages[0].created_at == datetime(2024, 1, 5, 8, 0, tzinfo=UTC)


def test_full_export_is_detected_by_its_head_even_behind_many_contacts() -> None:
    contacts = [{"first_name": f"C{i}", "phone_number": "+100000000"} for i in range(5000)]
    full = {
        "about": "Here is the data you requested.",
        "personal_information": {"user_id": 1, "first_name": "Me"},
        "contacts": {"about": "", "list": contacts},
        "chats": {"about": "", "list": [json.loads(SAMPLE.read_bytes())]},
    }
    data = json.dumps(full).encode()
    assert data.index(b'"chats"') > 64 * 1024
    assert TelegramReader().detect(data, "result.json")
    [falcon] = TelegramReader().parse(data, "result.json")
    assert falcon.title == "Project Falcon"
