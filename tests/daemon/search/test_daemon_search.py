"""The running daemon keeps search current: a block typed into a note is found, by its words
and its vector, once the daemon has graded it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from aclarai.daemon.config import load_config
from aclarai.daemon.search.session import VaultSearch
from tests.helpers.cli import QUIET_S, DaemonProcess, run_cli, wait_until
from tests.helpers.vault import note_text

ALICE = "alice: The deploy to staging failed twice on Tuesday."
ERIN = "erin: The lighthouse keeper logged a grey seal on the north jetty."


def test_a_new_block_is_found_with_its_vector_after_the_daemon_grades_it(
    make_vault: Callable[..., Path], start_daemon: Callable[..., DaemonProcess]
) -> None:
    vault = make_vault({"a.md": note_text([("blk-a1", ALICE)])})
    start_daemon(vault)
    with (vault / "a.md").open("a", encoding="utf-8") as handle:
        handle.write(f"{ERIN}\n<!-- aclarai:id=blk-a2 ver=1 -->\n^blk-a2\n")

    def found() -> bool:
        with VaultSearch(load_config(None), vault) as search:
            result = search.search("seal on the jetty", limit=1)
        return bool(
            result.hits
            and result.hits[0].block_id == "blk-a2"
            and result.hits[0].claim is not None
            and result.unembedded == 0
        )

    wait_until(found, timeout_s=QUIET_S + 15)


def test_a_resync_handed_to_the_daemon_mends_the_index(
    make_vault: Callable[..., Path], start_daemon: Callable[..., DaemonProcess]
) -> None:
    vault = make_vault({"a.md": note_text([("blk-a1", ALICE), ("blk-a2", ERIN)])})
    start_daemon(vault)
    graph = load_config(None).state_dir_for(vault) / "graph.sqlite"
    with sqlite3.connect(graph) as conn:
        (doc,) = conn.execute("SELECT max(doc) FROM search_docs").fetchone()
        conn.execute("DELETE FROM search_words WHERE rowid = ?", (doc,))
        conn.execute("DELETE FROM search_docs WHERE doc = ?", (doc,))
    assert "(search index): 1 block(s) missing" in run_cli("status", str(vault), "--verify").stdout

    assert run_cli("resync", str(vault)).returncode == 0

    assert "in step" in run_cli("status", str(vault), "--verify").stdout
