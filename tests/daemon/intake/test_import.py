"""``aclarai import`` against real export files, folders and zips in a real vault."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from aclarai.daemon.cli import main
from aclarai.daemon.intake.importer import ImportLimits, ImportReport, import_sources
from aclarai.daemon.vault.writer import create_many
from aclarai.parsers import parse_note
from tests.helpers.import_samples import (
    SLACK_DAY,
    SPRINT,
    VENDOR,
    chatgpt_conversation,
    chatgpt_export,
    slack_zip,
    write,
)


def _notes(vault: Path) -> dict[str, bytes]:
    return {
        p.relative_to(vault).as_posix(): p.read_bytes()
        for p in sorted(vault.rglob("*"))
        if p.is_file()
    }


def _run(vault: Path, *sources: Path, **kw: object) -> ImportReport:
    return import_sources(list(sources), vault, "conversations/", **kw)  # type: ignore[arg-type]


pytestmark = pytest.mark.vault(base=None)


def test_chatgpt_export_becomes_one_note_per_conversation(vault: Path, tmp_path: Path) -> None:
    export = write(
        tmp_path / "conversations.json",
        chatgpt_export(
            chatgpt_conversation("c-sprint", "Sprint planning", SPRINT),
            chatgpt_conversation("c-vendor", "Vendor: Acme / pricing?", VENDOR, 1717491600.0),
        ),
    )
    report = _run(vault, export)
    assert (report.created, report.messages, report.errors, report.exit_status) == (2, 5, [], 0)
    assert sorted(_notes(vault)) == [
        "conversations/2024-06-03 Sprint planning.md",
        "conversations/2024-06-04 Vendor Acme pricing.md",
    ]
    note = parse_note((vault / "conversations/2024-06-03 Sprint planning.md").read_text())
    assert [b.text for b in note.blocks] == [
        f"user: {SPRINT[0]}",
        f"assistant: {SPRINT[1]}",
        f"user: {SPRINT[2]}",
    ]
    assert note.metadata["source"] == {
        "format": "chatgpt",
        "file": "conversations.json",
        "id": "c-sprint",
    }
    assert note.metadata["message_count"] == "3"


def test_import_twice_changes_no_byte(vault: Path, tmp_path: Path) -> None:
    export = write(tmp_path / "c.json", chatgpt_export(chatgpt_conversation("c1", "Plan", SPRINT)))
    _run(vault, export)
    before = {p: (vault / p).stat().st_mtime_ns for p in _notes(vault)}
    contents = _notes(vault)
    report = _run(vault, export)
    assert (report.created, report.extended, report.unchanged) == (0, 0, 1)
    assert _notes(vault) == contents
    assert {p: (vault / p).stat().st_mtime_ns for p in _notes(vault)} == before


def test_grown_export_appends_only_new_messages(vault: Path, tmp_path: Path) -> None:
    write(tmp_path / "old.json", chatgpt_export(chatgpt_conversation("c1", "Plan", SPRINT[:2])))
    _run(vault, tmp_path / "old.json")
    note_path = vault / "conversations/2024-06-03 Plan.md"
    edited = note_path.read_bytes() + b"\nMy own remark.\n"
    note_path.write_bytes(edited)
    # A newer export under another file name: recognised by the conversation id.
    write(tmp_path / "newer.json", chatgpt_export(chatgpt_conversation("c1", "Plan", SPRINT)))
    report = _run(vault, tmp_path / "newer.json")
    assert (report.created, report.extended, report.messages) == (0, 1, 1)
    after = note_path.read_bytes()
    assert after.replace(b"message_count=3", b"message_count=2").startswith(
        edited[: edited.index(b"\nMy own remark.")]
    )
    assert after.endswith(b"\nMy own remark.\n")
    assert [b.text for b in parse_note(after.decode()).blocks][-1] == f"user: {SPRINT[2]}"
    assert len(list((vault / "conversations").iterdir())) == 1


def test_title_collision_gets_a_suffix(vault: Path, tmp_path: Path) -> None:
    export = write(
        tmp_path / "c.json",
        chatgpt_export(
            chatgpt_conversation("c1", "Plan", SPRINT), chatgpt_conversation("c2", "Plan", VENDOR)
        ),
    )
    assert _run(vault, export).created == 2
    assert sorted(_notes(vault)) == [
        "conversations/2024-06-03 Plan (2).md",
        "conversations/2024-06-03 Plan.md",
    ]


def test_slack_zip_with_users_threads_and_mentions(vault: Path, tmp_path: Path) -> None:
    report = _run(vault, slack_zip(tmp_path / "slack.zip"))
    assert (report.created, report.errors) == (1, [])
    ((name, data),) = _notes(vault).items()
    assert name == "conversations/2024-06-03 general 2024-06-03.md"
    texts = [b.text for b in parse_note(data.decode()).blocks]
    assert texts == [
        "Alice Martin: The deploy to staging failed twice on Tuesday, @Bob Chen.",
        "Bob Chen: I rolled back to v2.3, see run 42 (https://ci.example.com/runs/42).",
        "Alice Martin: The migration 0042 times out after 300 seconds.",
    ]


def test_slack_folder_and_a_grown_day(vault: Path, tmp_path: Path) -> None:
    folder = tmp_path / "export"
    with zipfile.ZipFile(slack_zip(tmp_path / "s.zip")) as archive:
        archive.extractall(folder)
    assert _run(vault, folder).created == 1
    more = {
        "type": "message",
        "user": "U02BOB",
        "text": "Fixed in 0043.",
        "ts": "1717405400.000600",
    }
    write(folder / "general/2024-06-03.json", json.dumps([*SLACK_DAY, more]))
    report = _run(vault, folder)
    assert (report.created, report.extended, report.messages) == (0, 1, 1)


def test_zip_member_escaping_the_archive_is_refused(vault: Path, tmp_path: Path) -> None:
    bad = tmp_path / "evil.zip"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr(
            "conversations.json", chatgpt_export(chatgpt_conversation("c", "x", SPRINT))
        )
        archive.writestr("../../outside.json", b"[]")
    good = write(tmp_path / "ok.json", chatgpt_export(chatgpt_conversation("c9", "Ok", VENDOR)))
    report = _run(vault, bad, good)
    assert report.errors == [
        f"{bad}: member '../../outside.json' points outside the archive; refused"
    ]
    assert (report.created, report.sources_failed, report.exit_status) == (1, 1, 1)
    assert sorted(_notes(vault)) == ["conversations/2024-06-03 Ok.md"]
    assert not (tmp_path / "outside.json").exists()


def test_zip_bomb_is_refused_before_inflating(vault: Path, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", b"[" + b" " * (50 * 1024 * 1024) + b"]")
    assert bomb.stat().st_size < 200_000
    report = _run(vault, bomb)
    assert len(report.errors) == 1 and "a zip bomb?" in report.errors[0]
    assert str(bomb) in report.errors[0] and report.exit_status == 2
    small = ImportLimits(max_archive_bytes=1024 * 1024, max_compression_ratio=1e9)
    report = _run(vault, bomb, limits=small)
    assert "import.max_archive_mb" in report.errors[0]
    assert _notes(vault) == {}


def test_zip_with_too_many_members(vault: Path, tmp_path: Path) -> None:
    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as archive:
        for i in range(11):
            archive.writestr(f"f{i}.txt", b"alice: hi")
    report = _run(vault, many, limits=ImportLimits(max_archive_members=10))
    assert "11 members, over import.max_archive_members (10)" in report.errors[0]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b'[{"title": "x", "mapping": {', "truncated?"),
        (b'[{"title": "caf\xe9", "mapping": {}, "current_node": null}]', "not UTF-8"),
    ],
)
def test_broken_file_fails_alone(vault: Path, tmp_path: Path, data: bytes, problem: str) -> None:
    bad = write(tmp_path / "conversations.json", data)
    good = write(
        tmp_path / "good" / "conversations.json",
        chatgpt_export(chatgpt_conversation("g", "Good", VENDOR)),
    )
    report = _run(vault, bad, good, format_name="chatgpt")
    assert len(report.errors) == 1
    assert "conversations.json" in report.errors[0] and problem in report.errors[0]
    assert (report.created, report.exit_status) == (1, 1)
    assert list(_notes(vault)) == ["conversations/2024-06-03 Good.md"]


def test_huge_file_over_the_cap(vault: Path, tmp_path: Path) -> None:
    big = write(tmp_path / "big.json", chatgpt_export(chatgpt_conversation("c", "x", SPRINT)))
    report = _run(vault, big, limits=ImportLimits(max_file_bytes=100))
    assert report.errors == [f"{big}: 0.0 MB is over import.max_file_mb (0 MB)"]
    assert report.exit_status == 2


def test_unknown_format_names_the_file_and_the_formats(vault: Path, tmp_path: Path) -> None:
    odd = write(tmp_path / "notes.bin", b"\x00\x01\x02 nothing to see")
    report = _run(vault, odd)
    assert report.errors[0].startswith(f"{odd}: not a known export format (known: chatgpt, ")
    assert report.exit_status == 2


def test_a_conversation_is_not_imported_twice_from_two_sources(vault: Path, tmp_path: Path) -> None:
    data = chatgpt_export(chatgpt_conversation("same", "Same", SPRINT))
    report = _run(vault, write(tmp_path / "a.json", data), write(tmp_path / "b/x.json", data))
    assert (report.created, report.unchanged) == (1, 1)


def test_dry_run_writes_nothing(vault: Path, tmp_path: Path) -> None:
    export = write(tmp_path / "c.json", chatgpt_export(chatgpt_conversation("c1", "Plan", SPRINT)))
    report = _run(vault, export, dry_run=True)
    assert (report.created, report.messages, report.notes) == (
        1,
        3,
        ["conversations/2024-06-03 Plan.md"],
    )
    assert _notes(vault) == {}


def test_cli_import(vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = write(tmp_path / "c.json", chatgpt_export(chatgpt_conversation("c1", "Plan", SPRINT)))
    missing = tmp_path / "missing.json"
    assert main(["import", str(export), "--vault", str(vault), "--into", "chats"]) == 0
    assert (vault / "chats/2024-06-03 Plan.md").is_file()
    out = capsys.readouterr().out
    assert "notes unchanged" in out and "notes created                    1" in out
    assert main(["import", str(missing), "--vault", str(vault)]) == 2
    assert f"aclarai: {missing}: cannot read" in capsys.readouterr().err
    assert main(["import", str(export), "--vault", str(vault), "--format", "nope"]) == 1
    assert "unknown format 'nope'; known: chatgpt" in capsys.readouterr().err


def test_create_many_never_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    taken = write(tmp_path / "taken.md", "someone else's")
    created = create_many([(tmp_path / "a.md", b"one"), (taken, b"ours"), (tmp_path / "b.md", b"")])
    assert created == [True, False, True]
    assert taken.read_text() == "someone else's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "b.md", "taken.md"]
    assert (tmp_path / "a.md").read_bytes() == b"one"


UNLINKED = (
    Path(__file__).parents[2]
    / "parsers"
    / "exports"
    / "samples"
    / "chatgpt"
    / "single-conversation-unlinked.json"
)


def _rows(out: str) -> dict[str, str]:
    return {k.strip(): v for k, _, v in (line.partition("  ") for line in out.splitlines()[2:])}


def test_every_message_of_an_unlinked_chatgpt_conversation_is_written(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", str(UNLINKED), "--vault", str(vault)]) == 0
    rows = _rows(capsys.readouterr().out)
    assert (rows["messages read"].strip(), rows["messages written"].strip()) == ("6", "6")
    [note] = (vault / "conversations").iterdir()
    assert [b.text.split(":")[0] for b in parse_note(note.read_text()).blocks] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_a_conversation_that_writes_fewer_messages_than_it_read_is_an_error(
    vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = json.loads(UNLINKED.read_bytes())
    mapping = document["mapping"]
    # One tree, whose current node is not its leaf: what follows it is on no branch.
    for parent, child in [("m1", "m2"), ("m2", "m3"), ("m3", "m4"), ("m4", "m5"), ("m4", "m6")]:
        mapping[child]["parent"] = parent
    document["current_node"] = "m2"
    source = write(tmp_path / "porto.json", json.dumps(document).encode())
    assert main(["import", str(source), "--vault", str(vault)]) == 1
    captured = capsys.readouterr()
    assert f"{source}: 'Train to Porto': 4 of the messages read could not be placed" in (
        captured.err
    )
    rows = _rows(captured.out)
    assert (rows["messages read"].strip(), rows["messages written"].strip()) == ("6", "2")


def test_the_summary_counts_the_branches_edited_away(
    vault: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = UNLINKED.with_name("conversations.json")
    assert main(["import", str(sample), "--vault", str(vault)]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["messages read"].strip().endswith("(2 on branches edited away)")
