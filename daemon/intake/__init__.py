"""The ways notes come in: chat exports imported as Tier 1 notes (:mod:`.importer`, reading
files, folders and zips safely in :mod:`.export_files`, a model reading an unknown format in
:mod:`.transcripts`), the vault's inbox drained on its own (:mod:`.inbox`), and ordinary notes
adopted, each paragraph given an id (:mod:`.adopt`)."""

from aclarai.daemon.intake.adopt import AdoptReport, adopt_files
from aclarai.daemon.intake.importer import ImportReport, import_sources
from aclarai.daemon.intake.inbox import Inbox, drain_inbox, inbox_for
from aclarai.daemon.intake.transcripts import LLMTranscriptReader

__all__ = [
    "AdoptReport",
    "ImportReport",
    "Inbox",
    "LLMTranscriptReader",
    "adopt_files",
    "drain_inbox",
    "import_sources",
    "inbox_for",
]
