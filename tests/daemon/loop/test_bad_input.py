"""Bad input gets one clear log line; the rest of the vault is still processed."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from aclarai.daemon.config import load_config
from aclarai.daemon.loop.resync import resync
from aclarai.parsers import AclaraiError

GOOD = """alice: The deploy to staging failed twice on Tuesday.
<!-- aclarai:id=blk-good1 ver=1 -->
^blk-good1
"""


pytestmark = pytest.mark.vault(base=None, files={"good.md": GOOD})


def run(vault: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, **env: str):
    config = load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state"), **env})
    with caplog.at_level(logging.WARNING, logger="aclarai"):
        summary = resync(config, vault)
    return summary


def assert_good_scored(vault: Path) -> None:
    assert "aclarai:entailed_score=" in (vault / "good.md").read_text()


@pytest.mark.parametrize(
    ("name", "data", "needle"),
    [
        (
            "latin1.md",
            "café: the menu changed on Monday <!-- aclarai:id=blk-l1 -->".encode("latin-1"),
            "UTF-8",
        ),
        ("binary.md", bytes(range(256)) * 4, "binary"),
    ],
)
def test_undecodable_notes_are_skipped_with_one_line(
    vault: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    name: str,
    data: bytes,
    needle: str,
) -> None:
    (vault / name).write_bytes(data)
    summary = run(vault, tmp_path, caplog)
    lines = [r.getMessage() for r in caplog.records if name in r.getMessage()]
    assert len(lines) == 1 and needle.lower() in lines[0].lower()
    assert (vault / name).read_bytes() == data
    assert summary.ok
    assert_good_scored(vault)


def test_huge_note_is_skipped(
    vault: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    big = vault / "huge.md"
    with big.open("wb") as handle:
        line = b"bob: The nightly export wrote 50 MB of logs. <!-- aclarai:id=blk-x ver=1 -->\n"
        handle.write(line * (50 * 1024 * 1024 // len(line) + 1))
    summary = run(vault, tmp_path, caplog)
    assert any(
        "huge.md" in r.getMessage() and "max_file_mb" in r.getMessage() for r in caplog.records
    )
    assert summary.ok
    assert_good_scored(vault)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("bob: it broke <!-- aclarai:id=blk-u1 ver=1\nno end in sight\n", "not closed"),
        ("bob: it broke on Monday.\n<!-- aclarai:id=blk-v1 ver=abc -->\n", "ver"),
        ("bob: it broke on Monday.\n<!-- aclarai:id=blk with spaces ver=1 -->\n", "id"),
        ("bob: it broke on Monday.\n<!-- aclarai:id=blk-big ver=99999999999999999999 -->\n", "ver"),
    ],
    ids=["unterminated", "ver-not-a-number", "id-with-spaces", "ver-out-of-range"],
)
def test_malformed_comments_are_reported_and_left_intact(
    vault: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str, needle: str
) -> None:
    (vault / "bad.md").write_text(text)
    summary = run(vault, tmp_path, caplog)
    messages = [r.getMessage() for r in caplog.records if "bad.md" in r.getMessage()]
    assert messages and needle in messages[0].lower()
    assert (vault / "bad.md").read_text() == text
    assert summary.ok
    assert_good_scored(vault)


def test_empty_note_and_note_without_markers_are_never_written(
    vault: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (vault / "empty.md").write_bytes(b"")
    (vault / "plain.md").write_text("# Just a note\n\nNothing to see.\n")
    run(vault, tmp_path, caplog)
    assert (vault / "empty.md").read_bytes() == b""
    assert (vault / "plain.md").read_text() == "# Just a note\n\nNothing to see.\n"
    assert_good_scored(vault)


def test_symlink_out_of_the_vault_is_skipped(
    vault: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.md"
    secret.write_text("eve: The password is hunter2.\n<!-- aclarai:id=blk-s1 ver=1 -->\n")
    os.symlink(outside, vault / "linked")
    os.symlink(secret, vault / "secret.md")
    run(vault, tmp_path, caplog)
    assert sum("outside the vault" in r.getMessage() for r in caplog.records) == 2
    assert "score" not in secret.read_text()
    assert_good_scored(vault)


def test_symlink_loop_is_one_line_per_link_and_the_rest_is_scored(
    vault: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    os.symlink("b.md", vault / "a.md")
    os.symlink("a.md", vault / "b.md")
    os.symlink("loop", vault / "loop")
    summary = run(vault, tmp_path, caplog)
    loops = [r.getMessage() for r in caplog.records if "symlink loop" in r.getMessage()]
    assert sorted(m.split("/")[-1] for m in loops) == [
        "a.md: a symlink loop",
        "b.md: a symlink loop",
        "loop: a symlink loop",
    ]
    assert summary.ok
    assert_good_scored(vault)


def test_missing_vault_is_an_error(tmp_path: Path) -> None:
    config = load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state")})
    with pytest.raises(AclaraiError, match="does not exist"):
        resync(config, tmp_path / "nowhere")


def test_nothing_readable_is_a_failure(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "a.md").write_bytes(b"\xff\xfe\x00bad")
    summary = run(root, tmp_path, caplog)
    assert not summary.ok
