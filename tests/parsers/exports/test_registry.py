"""Finding readers through entry points, and detecting each sample as exactly its own format."""

from __future__ import annotations

import importlib
import logging
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from aclarai.parsers.exports import GROUP, detect, detect_bundle, reader_named, readers, registry

SAMPLES = Path(__file__).parent / "samples"
ROOT = Path(__file__).resolve().parents[3]
BUILTIN = ["chatgpt", "claude", "slack", "discord", "telegram", "whatsapp", "csv", "plaintext"]

# sample (relative to samples/) → the one format it is
EXPECTED = {
    "chatgpt/conversations.json": "chatgpt",
    "claude/conversations.json": "claude",
    "slack/general/2024-06-03.json": "slack",
    "slack/general/2024-06-04.json": "slack",
    "slack/engineering/2024-06-03.json": "slack",
    "discord/Rust Learners - Text Channels - help [1045678901234567999].json": "discord",
    "telegram/result.json": "telegram",
    "whatsapp/WhatsApp Chat with Sam Carter.txt": "whatsapp",
    "whatsapp/WhatsApp Chat - Familie.txt": "whatsapp",
    "plaintext/2024-06-03 standup.txt": "plaintext",
    "csv/finance-chat.csv": "csv",
    "csv/release.tsv": "csv",
}
NOT_EXPORTS = [
    SAMPLES / "notes" / "weekly-sync.md",
    SAMPLES / "notes" / "README.md",
    SAMPLES / "notes" / "shopping.md",
    SAMPLES / "slack" / "users.json",
    SAMPLES / "slack" / "channels.json",
    Path(__file__).parent / "README.md",
    ROOT / "README.md",
]


def test_every_sample_is_claimed_by_exactly_its_own_reader() -> None:
    found = {p.relative_to(SAMPLES).as_posix() for p in SAMPLES.rglob("*") if p.is_file()}
    assert set(EXPECTED) <= found
    for sample, expected in EXPECTED.items():
        data = (SAMPLES / sample).read_bytes()
        name = Path(sample).name
        assert [r.name for r in readers() if r.detect(data, name)] == [expected], sample
        chosen = detect(data, name)
        assert chosen is not None and chosen.name == expected
        assert chosen.parse(data, name), sample


@pytest.mark.parametrize("path", NOT_EXPORTS, ids=lambda p: p.name)
def test_notes_and_readmes_are_not_exports(path: Path) -> None:
    assert detect(path.read_bytes(), path.name) is None


def test_slack_folder_is_the_only_bundle() -> None:
    files = {
        p.relative_to(SAMPLES / "slack").as_posix(): p.read_bytes()
        for p in (SAMPLES / "slack").rglob("*")
        if p.is_file()
    }
    assert [r.name for r in readers() if r.detect_bundle(files)] == ["slack"]
    chosen = detect_bundle(files)
    assert chosen is not None and chosen.name == "slack"
    assert detect_bundle({"notes/a.md": b"# a"}) is None


def test_builtins_are_there_even_when_the_metadata_predates_them() -> None:
    # The editable install's metadata may or may not list aclarai.importers yet; either way
    # every built-in is present, once, in its fixed order.
    assert [r.name for r in readers()] == BUILTIN
    reader = reader_named("whatsapp")
    assert reader is not None and reader.name == "whatsapp"
    assert reader_named("no-such-format") is None


THIRD_PARTY = '''
from aclarai.parsers.exports import Conversation, ExportReader, Message


class IrcReader(ExportReader):
    name = "irc"
    extensions = (".log",)

    def detect(self, data, name):
        return data.startswith(b"<")

    def parse(self, data, name):
        messages = []
        for line in data.decode().splitlines():
            nick, _, text = line[1:].partition("> ")
            messages.append(Message(speaker=nick, text=text))
        return [
            Conversation(title=name, messages=tuple(messages), format="irc", source_name=name)
        ]


class ChatLogReader(ExportReader):
    """Claims what the plain-text reader claims too; only the extension settles it."""

    name = "chatlog"
    extensions = (".chat",)

    def detect(self, data, name):
        return data.startswith(b"alice:")

    def parse(self, data, name):
        return []


class FlakyReader(ExportReader):
    name = "flaky"

    def detect(self, data, name):
        raise RuntimeError("detector bug")

    def parse(self, data, name):
        return []


class ImpostorReader(ExportReader):
    name = "chatgpt"

    def detect(self, data, name):
        return True

    def parse(self, data, name):
        return []


class EchoReader(ExportReader):
    name = "echo"

    def detect(self, data, name):
        return False

    def parse(self, data, name):
        return []


class BrokenInitReader(EchoReader):
    name = "broken-init"

    def __init__(self):
        raise OSError("needs a licence file")


ECHO = EchoReader()
NOT_A_READER = 42
'''

ENTRY_POINTS = """
[aclarai.importers]
irc = acme_readers:IrcReader
chatlog = acme_readers:ChatLogReader
flaky = acme_readers:FlakyReader
impostor = acme_readers:ImpostorReader
echo = acme_readers:ECHO
broken_init = acme_readers:BrokenInitReader
number = acme_readers:NOT_A_READER
missing = acme_no_such_module:Reader
chatgpt = aclarai.parsers.exports.chatgpt:ChatGPTReader
"""


@pytest.fixture
def third_party(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A real installed distribution, ``acme-readers``, registering readers by entry point."""
    (tmp_path / "acme_readers.py").write_text(textwrap.dedent(THIRD_PARTY))
    info = tmp_path / "acme_readers-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-readers\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("acme_readers", None)


@pytest.mark.usefixtures("third_party")
def test_third_party_reader_is_found_and_used(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="aclarai.parsers.exports.registry"):
        names = [r.name for r in readers()]
    # Built-ins first (the chatgpt entry point is the built-in itself, listed once), then the
    # third parties by entry point name; the broken ones are logged and left out.
    assert names == [*BUILTIN, "chatlog", "echo", "flaky", "irc"]
    logged = caplog.text
    assert "'missing'" in logged and "failed to load" in logged
    assert "'number' is not an ExportReader" in logged
    assert "the name 'chatgpt' is taken" in logged
    assert "'broken_init' could not be created" in logged

    irc = detect(b"<ann> hello\n<bo> hi\n", "channel.log")
    assert irc is not None and irc.name == "irc"
    [conversation] = irc.parse(b"<ann> hello\n<bo> hi\n", "channel.log")
    assert [(m.speaker, m.text) for m in conversation.messages] == [("ann", "hello"), ("bo", "hi")]
    named = reader_named("irc")
    assert named is not None and type(named).__name__ == "IrcReader"


@pytest.mark.usefixtures("third_party")
def test_extension_breaks_a_tie_and_a_raising_detector_says_no(
    caplog: pytest.LogCaptureFixture,
) -> None:
    transcript = b"alice: hi\nbob: hello\nalice: bye\n"
    with caplog.at_level(logging.WARNING, logger="aclarai.parsers.exports.registry"):
        by_chat = detect(transcript, "standup.chat")
        by_txt = detect(transcript, "standup.txt")
    assert by_chat is not None and by_chat.name == "chatlog"
    assert by_txt is not None and by_txt.name == "plaintext"
    assert "'flaky' failed while detecting" in caplog.text


def test_pyproject_registers_every_builtin_under_the_group() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    registered = project["entry-points"][GROUP]
    assert set(registered) == set(BUILTIN)
    for name, target in registered.items():
        module, _, attribute = target.partition(":")
        cls = getattr(importlib.import_module(module), attribute)
        assert cls in registry.BUILTIN and cls().name == name
