"""The settings that name a place in the vault, held inside it.

``adopt.folders``, ``import.folder``, ``import.inbox``, ``import.archive`` and ``dashboard.path``
are places in the vault: aclarai reads, writes and moves files there. Every command that works on
a vault binds its configuration to it first (:func:`bind_to_vault`), before it reads or writes
anything. Each value, relative to the vault or absolute, is resolved with its symlinks followed;
it must land inside the vault (its own folder is fine), and comes back as a clean vault-relative
path, so the code below never joins a ``..`` or an absolute path to the vault. A value that leaves
the vault is a :class:`ConfigError` naming the key and the value.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aclarai.daemon.config import Config
from aclarai.parsers import ConfigError

VAULT_PLACES = (
    "adopt.folders",
    "import.folder",
    "import.inbox",
    "import.archive",
    "dashboard.path",
)
"""The configuration keys whose values are places in the vault (a list for ``adopt.folders``)."""

VAULT_FILES = frozenset({"dashboard.path"})
"""The keys among them that name a file aclarai writes, not a folder."""

VAULT_ITSELF = "."
"""A place that is the vault's own folder, as :func:`inside_vault` returns it."""


def bind_to_vault(config: Config, vault: Path) -> Config:
    """``config`` with every key of :data:`VAULT_PLACES` made a clean path inside ``vault``.

    Raises:
        ConfigError: a value leaves the vault (by ``..``, an absolute path or a symlink); the
            message names the key and the value.
    """
    root = Path(os.path.realpath(vault.expanduser()))
    settings = config.model_dump(by_alias=True)
    overrides: dict[str, Any] = {}
    for key in VAULT_PLACES:
        section, name = key.split(".")
        value = settings[section][name]
        if isinstance(value, list | tuple):
            overrides[key] = [inside_vault(root, key, str(item)) for item in value]
        elif value is not None:
            overrides[key] = inside_vault(root, key, str(value), file=key in VAULT_FILES)
    return config.with_overrides(overrides)


def inside_vault(root: Path, key: str, value: str, *, file: bool = False) -> str:
    """``value`` (a place in the vault at ``root``, a resolved folder) as a vault-relative POSIX
    path, or :data:`VAULT_ITSELF`. The symlinks of a ``file``'s folders are followed, never
    the file's own: a note the file links to is not the file (the writer refuses to replace
    it, and never writes through it).

    Raises:
        ConfigError: the place is outside the vault once ``..`` and symlinks are resolved.
    """
    given = Path(value).expanduser()
    place = given if given.is_absolute() else root / given
    # realpath, not Path.resolve: Python 3.11 raises RuntimeError on a symlink loop.
    if file:
        resolved = Path(os.path.realpath(place.parent)) / place.name
    else:
        resolved = Path(os.path.realpath(place))
    if not resolved.is_relative_to(root):
        raise ConfigError(
            f"{key}: {value!r} is outside the vault {root}: every place aclarai reads or "
            "writes must be inside the vault",
            key=key,
        )
    rel = resolved.relative_to(root).as_posix()
    return rel if rel != "." else VAULT_ITSELF
