"""ChatGPT's conversations.json: the current branch only, spoken text only."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from aclarai.parsers import ParseError
from aclarai.parsers.exports import ChatGPTReader, Conversation

SAMPLE = Path(__file__).parent / "samples" / "chatgpt" / "conversations.json"


def _parse(data: bytes) -> list[Conversation]:
    return ChatGPTReader().parse(data, "conversations.json")


def test_branched_conversation_keeps_only_the_branch_the_user_saw() -> None:
    packing, retro = _parse(SAMPLE.read_bytes())

    assert packing.title == "Packing for Lisbon"
    assert packing.id == "6f0c3a52-8e1b-4c1e-9b4e-2d7a1f0e9c11"
    assert packing.format == "chatgpt"
    assert packing.source_name == "conversations.json"
    assert packing.created_at == datetime(2024, 3, 1, 11, 0, tzinfo=UTC)
    # The edited prompt replaced "And for a week in Porto?"; the hidden system message, the
    # browser call, the tool output and the empty in-progress message are not utterances.
    assert [(m.speaker, m.text, m.id) for m in packing.messages] == [
        ("user", "What should I pack for Lisbon in March?", "u-0001"),
        (
            "assistant",
            "Pack layers: a light rain jacket, a sweater and comfortable shoes for the hills.",
            "a-0001",
        ),
        ("user", "[image]\nIs this jacket warm enough?", "u-0003"),
        (
            "assistant",
            "Yes. Lisbon in March averages 11 to 19 °C,\nso that jacket over a sweater is enough.",
            "a-0005",
        ),
    ]
    assert [m.created_at for m in packing.messages] == [
        datetime(2024, 3, 1, 11, 0, 5, tzinfo=UTC),
        datetime(2024, 3, 1, 11, 0, 12, tzinfo=UTC),
        datetime(2024, 3, 1, 11, 3, 30, tzinfo=UTC),
        datetime(2024, 3, 1, 11, 3, 44, tzinfo=UTC),
    ]

    assert retro.id == "0b9e7d44-1a2b-4c3d-8e9f-a0b1c2d3e4f5"  # from conversation_id alone
    assert [(m.speaker, m.created_at) for m in retro.messages] == [
        ("Dana", None),  # the author's name wins over the role; no create_time, no date
        ("assistant", datetime(2024, 6, 3, 16, 20, tzinfo=UTC)),
    ]


def test_switching_current_node_switches_the_branch() -> None:
    document = json.loads(SAMPLE.read_bytes())
    document[0]["current_node"] = "a-0002"
    [packing, _] = _parse(json.dumps(document).encode())
    assert [m.id for m in packing.messages] == ["u-0001", "a-0001", "u-0002", "a-0002"]


def test_single_conversation_object_is_accepted() -> None:
    document = json.loads(SAMPLE.read_bytes())
    [retro] = _parse(json.dumps(document[1]).encode())
    assert retro.title == "Q2 retro"
    assert len(retro.messages) == 2


def test_without_current_node_the_newest_branch_is_read() -> None:
    document = json.loads(SAMPLE.read_bytes())
    del document[0]["current_node"]
    [packing, _] = _parse(json.dumps(document).encode())
    assert [m.id for m in packing.messages] == ["u-0001", "a-0001", "u-0003", "a-0005"]


def test_conversation_without_messages_is_left_out() -> None:
    empty = {"id": "e", "title": "New chat", "mapping": {}, "current_node": None}
    assert _parse(json.dumps([empty]).encode()) == []


@pytest.mark.parametrize(
    ("mapping", "current", "words"),
    [
        ({"a": {"parent": "b"}, "b": {"parent": "a"}}, "a", "cycle"),
        ({"a": {"parent": None, "message": "hi"}}, "a", "should be an object"),
    ],
)
def test_broken_trees_are_parse_errors(
    mapping: dict[str, object], current: str, words: str
) -> None:
    with pytest.raises(ParseError, match=words):
        _parse(json.dumps([{"id": "x", "mapping": mapping, "current_node": current}]).encode())


UNLINKED = SAMPLE.with_name("single-conversation-unlinked.json")


def test_nodes_without_links_are_read_in_time_order() -> None:
    [porto] = _parse(UNLINKED.read_bytes())
    # The mapping's order for the two messages at the same time, and the one with no time
    # after the one before it in the mapping.
    assert [m.id for m in porto.messages] == ["m1", "m2", "m3", "m4", "m5", "m6"]
    assert (porto.read_count, porto.edited_away, porto.lost) == (6, 0, 0)


def test_the_branches_edited_away_are_counted_and_nothing_is_lost() -> None:
    packing, _ = _parse(SAMPLE.read_bytes())
    # "And for a week in Porto?" and its answer were edited away.
    assert packing.edited_away == 2
    assert packing.read_count == len(packing.messages) + 2
    assert packing.lost == 0


def test_messages_under_the_current_node_are_lost_not_edited_away() -> None:
    document = json.loads(UNLINKED.read_bytes())
    mapping = document["mapping"]
    for parent, child in [("m1", "m2"), ("m2", "m3"), ("m3", "m4")]:
        mapping[child]["parent"] = parent
        mapping[parent]["children"] = [child]
    mapping["m5"]["parent"] = mapping["m6"]["parent"] = "m4"
    mapping["m4"]["children"] = ["m5", "m6"]
    document["current_node"] = "m2"
    [porto] = _parse(json.dumps(document).encode())
    assert [m.id for m in porto.messages] == ["m1", "m2"]
    assert (porto.read_count, porto.edited_away, porto.lost) == (6, 0, 4)


def test_a_branch_hanging_from_a_node_missing_from_the_mapping_is_read_not_dropped() -> None:
    """Found in review: such a subtree counted as edited away, and its messages went unwritten
    without a word. Links that do not join one tree are read in time order."""
    document = json.loads(UNLINKED.read_bytes())
    mapping = document["mapping"]
    for parent, child in [("m1", "m2"), ("m2", "m3"), ("gone", "m4"), ("m4", "m5"), ("m5", "m6")]:
        mapping[child]["parent"] = parent
    mapping["m1"]["parent"] = None
    document["current_node"] = "m3"
    [porto] = _parse(json.dumps(document).encode())
    assert [m.id for m in porto.messages] == ["m1", "m2", "m3", "m4", "m5", "m6"]
    assert (porto.edited_away, porto.lost) == (0, 0)


def test_children_links_alone_make_the_tree() -> None:
    """Found in review: a mapping whose nodes list their children and name no parent was read
    as unlinked, and the answer the user regenerated away was written too."""
    document = json.loads(UNLINKED.read_bytes())
    mapping = document["mapping"]
    mapping["root"] = {"id": "root", "message": None, "children": ["m1"]}
    mapping["m1"]["children"] = ["m2", "m3"]  # m2 was regenerated as m3
    mapping["m3"]["children"] = ["m4"]
    document["current_node"] = "m4"
    for extra in ("m5", "m6"):
        del mapping[extra]
    [porto] = _parse(json.dumps(document).encode())
    assert [m.id for m in porto.messages] == ["m1", "m3", "m4"]
    assert (porto.read_count, porto.edited_away, porto.lost) == (4, 1, 0)
