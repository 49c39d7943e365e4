"""The last resort of ``aclarai import`` with ``model.backend: llm``: a model reads a file no
reader knows and lists its turns.

Only single text files get here (never the members of a folder or zip, where unknown files are
skipped), up to ``MAX_CHARS`` characters. The file is sent delimited as untrusted data
(:func:`aclarai.agents.llm.prompts.delimit`), the reply is JSON validated against a schema, and
every turn must be text the file really holds (compared with whitespace collapsed), so a model that
summarises or invents fails the file instead of writing made-up utterances. Nothing the model
says is executed. A failure is a :class:`ParseError` naming the file.
"""

from __future__ import annotations

from pydantic import BaseModel

from aclarai.agents import LLMClient, PromptLibrary, delimit
from aclarai.parsers import AclaraiError, ParseError, normalize_text
from aclarai.parsers.exports import Conversation, ExportReader, Message

MAX_CHARS = 48_000
"""About 12,000 tokens: a long chat still fits a small local model's context."""
PROMPT = "transcript_conversion"


class _Turn(BaseModel):
    speaker: str
    text: str


class _Turns(BaseModel):
    title: str = ""
    turns: list[_Turn]


class LLMTranscriptReader(ExportReader):
    """Any UTF-8 text file, read by a model; see the module docstring."""

    name = "llm"

    def __init__(self, client: LLMClient, prompts: PromptLibrary, model: str) -> None:
        self.client = client
        self.prompts = prompts
        self.model = model

    def detect(self, data: bytes, name: str) -> bool:
        if b"\0" in data[:8192]:
            return False
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    def parse(self, data: bytes, name: str) -> list[Conversation]:
        if not self.detect(data, name):
            raise ParseError(f"{name}: not UTF-8 text, so not a conversation", path=name)
        text = data.decode("utf-8").lstrip("\ufeff")
        if len(text) > MAX_CHARS:
            raise ParseError(
                f"{name}: unknown format, and at {len(text):,} characters too long for the "
                f"model to convert (at most {MAX_CHARS:,})",
                path=name,
            )
        messages = self.prompts.get(PROMPT).render(
            name=delimit("file_name", name), text=delimit("transcript", text)
        )
        try:
            reply = self.client.complete_json(self.model, messages, _Turns)
        except AclaraiError as exc:
            raise ParseError(f"{name}: unknown format, and the model failed: {exc}") from exc
        source = normalize_text(text)
        turns = [t for t in reply.turns if t.text.strip()]
        if not turns:
            raise ParseError(f"{name}: the model found no conversation in it", path=name)
        for turn in turns:
            if normalize_text(turn.text) not in source:
                raise ParseError(
                    f"{name}: the model's turns are not text of the file "
                    f"({turn.text[:40]!r}…); not imported",
                    path=name,
                )
        title = " ".join(reply.title.split()) or name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        return [
            Conversation(
                title=title,
                messages=tuple(
                    Message(" ".join(t.speaker.split()) or "unknown", t.text) for t in turns
                ),
                format=self.name,
                source_name=name,
            )
        ]
