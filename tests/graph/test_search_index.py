"""The search index follows every write of the store that holds it, on each backend.

Real SQLite FTS5 for the embedded store; with the Bolt server, the store's own index file beside
it. Each test writes through the store's interface only and reads the index back.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from aclarai.graph import GradeWrite, GraphStore
from aclarai.graph.search_index import SearchDoc, SearchIndex, vector_bytes
from aclarai.graph.sqlite import SqliteStore
from tests.graph.builders import block, claim, file_sync, note, score

WEIGHTS = (1.0, 1.0, 1.0, 1.0)


def found(store: GraphStore, expression: str) -> list[str]:
    return [m.block_id for m in store.search.match_words(expression, 10, weights=WEIGHTS)]


def test_a_synced_block_is_found_by_its_rendered_words(store: GraphStore) -> None:
    store.sync_files(
        [note("a.md", "The **Tidewatch** hub uses [[Zigbee|a mesh radio]].", "Other.")]
    )

    assert found(store, '"tidewatch"') == ["a-0"]
    assert found(store, '"mesh"') == ["a-0"]
    # The link target is syntax a reader does not see: only its display text is indexed.
    assert found(store, '"zigbee"') == []
    assert store.search.blocks(["a-0"])["a-0"].body == "The Tidewatch hub uses a mesh radio."


def test_title_headings_and_nearby_text_are_searched_with_the_block(store: GraphStore) -> None:
    record = replace(
        block("a-0", "guides/Sync.md", "It stops at 10 GB."),
        about="Sync · Storage limits",
        nearby="Tip: plans can be upgraded.",
    )
    store.sync_files([file_sync("guides/Sync.md", record)])

    assert found(store, '"storage"') == ["a-0"]
    assert found(store, '"upgraded"') == ["a-0"]
    held = store.search.blocks(["a-0"])["a-0"]
    assert (held.about, held.nearby) == ("Sync · Storage limits", "Tip: plans can be upgraded.")


def test_claims_are_indexed_with_their_block_and_replaced(store: GraphStore) -> None:
    store.sync_files([note("a.md", "Alpha text.")])
    store.replace_claims({"a-0": [claim("c1", "a-0", "The boiler was serviced in March.")]})
    assert found(store, '"boiler"') == ["a-0"]

    a = store.get_blocks(["a-0"])["a-0"]
    store.write_grades(
        [
            GradeWrite(
                {"a-0": [claim("c2", "a-0", "The kettle descales monthly.")]},
                [score("c2", "a-0", a.hash)],
            )
        ]
    )
    assert found(store, '"boiler"') == []
    assert found(store, '"kettle"') == ["a-0"]
    assert store.search.blocks(["a-0"])["a-0"].claims == ("The kettle descales monthly.",)


def test_a_deleted_block_leaves_and_a_restored_one_comes_back_with_its_claims(
    store: GraphStore,
) -> None:
    store.sync_files([note("a.md", "Quartz clocks drift.")])
    store.replace_claims({"a-0": [claim("c", "a-0", "Quartz clocks drift slowly.")]})
    store.mark_deleted(["a-0"])
    assert found(store, '"quartz"') == []

    store.sync_files([note("a.md", "Quartz clocks drift.", mtime_ns=2)])
    assert found(store, '"quartz"') == ["a-0"]
    assert store.search.blocks(["a-0"])["a-0"].claims == ("Quartz clocks drift slowly.",)


def test_a_moved_block_is_found_under_its_new_key_with_its_claims(store: GraphStore) -> None:
    store.sync_files([file_sync("old.md", block("x@old.md", "old.md", "Herons nest early."))])
    store.replace_claims({"x@old.md": [claim("c", "x@old.md", "Herons nest in February.")]})
    moved = replace(block("x@new.md", "new.md", "Herons nest early."), moved_from="x@old.md")
    store.sync_files([file_sync("new.md", moved)])

    assert found(store, '"herons"') == ["x@new.md"]
    assert store.search.blocks(["x@new.md"])["x@new.md"].claims == ("Herons nest in February.",)


def test_an_edit_drops_the_blocks_vector_and_a_same_text_sync_keeps_it(store: GraphStore) -> None:
    store.sync_files([note("a.md", "First text.", "Second text.")])
    rows = store.search.unembedded("m", 10)
    assert len(rows) == 2
    vectors = np.eye(2, 4, dtype=np.float32)
    store.search.put_vectors(
        "m", [(doc, v) for (doc, _), v in zip(rows, vector_bytes(vectors), strict=True)]
    )
    assert store.search.unembedded("m", 10) == []

    store.sync_files([note("a.md", "First text.", "Second text, edited.", mtime_ns=2)])

    keys, matrix, missing = store.search.vectors("m")
    assert keys == ["a-0"] and missing == 1
    assert matrix.tolist() == [[127, 0, 0, 0]]


def test_reconcile_mends_what_the_index_lost_and_drift_names_it(store: GraphStore) -> None:
    store.sync_files([note("a.md", "Pelicans fish.", "Gulls steal.")])
    store.replace_claims({"a-1": [claim("g", "a-1", "Gulls steal chips.")]})
    store.search.write(lambda conn: conn.execute("DELETE FROM search_words"))
    store.search.write(lambda conn: conn.execute("DELETE FROM search_docs"))

    lost = store.search_drift()
    assert (lost.missing, lost.extra, lost.stale) == (2, 0, 0)
    assert store.reconcile_search().missing == 2
    assert store.search_drift().total == 0
    assert found(store, '"chips"') == ["a-1"]
    # Mended from the store alone, a block is about its note's title until a parse.
    assert store.search.blocks(["a-0"])["a-0"].about == "a"
    assert store.search.partial()
    docs = [SearchDoc(b.id, b.file, b.hash, "A · Birds", b.text) for b in store.live_blocks()]
    assert store.search_drift(docs).stale == 2
    store.reconcile_search(docs)
    assert not store.search.partial()
    assert sorted(found(store, '"birds"')) == ["a-0", "a-1"]


def test_chinese_and_japanese_blocks_are_found_by_their_characters(store: GraphStore) -> None:
    store.sync_files([note("zh.md", "潮汐观测站每天记录两次水位。", "Plain English.")])

    grams = store.search.match_grams('"水位"', 5, weights=WEIGHTS)
    assert grams == []  # the trigram table needs three characters
    grams = store.search.match_grams('"记录两"', 5, weights=WEIGHTS)
    assert [m.block_id for m in grams] == ["zh-0"]
    assert store.search.match_grams('"eng"', 5, weights=WEIGHTS) == [], "only CJK blocks"


def test_scope_limits_matches_to_a_note_or_a_folder(store: GraphStore) -> None:
    store.sync_files(
        [
            note("garden/Roses.md", "Prune roses in March."),
            note("garden/deep/Figs.md", "Prune figs in June."),
            note("kitchen.md", "Prune nothing here."),
        ]
    )

    def scoped(scope: str) -> list[str]:
        matches = store.search.match_words('"prune"', 10, weights=WEIGHTS, scope=scope)
        return sorted(m.block_id for m in matches)

    assert scoped("garden") == ["garden/Roses-0", "garden/deep/Figs-0"]
    assert scoped("garden/") == scoped("garden")
    assert scoped("garden/Roses.md") == ["garden/Roses-0"]
    assert scoped("gard") == []


def test_upgrading_an_embedded_store_indexes_the_blocks_it_held(tmp_path: Path) -> None:
    path = tmp_path / "graph.sqlite"
    with SqliteStore(path) as store:
        store.sync_files([note("a.md", "Otters hold hands.")])
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM _aclarai_migrations WHERE name = 'm009_search_index'")
    for table in ("search_words", "search_grams", "search_vectors", "search_meta", "search_docs"):
        conn.execute(f"DROP TABLE {table}")
    for table in ("search_words_vocab", "search_grams_vocab"):
        conn.execute(f"DROP TABLE {table}")
    conn.commit()
    conn.close()

    with SqliteStore(path) as store:
        assert found(store, '"otters"') == ["a-0"]
        assert store.search.partial()


def test_an_index_file_of_its_own_holds_what_it_is_given(tmp_path: Path) -> None:
    index = SearchIndex.open_file(tmp_path / "state" / "search.sqlite")
    try:
        from aclarai.graph.search_index import put_docs

        doc = SearchDoc("k@n.md", "n.md", "h", "n", "Walruses dive deep.")
        index.write(lambda conn: put_docs(conn, [doc]))
        assert [m.block_id for m in index.match_words('"walruses"', 5, weights=WEIGHTS)] == [
            "k@n.md"
        ]
    finally:
        index.close()
    with pytest.raises(Exception, match="closed"):
        index.size()


def test_a_store_write_the_index_did_not_follow_is_mended_by_the_next_refresh(
    store: GraphStore,
) -> None:
    from aclarai.daemon.search.vectors import refresh_search
    from aclarai.graph.search_index import begin_write

    store.sync_files([note("a.md", "Beavers build dams.")])
    # A crash between the graph's commit and the index's write (Neo4j's case) leaves this:
    store.search.write(begin_write)
    store.search.write(lambda conn: conn.execute("DELETE FROM search_words"))
    store.search.write(lambda conn: conn.execute("DELETE FROM search_docs"))
    assert store.search.pending()

    refreshed = refresh_search(store, None)

    assert refreshed.mended.missing == 1
    assert not store.search.pending()
    assert found(store, '"beavers"') == ["a-0"]
    assert refresh_search(store, None, live_blocks=1).mended.total == 0


def test_a_vector_of_a_row_that_changed_meanwhile_is_never_stored_on_its_successor(
    store: GraphStore,
) -> None:
    store.sync_files([note("a.md", "Apples.", "Bananas.")])
    rows = store.search.unembedded("m", 10)
    # The last block is edited while its vector is being computed: its row goes, and the row
    # that replaces it must not take a number the embedder holds.
    store.sync_files([note("a.md", "Apples.", "Cherries.", mtime_ns=2)])
    store.search.put_vectors("m", [(doc, bytes(4)) for doc, _ in rows])

    assert [text for _, text in store.search.unembedded("m", 10)] == ["Cherries."]
