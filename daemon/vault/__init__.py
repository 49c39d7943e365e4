"""One vault on disk and what aclarai keeps beside it, shared by every command: the settings
that name places in it, held inside it (:mod:`.bounds`); its notes read (:mod:`.notes`),
written through the one conditional atomic writer (:mod:`.writer`) and synced to the store by
the one note-sync path (:mod:`.notesync`; :mod:`.moves` tells a block that moved from another
note from a second block of the same id, :mod:`.settling` marks deleted those that left for
good); the durable queue of dirty blocks (:mod:`.queue`), the vault lock (:mod:`.lock`;
:mod:`.processes` tells a live holder from a gone one) and the control rows a running daemon and
the other commands share (:mod:`.control`)."""

from aclarai.daemon.vault.lock import VaultLock
from aclarai.daemon.vault.notes import NoteContent, NoteFile, Vault
from aclarai.daemon.vault.notesync import NoteSync, SyncedNote, SyncReport
from aclarai.daemon.vault.queue import Dirty, DurableQueue, QueueEntry
from aclarai.daemon.vault.writer import create_if_absent, write_if_unchanged

__all__ = [
    "Dirty",
    "DurableQueue",
    "NoteContent",
    "NoteFile",
    "NoteSync",
    "QueueEntry",
    "SyncReport",
    "SyncedNote",
    "Vault",
    "VaultLock",
    "create_if_absent",
    "write_if_unchanged",
]
