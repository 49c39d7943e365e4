"""Chat-export readers: bytes of an export in, :class:`Conversation` objects out.

One small module per format behind :class:`ExportReader`; :func:`detect` and
:func:`detect_bundle` pick the reader by content, :func:`readers` lists them all (built-ins and
those registered under the ``aclarai.importers`` entry point group). Pure: no files, no network.
"""

from aclarai.parsers.exports.base import Conversation, ExportReader, Message
from aclarai.parsers.exports.chatgpt import ChatGPTReader
from aclarai.parsers.exports.claude import ClaudeReader
from aclarai.parsers.exports.csvfile import CsvReader
from aclarai.parsers.exports.discord import DiscordReader
from aclarai.parsers.exports.plaintext import PlainTextReader
from aclarai.parsers.exports.registry import (
    GROUP,
    detect,
    detect_bundle,
    reader_named,
    readers,
)
from aclarai.parsers.exports.slack import SlackReader
from aclarai.parsers.exports.telegram import TelegramReader
from aclarai.parsers.exports.whatsapp import WhatsAppReader

__all__ = [
    "GROUP",
    "ChatGPTReader",
    "ClaudeReader",
    "Conversation",
    "CsvReader",
    "DiscordReader",
    "ExportReader",
    "Message",
    "PlainTextReader",
    "SlackReader",
    "TelegramReader",
    "WhatsAppReader",
    "detect",
    "detect_bundle",
    "reader_named",
    "readers",
]
