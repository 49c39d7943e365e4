"""Slack: the workspace export as a bundle, and one day file on its own."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from aclarai.parsers import ParseError
from aclarai.parsers.exports import SlackReader

EXPORT = Path(__file__).parent / "samples" / "slack"


def _bundle(prefix: str = "") -> dict[str, bytes]:
    return {
        prefix + path.relative_to(EXPORT).as_posix(): path.read_bytes()
        for path in EXPORT.rglob("*.json")
    }


def test_bundle_is_one_conversation_per_channel_per_day() -> None:
    conversations = SlackReader().parse_bundle(_bundle())
    assert [(c.title, c.id) for c in conversations] == [
        ("#engineering 2024-06-03", "slack:C02ENG:2024-06-03"),
        ("#general 2024-06-03", "slack:C01GEN:2024-06-03"),
        ("#general 2024-06-04", "slack:C01GEN:2024-06-04"),
    ]
    assert {c.format for c in conversations} == {"slack"}
    assert conversations[1].source_name == "general/2024-06-03.json"


def test_general_day_resolves_names_mentions_links_and_threads() -> None:
    general = SlackReader().parse_bundle(_bundle())[1]
    # Bob's reply follows Alice's thread parent although Cara spoke in between; the join and the
    # bot's deploy notice are gone; the screenshot without text shows as its placeholder.
    assert [(m.speaker, m.text, m.id) for m in general.messages] == [
        (
            "Alice Ng",
            "Morning! @bob can you review the plan (https://example.com/plan) before standup?",
            "1717405260.000200",
        ),
        (
            "bob",
            "Looks good, one question about step 3. See https://example.com/plan#step-3",
            "1717405440.000500",
        ),
        ("cara", "Standup moved to 10:30 & it's in #engineering today", "1717405320.000300"),
        ("Alice Ng", "Updated the doc, thanks @bob!", "1717405500.000600"),
        ("bob", "[image: screenshot.png]", "1717405620.000700"),
    ]
    assert general.messages[0].created_at == datetime(2024, 6, 3, 9, 1, 0, 200, tzinfo=UTC)
    assert general.created_at == general.messages[0].created_at


def test_engineering_day_handles_unknown_users_mailto_and_leaves() -> None:
    engineering = SlackReader().parse_bundle(_bundle())[0]
    assert [(m.speaker, m.text) for m in engineering.messages] == [
        ("cara", "Anyone seen @U09GHOST? Write to ops@example.com if the build breaks"),
        ("bob", "ok"),
    ]
    here = SlackReader().parse_bundle(_bundle())[2]
    assert [m.text for m in here.messages] == ["Deploy of v2.4 is done, @here"]


def test_bundle_inside_a_top_folder_is_found() -> None:
    reader = SlackReader()
    files = _bundle("Acme Slack export Jun 1 2024 - Jun 5 2024/")
    files["__MACOSX/general/2024-06-03.json"] = b"not an export"  # outside the export's folder
    assert reader.detect_bundle(files)
    assert [c.id for c in reader.parse_bundle(files)] == [
        "slack:C02ENG:2024-06-03",
        "slack:C01GEN:2024-06-03",
        "slack:C01GEN:2024-06-04",
    ]


def test_bundle_detection_needs_listings_and_day_files() -> None:
    reader = SlackReader()
    assert not reader.detect_bundle({"general/2024-06-03.json": b"[]"})
    assert not reader.detect_bundle({"users.json": b"[]", "notes/today.json": b"[]"})


def test_single_day_file_uses_inline_profiles_and_the_folder_name() -> None:
    data = (EXPORT / "general" / "2024-06-03.json").read_bytes()
    [day] = SlackReader().parse(data, "general/2024-06-03.json")
    assert (day.title, day.id) == ("#general 2024-06-03", "slack:general:2024-06-03")
    # Without users.json only Alice's messages carry a profile; the others keep their ids.
    speakers = ["Alice Ng", "U02BOB", "U03CARA", "Alice Ng", "U02BOB"]
    assert [m.speaker for m in day.messages] == speakers
    assert day.messages[0].text.startswith("Morning! @U02BOB can you review the plan")


def test_day_file_without_folder_has_no_id_and_takes_its_date_from_the_name() -> None:
    data = (EXPORT / "general" / "2024-06-04.json").read_bytes()
    [day] = SlackReader().parse(data, "2024-06-04.json")
    assert (day.title, day.id) == ("Slack 2024-06-04", None)
    assert day.messages[0].created_at == datetime(2024, 6, 4, 9, 0, 0, 100, tzinfo=UTC)


def test_reply_listed_before_its_parent_still_follows_it() -> None:
    items = [
        {"type": "message", "user": "U1", "text": "reply", "ts": "20.0", "thread_ts": "10.0"},
        {"type": "message", "user": "U1", "text": "later", "ts": "15.0"},
        {"type": "message", "user": "U1", "text": "parent", "ts": "10.0", "thread_ts": "10.0"},
    ]
    [day] = SlackReader().parse(json.dumps(items).encode(), "random/2024-01-01.json")
    assert [m.text for m in day.messages] == ["parent", "reply", "later"]


def test_invalid_ts_is_a_parse_error() -> None:
    items = [{"type": "message", "user": "U1", "text": "hi", "ts": "yesterday"}]
    with pytest.raises(ParseError, match="invalid ts 'yesterday'"):
        SlackReader().parse(json.dumps(items).encode(), "general/2024-01-01.json")


def test_bad_listing_in_a_bundle_is_a_parse_error_naming_it() -> None:
    files = _bundle()
    files["users.json"] = b'{"members": []}'
    with pytest.raises(ParseError, match=r"users\.json: the listing should be a list"):
        SlackReader().parse_bundle(files)
