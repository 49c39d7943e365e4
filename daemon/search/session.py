"""A vault's search, opened once: its store, the query embedder and the engine over them.

Commands open one for a call; the HTTP and MCP servers keep one for their life, so the vectors
stay in memory between requests.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import TracebackType

from aclarai.daemon.config import Config
from aclarai.daemon.factory import QUEUE_FILE, build_search_embedder, build_store
from aclarai.daemon.search.engine import SearchEngine, SearchFilter, SearchResult
from aclarai.parsers import AclaraiError, EvaluationError

logger = logging.getLogger(__name__)


class VaultSearch:
    """Search over the graded blocks of the vault at ``vault_root``.

    Raises:
        AclaraiError: the vault was never synced (no state yet).
        StoreError: the store cannot be opened.
    """

    def __init__(self, config: Config, vault_root: Path) -> None:
        self.config = config
        self.vault_root = vault_root
        state_dir = config.state_dir_for(vault_root)
        if not (state_dir / QUEUE_FILE).exists():
            raise AclaraiError(f"no state yet for {vault_root}: run `aclarai resync` first")
        self.store = build_store(config, state_dir)
        self._closers: list[Callable[[], None]] = [self.store.close]
        try:
            embedder, closers = build_search_embedder(config, state_dir)
        except (AclaraiError, OSError) as exc:
            logger.warning("searching by words only: %s", exc)
            embedder, closers = None, []
        self._closers += closers
        self.engine = SearchEngine(self.store, embedder)

    def search(
        self, query: str, *, limit: int | None = None, where: SearchFilter | None = None
    ) -> SearchResult:
        """See :meth:`SearchEngine.search`; a query the embedder fails on is searched by words."""
        limit = self.config.search.limit if limit is None else limit
        where = where or SearchFilter()
        if where.scope:
            where = replace(where, scope=self.scope(where.scope))
        try:
            return self.engine.search(query, limit=limit, where=where)
        except EvaluationError as exc:
            logger.warning("searching by words only: %s", exc)
            return self.engine.search(query, limit=limit, where=where, vectors=False)

    def scope(self, given: str) -> str:
        """A note or folder as the index names it: vault-relative, POSIX, a note with its
        ``.md`` ("./meetings/" → "meetings", "/home/me/Notes/Ideas" → "Ideas.md").

        Raises:
            AclaraiError: it lies outside the vault.
        """
        path = Path(given.strip()).expanduser()
        root = self.vault_root.expanduser().resolve()
        if path.is_absolute():
            try:
                path = path.resolve().relative_to(root)
            except ValueError:
                raise AclaraiError(f"{given} is not inside the vault {root}") from None
        rel = posixpath.normpath(path.as_posix())
        if rel == ".":
            return ""
        if rel == ".." or rel.startswith("../"):
            raise AclaraiError(f"{given} is not inside the vault {root}")
        if not rel.endswith(".md") and (root / f"{rel}.md").is_file():
            return f"{rel}.md"
        return rel

    def close(self) -> None:
        for close in reversed(self._closers):
            close()

    def __enter__(self) -> VaultSearch:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
