"""``status --verify`` names a search index out of step with the graph; ``resync`` mends it,
headings and nearby text included."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from aclarai.daemon.config import load_config
from aclarai.daemon.search.session import VaultSearch
from tests.helpers.cli import cli, run_cli


def _graph(vault: Path) -> Path:
    return load_config(None).state_dir_for(vault) / "graph.sqlite"


def test_verify_names_a_lost_row_and_resync_brings_it_back_with_its_context(
    graded_vault: Path,
) -> None:
    assert "in step" in cli("status", str(graded_vault), "--verify")
    with sqlite3.connect(_graph(graded_vault)) as conn:
        (doc,) = conn.execute(
            "SELECT doc FROM search_docs WHERE file = 'help/Pricing.md' ORDER BY doc LIMIT 1"
        ).fetchone()
        conn.execute("DELETE FROM search_words WHERE rowid = ?", (doc,))
        conn.execute("DELETE FROM search_docs WHERE doc = ?", (doc,))

    verify = run_cli("status", str(graded_vault), "--verify").stdout
    assert "(search index): 1 block(s) missing, 0 extra, 0 out of date" in verify

    resync = run_cli("resync", str(graded_vault))
    assert resync.returncode == 0
    assert "search index: mended 1 missing" in resync.stderr
    assert "in step" in cli("status", str(graded_vault), "--verify")
    with VaultSearch(load_config(None), graded_vault) as search:
        hit = search.search("education discount", limit=1).hits[0]
    assert hit.about == "Pricing · Plans · Education discount"


def test_a_renamed_heading_reaches_the_index_with_the_next_sync(graded_vault: Path) -> None:
    note = graded_vault / "help/Sync.md"
    note.write_text(
        note.read_text(encoding="utf-8").replace("## Storage limits", "## Quota and overage"),
        encoding="utf-8",
    )
    cli("resync", str(graded_vault))

    with VaultSearch(load_config(None), graded_vault) as search:
        hit = search.search("quota overage", limit=1).hits[0]
    assert hit.file == "help/Sync.md"
    assert hit.about.endswith("Quota and overage")
    assert "in step" in cli("status", str(graded_vault), "--verify")


def test_a_stale_claim_text_that_verify_names_is_mended_by_the_next_resync(
    graded_vault: Path,
) -> None:
    # A drift no count shows: the row is there, its claims are not the graph's.
    with sqlite3.connect(_graph(graded_vault)) as conn:
        conn.execute(
            "UPDATE search_words SET claims = 'stale' "
            "WHERE rowid = (SELECT min(doc) FROM search_docs)"
        )
    verify = run_cli("status", str(graded_vault), "--verify").stdout
    assert "(search index): 0 block(s) missing, 0 extra, 1 out of date" in verify

    cli("resync", str(graded_vault))

    assert "in step" in cli("status", str(graded_vault), "--verify")
