"""Which notes of a vault adopt leaves alone: its template folders and aclarai's own notes.

A template is copied into every note made from it, ids and all, so adopting one would give every
new note the same block ids. The folders come from the vault's own settings: Obsidian's core
Templates plugin (``.obsidian/templates.json``, key ``folder``) and, when installed, the
Templater plugin (``.obsidian/plugins/templater-obsidian/data.json``, key
``templates_folder``). aclarai's own note is the dashboard (``dashboard.path``), which aclarai
rewrites whole. A settings file that cannot be read is one log line, and only the folders it
would have named are adopted.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from aclarai.daemon.vault.bounds import inside_vault

log = logging.getLogger(__name__)

OBSIDIAN = ".obsidian"
TEMPLATE_SETTINGS = (
    (PurePosixPath(OBSIDIAN, "templates.json"), "folder"),
    (PurePosixPath(OBSIDIAN, "plugins", "templater-obsidian", "data.json"), "templates_folder"),
)
"""Where Obsidian's Templates plugin and Templater keep their folder, and under which key."""


@dataclass(frozen=True, slots=True)
class AdoptScope:
    """The folders and notes of one vault that adopt never writes (resolved paths)."""

    root: Path
    templates: tuple[Path, ...] = ()
    own_notes: tuple[PurePosixPath, ...] = ()
    """Vault-relative; a note whose path ends so is taken for one of them wherever the vault is
    (``aclarai adopt`` given the dashboard note itself cannot tell where the vault starts)."""

    def reason_to_skip(self, note: Path) -> str | None:
        """Why adopt leaves ``note`` alone, or ``None`` when it may adopt it."""
        resolved = note.resolve()
        parts = resolved.parts
        if any(parts[len(parts) - len(own.parts) :] == own.parts for own in self.own_notes):
            return "aclarai's own note"
        for folder in self.templates:
            if resolved.is_relative_to(folder):
                return f"in the template folder {folder.relative_to(self.root)}"
        return None


def scope_for(root: Path, dashboard: str | None) -> AdoptScope:
    """The scope of the vault at ``root``; ``dashboard`` is ``dashboard.path``.

    Raises:
        ConfigError: ``dashboard`` is outside the vault.
    """
    root = root.resolve()
    templates = []
    for settings, key in TEMPLATE_SETTINGS:
        folder = _setting(root / settings, key)
        if folder:
            templates.append((root / folder).resolve())
    own = (
        (PurePosixPath(inside_vault(root, "dashboard.path", dashboard, file=True)),)
        if dashboard
        else ()
    )
    return AdoptScope(root, tuple(templates), own)


def vault_root_of(path: Path) -> Path:
    """The vault holding ``path`` (a path given to adopt): the nearest folder above it (or
    itself) with a ``.obsidian`` folder; else ``path`` itself when it is a folder, else its
    folder."""
    start = path.resolve()
    for folder in (start, *start.parents):
        if (folder / OBSIDIAN).is_dir():
            return folder
    return start if start.is_dir() else start.parent


def _setting(path: Path, key: str) -> str | None:
    """A vault-relative folder named in a plugin's settings file, if it names one."""
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get(key)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, AttributeError) as exc:
        log.warning("%s: cannot read the template folder setting (%s); not skipped", path, exc)
        return None
    if not isinstance(value, str):
        return None
    folder = value.strip().strip("/")
    if not folder or ".." in PurePosixPath(folder).parts:
        return None
    return folder
