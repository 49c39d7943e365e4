"""The one contract every GraphStore backend keeps; it speaks only through the interface."""

from __future__ import annotations

import dataclasses
import re

import pytest

from aclarai.graph import (
    BlockRecord,
    FileState,
    GradeWrite,
    GraphStore,
    ScoreRecord,
    StoreCounts,
    block_key,
    claim_quality,
)
from aclarai.parsers import StoreError
from tests.graph.builders import block, claim, file_sync, note, score

UTC_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _hash(store: GraphStore, block_id: str) -> str:
    return store.get_blocks([block_id])[block_id].hash


def _scored_store(store: GraphStore) -> None:
    """a.md with blocks a-0, a-1; claims c1, c2 on a-0 (c1 scored) and c3 on a-1."""
    store.sync_files([note("a.md", "alice: the deploy failed.", "bob: I rolled back.")])
    store.replace_claims(
        {"a-0": [claim("c1", "a-0"), claim("c2", "a-0")], "a-1": [claim("c3", "a-1")]}
    )
    assert store.write_scores([score("c1", "a-0", _hash(store, "a-0"))]) == 1


# --- empty store, file states ---------------------------------------------------------------


def test_empty_store(store: GraphStore) -> None:
    assert store.file_states() == {}
    assert store.counts() == StoreCounts(0, 0, 0, 0, 0, 0, 0)
    assert store.low_quality_claims() == []
    assert store.sync_files([]) == []
    assert store.claims_needing_evaluation() == []
    assert store.get_blocks(["nope"]) == {}
    assert store.blocks_of_file("a.md") == []
    assert store.claims_of_blocks(["nope"]) == {"nope": []}


def test_sync_records_and_updates_file_states(store: GraphStore) -> None:
    store.sync_files([note("a.md", "one.", mtime_ns=5), note("sub/b.md", "two.", mtime_ns=6)])
    states = store.file_states()
    assert set(states) == {"a.md", "sub/b.md"}
    assert states["a.md"] == FileState("a.md", 5, 4, "f" * 64)

    store.sync_files([file_sync("a.md", block("a-0", "a.md", "one."), mtime_ns=9, size=77)])
    assert store.file_states()["a.md"] == FileState("a.md", 9, 77, "a" * 64)
    assert store.file_states()["sub/b.md"].mtime_ns == 6


def test_file_states_of_some_paths_are_only_those_the_store_knows(store: GraphStore) -> None:
    store.sync_files([note("a.md", "one.", mtime_ns=5), note("b.md", "two."), note("c.md", "3.")])

    assert store.file_states(["a.md", "c.md", "missing.md"]) == {
        "a.md": FileState("a.md", 5, 4, "f" * 64),
        "c.md": FileState("c.md", 1, 2, "f" * 64),
    }
    assert store.file_states(path for path in ["b.md"]).keys() == {"b.md"}
    assert store.file_states([]) == {}
    assert store.file_states(None).keys() == {"a.md", "b.md", "c.md"}


def test_forget_files_drops_states_and_returns_live_blocks(store: GraphStore) -> None:
    store.sync_files([note("a.md", "one.", "two.", "three."), note("b.md", "four.")])
    store.mark_deleted(["a-1"])

    assert store.forget_files(["a.md", "missing.md"]) == ["a-0", "a-2"]
    assert set(store.file_states()) == {"b.md"}
    # Forgetting a file is not deleting its blocks: they may have moved elsewhere.
    assert store.get_blocks(["a-0"])["a-0"].deleted_at is None
    assert store.forget_files(["a.md"]) == ["a-0", "a-2"]
    assert store.forget_files([]) == []


# --- sync_files -----------------------------------------------------------------------------


def test_first_sync_stores_every_block_as_changed(store: GraphStore) -> None:
    results = store.sync_files([note("a.md", "alpha.", "beta."), note("b.md", "gamma.")])

    assert [(r.path, r.changed, r.unchanged, r.removed) for r in results] == [
        ("a.md", ("a-0", "a-1"), (), ()),
        ("b.md", ("b-0",), (), ()),
    ]
    stored = store.get_blocks(["a-1"])["a-1"]
    expected = block("a-1", "a.md", "beta.", position=1)
    assert (stored.id, stored.file, stored.text, stored.hash, stored.version, stored.position) == (
        expected.id,
        expected.file,
        expected.text,
        expected.hash,
        expected.version,
        expected.position,
    )
    assert stored.deleted_at is None
    assert stored.updated_at
    assert [b.id for b in store.blocks_of_file("a.md")] == ["a-0", "a-1"]
    assert store.counts() == StoreCounts(2, 3, 0, 0, 0, 0)


def test_resync_of_the_same_files_is_idempotent(store: GraphStore) -> None:
    files = [note("a.md", "alpha.", "beta.")]
    store.sync_files(files)
    before = store.get_blocks(["a-0", "a-1"])

    [result] = store.sync_files(files)

    assert result.changed == ()
    assert result.unchanged == ("a-0", "a-1")
    assert result.removed == ()
    # Nothing was rewritten: not even the timestamp moved.
    assert store.get_blocks(["a-0", "a-1"]) == before
    assert store.counts().blocks == 2


def test_text_edit_is_changed_and_rewritten(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.", "beta.")])
    [result] = store.sync_files([note("a.md", "alpha.", "beta, edited.")])

    assert result.changed == ("a-1",)
    assert result.unchanged == ("a-0",)
    stored = store.get_blocks(["a-1"])["a-1"]
    assert stored.text == "beta, edited."
    assert stored.hash == block("x", "a.md", "beta, edited.").hash


def test_version_or_position_change_is_written_but_not_dirty(store: GraphStore) -> None:
    store.sync_files(
        [file_sync("a.md", block("x", "a.md", "one.", 0), block("y", "a.md", "two.", 1))]
    )

    [result] = store.sync_files(
        [file_sync("a.md", block("y", "a.md", "two.", 0), block("x", "a.md", "one.", 1, version=4))]
    )

    assert result.changed == ()
    assert result.unchanged == ("y", "x")
    assert store.get_blocks(["x"])["x"].version == 4
    assert [b.id for b in store.blocks_of_file("a.md")] == ["y", "x"]


def test_block_removed_from_a_file_is_reported_not_deleted(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.", "beta.", "gamma.")])
    shorter = file_sync(
        "a.md", block("a-0", "a.md", "alpha.", 0), block("a-2", "a.md", "gamma.", 1)
    )

    [result] = store.sync_files([shorter])

    assert result.removed == ("a-1",)
    assert result.unchanged == ("a-0", "a-2")
    assert store.get_blocks(["a-1"])["a-1"].deleted_at is None

    store.mark_deleted(result.removed)
    [again] = store.sync_files([shorter])
    assert again.removed == (), "a deleted block is not reported again"


def test_move_between_files_keeps_identity_claims_and_scores(store: GraphStore) -> None:
    _scored_store(store)
    store.sync_files([note("b.md", "carol: hello.")])

    moved = block("a-0", "b.md", "alice: the deploy failed.", position=1)
    [b_result] = store.sync_files([file_sync("b.md", block("b-0", "b.md", "carol: hello."), moved)])
    [a_result] = store.sync_files([file_sync("a.md", block("a-1", "a.md", "bob: I rolled back."))])

    assert b_result.unchanged == ("b-0", "a-0")
    assert b_result.changed == ()
    assert a_result.removed == (), "a moved block is no longer in its old file"
    assert store.get_blocks(["a-0"])["a-0"].file == "b.md"
    assert [b.id for b in store.blocks_of_file("b.md")] == ["b-0", "a-0"]
    assert [b.id for b in store.blocks_of_file("a.md")] == ["a-1"]
    claims = store.claims_of_blocks(["a-0"])["a-0"]
    assert [c.id for c in claims] == ["c1", "c2"]
    assert claims[0].score is not None


def test_move_within_one_call_is_not_reported_removed(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.", "beta."), note("b.md", "gamma.")])

    results = store.sync_files(
        [
            file_sync("a.md", block("a-0", "a.md", "alpha.")),
            file_sync("b.md", block("b-0", "b.md", "gamma."), block("a-1", "b.md", "beta.", 1)),
        ]
    )

    assert [r.removed for r in results] == [(), ()]
    assert store.get_blocks(["a-1"])["a-1"].file == "b.md"


def test_same_id_in_two_notes_is_two_blocks_found_by_their_id(store: GraphStore) -> None:
    a, b = block_key("a.md", "summary"), block_key("b.md", "summary")
    store.sync_files(
        [
            file_sync("a.md", block(a, "a.md", "alpha.")),
            file_sync(
                "b.md",
                block(b, "b.md", "alpha."),
                block(block_key("b.md", "summary-2"), "b.md", "beta.", 1),
                block(block_key("b.md", "summaryZ"), "b.md", "gamma.", 2),
            ),
        ]
    )
    store.replace_claims({a: [claim("c1", a)], b: [claim("c2", b)]})

    found = store.live_blocks_with_ids(["summary", "summar", "nothing"])
    assert [(x.id, x.file, x.block_id) for x in found] == [
        (a, "a.md", "summary"),
        (b, "b.md", "summary"),
    ]
    assert {k: [c.id for c in v] for k, v in store.claims_of_blocks([a, b]).items()} == {
        a: ["c1"],
        b: ["c2"],
    }
    store.mark_deleted([a])
    assert [x.id for x in store.live_blocks_with_ids(["summary"])] == [b]


def test_a_block_taking_over_another_notes_block_gets_its_claims_and_scores(
    store: GraphStore,
) -> None:
    _scored_store(store)
    moved = dataclasses.replace(
        block(block_key("c.md", "a-0"), "c.md", "alice: the deploy failed."), moved_from="a-0"
    )

    [c_result, a_result] = store.sync_files(
        [file_sync("c.md", moved), file_sync("a.md", block("a-1", "a.md", "bob: I rolled back."))]
    )

    assert (c_result.changed, c_result.unchanged) == ((), (moved.id,)), "same text: not dirty"
    assert a_result.removed == (), "moved, not removed"
    assert store.get_blocks(["a-0"]) == {}
    assert store.get_blocks([moved.id])[moved.id].file == "c.md"
    claims = store.claims_of_blocks([moved.id])[moved.id]
    assert [(c.id, c.block_id) for c in claims] == [("c1", moved.id), ("c2", moved.id)]
    assert claims[0].score is not None and claims[0].score.block_id == moved.id
    assert store.write_scores([score("c2", moved.id, _hash(store, moved.id))]) == 1


def test_a_block_never_takes_over_a_listed_or_deleted_block(store: GraphStore) -> None:
    _scored_store(store)
    store.mark_deleted(["a-1"])
    from_deleted = dataclasses.replace(
        block("c-1", "c.md", "bob: I rolled back."), moved_from="a-1"
    )
    from_listed = dataclasses.replace(
        block("c-0", "c.md", "alice: the deploy failed."), moved_from="a-0"
    )

    [a_result, c_result] = store.sync_files(
        [
            file_sync("a.md", block("a-0", "a.md", "alice: the deploy failed.")),
            file_sync("c.md", from_listed, dataclasses.replace(from_deleted, position=1)),
        ]
    )

    assert c_result.changed == ("c-0", "c-1"), "both are new blocks"
    assert a_result.unchanged == ("a-0",)
    assert store.get_blocks(["a-1"])["a-1"].deleted_at is not None
    assert [c.id for c in store.claims_of_blocks(["a-0"])["a-0"]] == ["c1", "c2"]
    assert store.claims_of_blocks(["c-0", "c-1"]) == {"c-0": [], "c-1": []}


def test_deleted_block_that_reappears_is_restored_as_changed(store: GraphStore) -> None:
    _scored_store(store)
    assert store.mark_deleted(["a-0"]) == 1

    [result] = store.sync_files([note("a.md", "alice: the deploy failed.", "bob: I rolled back.")])

    assert result.changed == ("a-0",)
    assert result.unchanged == ("a-1",)
    assert store.get_blocks(["a-0"])["a-0"].deleted_at is None
    assert store.counts().deleted_blocks == 0
    [c1, _] = store.claims_of_blocks(["a-0"])["a-0"]
    assert c1.score is not None, "a restore brings the claims back with their scores"


def test_records_that_disagree_are_programming_errors(store: GraphStore) -> None:
    with pytest.raises(ValueError, match="says file"):
        store.sync_files([file_sync("a.md", block("x", "b.md", "alpha."))])
    store.sync_files([note("a.md", "alpha.")])
    with pytest.raises(ValueError, match="names block"):
        store.replace_claims({"a-0": [claim("c", "other")]})
    assert store.counts() == StoreCounts(1, 1, 0, 0, 0, 0)


# --- record_write ---------------------------------------------------------------------------


def test_record_write_stores_the_state_and_the_new_versions(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.", "beta.")])
    before = store.get_blocks(["a-0", "a-1"])
    new_state = FileState("a.md", 42, 99, "b" * 64)

    assert store.record_write(new_state, {"a-0": 7, "a-1": 1}) is None

    assert store.file_states(["a.md"]) == {"a.md": new_state}
    after = store.get_blocks(["a-0", "a-1"])
    assert after["a-0"] == dataclasses.replace(
        before["a-0"], version=7, updated_at=after["a-0"].updated_at
    )
    assert UTC_STAMP.fullmatch(after["a-0"].updated_at)
    assert after["a-1"] == before["a-1"], "an unchanged version is not written"
    [result] = store.sync_files([file_sync("a.md", *_records(store, "a.md"), mtime_ns=42)])
    assert (result.changed, result.removed) == ((), ())


def test_record_write_ignores_other_files_deleted_and_unknown_blocks(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.", "beta."), note("b.md", "gamma.")])
    store.mark_deleted(["a-1"])
    before = store.get_blocks(["a-1", "b-0"])

    store.record_write(FileState("a.md", 2, 3, "c" * 64), {"a-1": 5, "b-0": 5, "ghost": 5})

    assert store.get_blocks(["a-1", "b-0", "ghost"]) == before, "nothing added or restored"
    assert store.counts() == StoreCounts(2, 2, 1, 0, 0, 0)
    assert store.file_states()["a.md"] == FileState("a.md", 2, 3, "c" * 64)
    assert store.file_states()["b.md"].mtime_ns == 1


def test_record_write_of_a_new_path_only_records_its_state(store: GraphStore) -> None:
    store.record_write(FileState("new.md", 1, 2, "d" * 64), {})

    assert store.file_states() == {"new.md": FileState("new.md", 1, 2, "d" * 64)}
    assert store.counts().blocks == 0


def _records(store: GraphStore, path: str) -> list[BlockRecord]:
    return [
        BlockRecord(b.id, b.file, b.text, b.hash, b.version, b.position)
        for b in store.blocks_of_file(path)
    ]


# --- mark_deleted, get_blocks ---------------------------------------------------------------


def test_mark_deleted_counts_only_live_blocks(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.", "beta.", "gamma.")])

    assert store.mark_deleted(["a-0", "a-2", "unknown"]) == 2
    assert store.mark_deleted(["a-0"]) == 0
    assert store.mark_deleted([]) == 0

    assert [b.id for b in store.blocks_of_file("a.md")] == ["a-1"]
    deleted = store.get_blocks(["a-0", "a-1"])
    assert UTC_STAMP.fullmatch(deleted["a-0"].deleted_at or "")
    assert UTC_STAMP.fullmatch(deleted["a-0"].updated_at)
    assert deleted["a-1"].deleted_at is None
    counts = store.counts()
    assert (counts.blocks, counts.deleted_blocks) == (1, 2)


# --- claims ---------------------------------------------------------------------------------


def test_new_claims_come_back_unscored_in_the_order_given(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.", "beta.")])
    store.replace_claims({"a-0": [claim("z", "a-0", "Zed."), claim("b", "a-0", "Bee.")]})

    result = store.claims_of_blocks(["a-0", "a-1", "unknown"])

    assert set(result) == {"a-0", "a-1", "unknown"}
    assert [(c.id, c.block_id, c.text, c.score) for c in result["a-0"]] == [
        ("z", "a-0", "Zed.", None),
        ("b", "a-0", "Bee.", None),
    ]
    assert result["a-1"] == []
    assert store.counts().claims == 2


def test_replace_claims_keeps_scores_of_kept_claims_only(store: GraphStore) -> None:
    _scored_store(store)

    store.replace_claims({"a-0": [claim("c4", "a-0"), claim("c1", "a-0")]})

    claims = store.claims_of_blocks(["a-0", "a-1"])
    assert [c.id for c in claims["a-0"]] == ["c4", "c1"]
    assert claims["a-0"][0].score is None
    kept = claims["a-0"][1].score
    assert kept is not None
    assert kept.entailed_score == pytest.approx(0.9)
    assert [c.id for c in claims["a-1"]] == ["c3"], "blocks not named are left alone"
    assert store.counts().claims == 3, "c2 originated from nothing else and is gone"


def test_claim_shared_by_two_blocks_survives_losing_one_edge(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.", "beta.")])
    store.replace_claims({"a-0": [claim("shared", "a-0")], "a-1": [claim("shared", "a-1")]})

    store.replace_claims({"a-0": []})

    claims = store.claims_of_blocks(["a-0", "a-1"])
    assert claims["a-0"] == []
    assert [c.id for c in claims["a-1"]] == ["shared"]
    assert store.counts().claims == 1


def test_replacing_with_nothing_removes_every_claim_of_the_block(store: GraphStore) -> None:
    _scored_store(store)
    store.replace_claims({"a-0": [], "a-1": []})

    assert store.claims_of_blocks(["a-0", "a-1"]) == {"a-0": [], "a-1": []}
    assert store.counts() == StoreCounts(1, 2, 0, 0, 0, 0)
    assert store.claims_needing_evaluation() == []


# --- scores ---------------------------------------------------------------------------------


def test_scores_round_trip_with_every_field(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.")])
    store.replace_claims({"a-0": [claim("c", "a-0")]})
    full = dataclasses.replace(
        score("c", "a-0", _hash(store, "a-0"), 0.5, 0.25, 1.0),
        verdict="weakly_supported",
        justification="Half of it is in the source.",
        omitted=("on Tuesday", "twice"),
        evaluated_at="2024-06-03T09:00:00Z",
    )

    assert store.write_scores([full]) == 1

    [stored] = store.claims_of_blocks(["a-0"])["a-0"]
    assert stored.score == full
    assert stored.score.quality == pytest.approx(claim_quality(0.5, 0.25, 1.0))
    assert stored.score.quality == pytest.approx(0.5)


def test_evaluated_at_defaults_to_the_write_time(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.")])
    store.replace_claims({"a-0": [claim("c", "a-0")]})
    store.write_scores([score("c", "a-0", _hash(store, "a-0"))])

    [stored] = store.claims_of_blocks(["a-0"])["a-0"]
    assert stored.score is not None
    assert UTC_STAMP.fullmatch(stored.score.evaluated_at or "")
    assert stored.score.omitted == ()


def test_write_scores_skips_stale_hashes_and_unknown_edges(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.", "beta.")])
    store.replace_claims({"a-0": [claim("c1", "a-0")], "a-1": [claim("c2", "a-1")]})
    old_hash = _hash(store, "a-0")
    store.sync_files([note("a.md", "alpha, edited while evaluating.", "beta.")])

    written = store.write_scores(
        [
            score("c1", "a-0", old_hash),
            score("c2", "a-1", _hash(store, "a-1")),
            score("c2", "a-0", _hash(store, "a-0")),
            score("nope", "a-1", _hash(store, "a-1")),
        ]
    )

    assert written == 1
    claims = store.claims_of_blocks(["a-0", "a-1"])
    assert claims["a-0"][0].score is None, "a score for an old text is never stored"
    assert claims["a-1"][0].score is not None
    assert store.write_scores([]) == 0


def test_record_writes_records_each_note_as_record_write_does(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.", "beta."), note("b.md", "gamma.")])

    store.record_writes(
        [
            (FileState("a.md", 7, 70, "1" * 64), {"a-0": 2, "b-0": 9, "ghost": 4}),
            (FileState("b.md", 8, 80, "2" * 64), {}),
        ]
    )

    states = store.file_states()
    assert states["a.md"] == FileState("a.md", 7, 70, "1" * 64)
    assert states["b.md"] == FileState("b.md", 8, 80, "2" * 64)
    blocks = store.get_blocks(["a-0", "a-1", "b-0", "ghost"])
    assert (blocks["a-0"].version, blocks["a-1"].version) == (2, 1)
    assert blocks["b-0"].version == 1, "a version is recorded only for a block of its own note"
    assert "ghost" not in blocks
    store.record_writes([])


def test_write_grades_replaces_claims_then_scores_each_grade_in_order(store: GraphStore) -> None:
    _scored_store(store)
    store.sync_files([note("b.md", "carol: the build passed.")])
    a0, a1, b0 = _hash(store, "a-0"), _hash(store, "a-1"), _hash(store, "b-0")

    written = store.write_grades(
        [
            # a-0 re-extracted: c1 kept (its score too), c2 dropped, c5 new and scored at once.
            GradeWrite(
                {"a-0": [claim("c5", "a-0"), claim("c1", "a-0")]},
                [score("c5", "a-0", a0, 0.4, 0.5, 0.6), score("c3", "a-1", a1, 0.7, 0.8, 0.9)],
            ),
            GradeWrite({}, []),
            # A stale hash and an unknown edge are skipped, as write_scores skips them.
            GradeWrite(
                {"b-0": [claim("c6", "b-0")]},
                [score("c6", "b-0", "0" * 64), score("nope", "b-0", b0)],
            ),
        ]
    )

    assert written == [2, 0, 0]
    claims = store.claims_of_blocks(["a-0", "a-1", "b-0"])
    assert [c.id for c in claims["a-0"]] == ["c5", "c1"]
    assert claims["a-0"][1].score is not None, "a kept claim keeps its score"
    assert claims["a-0"][0].score is not None
    assert claims["a-0"][0].score.entailed_score == pytest.approx(0.4)
    assert claims["a-1"][0].score is not None
    assert claims["a-1"][0].score.decontextualization_score == pytest.approx(0.9)
    assert [(c.id, c.score) for c in claims["b-0"]] == [("c6", None)]
    assert store.counts().claims == 4, "c1, c3, c5, c6: c2 originated from nothing else"
    assert store.write_grades([]) == []


def test_write_grades_with_an_unknown_block_writes_nothing(store: GraphStore) -> None:
    _scored_store(store)
    a0 = _hash(store, "a-0")
    before = store.claims_of_blocks(["a-0", "a-1"])

    with pytest.raises(StoreError, match="no such block"):
        store.write_grades(
            [
                GradeWrite({"a-0": [claim("c9", "a-0")]}, [score("c9", "a-0", a0)]),
                GradeWrite({"ghost": [claim("c8", "ghost")]}, []),
            ]
        )

    assert store.claims_of_blocks(["a-0", "a-1"]) == before, "all or nothing"


def test_a_later_evaluation_replaces_the_earlier_one(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.")])
    store.replace_claims({"a-0": [claim("c", "a-0")]})
    current = _hash(store, "a-0")
    store.write_scores([score("c", "a-0", current, coverage=None, status="coverage: timeout")])
    store.write_scores([score("c", "a-0", current, 0.1, 0.2, 0.3)])

    [stored] = store.claims_of_blocks(["a-0"])["a-0"]
    assert stored.score is not None
    assert (stored.score.coverage_score, stored.score.status) == (pytest.approx(0.2), "ok")


def test_null_scores_are_kept_as_null_and_counted(store: GraphStore) -> None:
    _scored_store(store)
    failed = score("c2", "a-0", _hash(store, "a-0"), entailed=None, status="entailment: timeout")
    assert store.write_scores([failed]) == 1

    [_, c2] = store.claims_of_blocks(["a-0"])["a-0"]
    assert c2.score is not None
    assert c2.score.entailed_score is None, "a failure is never stored as 0"
    assert c2.score.coverage_score == pytest.approx(0.8)
    assert c2.score.status == "entailment: timeout"
    assert c2.score.quality is None
    assert store.counts() == StoreCounts(1, 2, 0, 3, 1, 1)


# --- claims_needing_evaluation --------------------------------------------------------------


def test_claims_needing_evaluation_cases(store: GraphStore) -> None:
    store.sync_files([note("a.md", "one.", "two.", "three.", "four.", "five.")])
    store.replace_claims(
        {
            "a-0": [claim("never", "a-0")],
            "a-1": [claim("done", "a-1")],
            "a-2": [claim("failed", "a-2")],
            "a-3": [claim("stale", "a-3")],
            "a-4": [claim("gone", "a-4")],
        }
    )
    store.write_scores(
        [
            score("done", "a-1", _hash(store, "a-1")),
            score("failed", "a-2", _hash(store, "a-2"), decontext=None, status="error"),
            score("stale", "a-3", _hash(store, "a-3")),
        ]
    )
    store.sync_files([note("a.md", "one.", "two.", "three.", "four, edited.", "five.")])
    store.mark_deleted(["a-4"])

    needing = store.claims_needing_evaluation()

    assert [(c.id, c.block_id) for c in needing] == [
        ("never", "a-0"),
        ("failed", "a-2"),
        ("stale", "a-3"),
    ]
    stale = needing[2].score
    assert stale is not None
    assert stale.evaluated_hash != _hash(store, "a-3")


def test_rescoring_against_the_current_hash_clears_the_need(store: GraphStore) -> None:
    _scored_store(store)
    assert {c.id for c in store.claims_needing_evaluation()} == {"c2", "c3"}

    store.write_scores(
        [
            score(c.id, c.block_id, _hash(store, c.block_id))
            for c in store.claims_needing_evaluation()
        ]
    )

    assert store.claims_needing_evaluation() == []
    assert store.counts() == StoreCounts(1, 2, 0, 3, 3, 0)


# --- counts ---------------------------------------------------------------------------------


def test_counts_track_every_kind_of_row(store: GraphStore) -> None:
    _scored_store(store)
    store.sync_files([note("b.md", "x.", "y.")])
    store.mark_deleted(["b-1"])
    store.write_scores([score("c3", "a-1", _hash(store, "a-1"), 0.1, None, None, "error")])

    assert store.counts() == StoreCounts(
        files=2, blocks=3, deleted_blocks=1, claims=3, scored_claims=1, null_scores=1, low_quality=0
    )
    assert store.counts(quality_threshold=0.8).low_quality == 1, "c1 is at ~0.80, c3 is null"
    store.forget_files(["b.md"])
    assert store.counts().files == 1


# --- claim quality ---------------------------------------------------------------------------


def _quality_store(store: GraphStore) -> dict[str, ScoreRecord]:
    """One claim per block of a.md, each scored to a different quality; returns the scores.

    high ~0.80, low 0.50, lower ~0.18, zero 0.0, failed null, unscored never evaluated, and
    gone ~0.18 on a block that is then deleted.
    """
    names = ["high", "low", "lower", "zero", "failed", "unscored", "gone"]
    store.sync_files([note("a.md", *(f"{name} text." for name in names))])
    store.replace_claims({f"a-{i}": [claim(name, f"a-{i}")] for i, name in enumerate(names)})
    triples = {
        "high": (0.9, 0.8, 0.7),
        "low": (0.5, 0.25, 1.0),
        "lower": (0.1, 0.2, 0.3),
        "zero": (0.0, 0.9, 0.9),
        "failed": (None, 0.9, 0.9),
        "gone": (0.1, 0.2, 0.3),
    }
    written = {
        name: dataclasses.replace(
            score(name, f"a-{names.index(name)}", _hash(store, f"a-{names.index(name)}"), *t),
            omitted=("on Tuesday", "twice"),
            evaluated_at="2024-06-03T09:00:00Z",
        )
        for name, t in triples.items()
    }
    assert store.write_scores(list(written.values())) == len(written)
    store.mark_deleted([f"a-{names.index('gone')}"])
    return written


def test_claims_of_a_deleted_block_count_nowhere_until_it_is_restored(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.", "beta.")])
    store.replace_claims({"a-0": [claim("c0", "a-0")], "a-1": [claim("c1", "a-1")]})
    store.write_scores(
        [score("c0", "a-0", _hash(store, "a-0"), 0.2), score("c1", "a-1", _hash(store, "a-1"))]
    )
    assert store.counts() == StoreCounts(1, 2, 0, 2, 2, 0, 1)
    store.mark_deleted(["a-0"])
    assert store.counts() == StoreCounts(1, 1, 1, 1, 1, 0, 0)
    store.sync_files([note("a.md", "alpha.", "beta.")])
    assert store.counts() == StoreCounts(1, 2, 0, 2, 2, 0, 1), "restored with its claim"


def test_low_quality_counts_only_scored_claims_of_live_blocks_strictly_below(
    store: GraphStore,
) -> None:
    written = _quality_store(store)

    assert store.counts().low_quality == 3, "the default threshold is 0.70"
    assert store.counts(quality_threshold=0.70) == StoreCounts(
        files=1,
        blocks=6,
        deleted_blocks=1,
        claims=6,
        scored_claims=4,
        null_scores=1,
        low_quality=3,
    )
    assert store.counts(quality_threshold=0.0).low_quality == 0
    assert store.counts(quality_threshold=1.0).low_quality == 4, "null and unscored never count"
    at_low = written["low"].quality
    assert at_low == pytest.approx(0.5)
    assert store.counts(quality_threshold=at_low).low_quality == 2, "equal is not below"


def test_low_quality_claims_lists_the_lowest_first_with_their_scores(store: GraphStore) -> None:
    written = _quality_store(store)

    listed = store.low_quality_claims(0.70, 10)

    assert [(c.id, c.block_id, c.text) for c in listed] == [
        ("zero", "a-3", "claim zero"),
        ("lower", "a-2", "claim lower"),
        ("low", "a-1", "claim low"),
    ]
    assert [c.score for c in listed] == [written["zero"], written["lower"], written["low"]]
    assert [c.id for c in store.low_quality_claims(0.70, 2)] == ["zero", "lower"]
    assert [c.id for c in store.low_quality_claims()] == ["zero", "lower", "low"]
    assert store.low_quality_claims(0.70, 0) == []
    assert store.low_quality_claims(0.0, 10) == []
    with pytest.raises(ValueError, match="limit"):
        store.low_quality_claims(0.70, -1)


def test_low_quality_follows_rescoring(store: GraphStore) -> None:
    store.sync_files([note("a.md", "alpha.", "beta.")])
    store.replace_claims({"a-0": [claim("c", "a-0")], "a-1": [claim("c", "a-1")]})
    store.write_scores(
        [
            score("c", "a-0", _hash(store, "a-0"), 0.2, 0.2, 0.2),
            score("c", "a-1", _hash(store, "a-1"), 0.3, 0.3, 0.3),
        ]
    )

    assert store.counts().low_quality == 2, "one per edge, as the listing has them"
    assert [(c.id, c.block_id) for c in store.low_quality_claims()] == [("c", "a-0"), ("c", "a-1")]

    store.write_scores([score("c", "a-0", _hash(store, "a-0"))])
    assert [c.block_id for c in store.low_quality_claims()] == ["a-1"]
    store.write_scores([score("c", "a-1", _hash(store, "a-1"), None, 0.3, 0.3, "error")])
    assert store.low_quality_claims() == []
    assert store.counts().low_quality == 0


# --- the dashboard's questions ---------------------------------------------------------------


def test_low_quality_claims_of_one_note_and_without_limit(store: GraphStore) -> None:
    _quality_store(store)
    store.sync_files([note("b.md", "bad text.")])
    store.replace_claims({"b-0": [claim("bad", "b-0")]})
    store.write_scores([score("bad", "b-0", _hash(store, "b-0"), 0.05, 0.05, 0.05)])

    assert [c.id for c in store.low_quality_claims(0.70, None)] == [
        "zero",
        "bad",
        "lower",
        "low",
    ]
    assert [c.id for c in store.low_quality_claims(0.70, None, file="a.md")] == [
        "zero",
        "lower",
        "low",
    ]
    assert [c.id for c in store.low_quality_claims(0.70, 1, file="b.md")] == ["bad"]
    assert store.low_quality_claims(0.70, None, file="nope.md") == []


def test_failed_claims_lists_null_scores_of_live_blocks_in_file_order(store: GraphStore) -> None:
    _quality_store(store)
    store.sync_files([note("b.md", "one.", "two.")])
    store.replace_claims({"b-0": [claim("b0", "b-0")], "b-1": [claim("b1", "b-1")]})
    store.write_scores(
        [
            score("b1", "b-1", _hash(store, "b-1"), 0.5, None, 0.5, "timeout"),
            score("b0", "b-0", _hash(store, "b-0"), None, None, None, "unparseable"),
        ]
    )

    failed = store.failed_claims()
    assert [(c.id, c.block_id, c.score.status if c.score else None) for c in failed] == [
        ("failed", "a-4", "ok"),
        ("b0", "b-0", "unparseable"),
        ("b1", "b-1", "timeout"),
    ]
    assert failed[2].score is not None and failed[2].score.coverage_score is None
    assert failed[2].score.entailed_score == pytest.approx(0.5)
    assert [c.id for c in store.failed_claims(file="b.md")] == ["b0", "b1"]
    assert [c.id for c in store.failed_claims(2)] == ["failed", "b0"]
    assert store.failed_claims(0) == []
    with pytest.raises(ValueError, match="limit"):
        store.failed_claims(-1)


def test_note_stats_per_note_with_its_weakest_claim(store: GraphStore) -> None:
    written = _quality_store(store)
    store.sync_files([note("b.md", "one.", "two."), note("c.md", "three.")])
    # Two claims tie at the lowest quality: the lower claim id wins.
    store.replace_claims({"b-0": [claim("y", "b-0")], "b-1": [claim("x", "b-1")]})
    store.write_scores(
        [
            dataclasses.replace(
                score("y", "b-0", _hash(store, "b-0"), 0.4, 0.4, 0.4),
                evaluated_at="2024-06-05T10:00:00Z",
            ),
            dataclasses.replace(
                score("x", "b-1", _hash(store, "b-1"), 0.4, 0.4, 0.4),
                evaluated_at="2024-06-04T10:00:00Z",
            ),
        ]
    )

    stats = {s.file: s for s in store.note_stats()}

    assert list(stats) == ["a.md", "b.md", "c.md"]
    a = stats["a.md"]
    assert (a.blocks, a.claims, a.scored) == (6, 6, 4), "the deleted block's claim is left out"
    live = [written[name].quality for name in ("high", "low", "lower", "zero")]
    assert a.mean_quality == pytest.approx(sum(q for q in live if q is not None) / 4)
    assert a.weakest is not None
    assert (a.weakest.claim_id, a.weakest.block_id, a.weakest.text, a.weakest.file) == (
        "zero",
        "a-3",
        "claim zero",
        "a.md",
    )
    assert a.weakest.quality == 0.0
    assert a.last_evaluated is not None and a.last_evaluated.startswith("2024-06-03T09:00:00")
    assert a.below == 3, "low, lower and zero are below the default 0.70"
    assert {s.file: s.below for s in store.note_stats(0.45)} == {"a.md": 2, "b.md": 2, "c.md": 0}
    b = stats["b.md"]
    assert b.weakest is not None and (b.weakest.claim_id, b.weakest.block_id) == ("x", "b-1")
    assert b.weakest.quality == pytest.approx(0.4)
    assert b.last_evaluated is not None and b.last_evaluated.startswith("2024-06-05")
    c = stats["c.md"]
    assert (c.blocks, c.claims, c.scored, c.mean_quality, c.weakest, c.last_evaluated) == (
        1,
        0,
        0,
        None,
        None,
        None,
    )
    assert c.below == 0


def test_score_counts_in_hundredths_of_live_blocks(store: GraphStore) -> None:
    _quality_store(store)

    counts = store.score_counts()

    # high, low, lower, zero, failed (entailment null) are live; gone is deleted.
    assert counts == {
        "entailed_score": {90: 1, 50: 1, 10: 1, 0: 1},
        "coverage_score": {80: 1, 25: 1, 20: 1, 90: 2},
        "decontextualization_score": {70: 1, 100: 1, 30: 1, 90: 2},
    }
    store.sync_files([note("b.md", "one.")])
    store.replace_claims({"b-0": [claim("r", "b-0")]})
    store.write_scores([score("r", "b-0", _hash(store, "b-0"), 0.904, 0.896, 0.7)])
    counts = store.score_counts()
    assert counts["entailed_score"][90] == 2
    assert counts["coverage_score"][90] == 3


def test_daily_quality_means_by_evaluation_day(store: GraphStore) -> None:
    store.sync_files([note("a.md", "one.", "two.", "three.", "four.")])
    store.replace_claims({f"a-{i}": [claim(f"c{i}", f"a-{i}")] for i in range(4)})
    days = ["2024-06-04T23:59:00Z", "2024-06-03T08:00:00Z", "2024-06-04T00:00:00Z"]
    values = [0.2, 0.9, 0.4]
    store.write_scores(
        [
            dataclasses.replace(
                score(f"c{i}", f"a-{i}", _hash(store, f"a-{i}"), v, v, v), evaluated_at=day
            )
            for i, (day, v) in enumerate(zip(days, values, strict=True))
        ]
        + [score("c3", "a-3", _hash(store, "a-3"), None, 0.5, 0.5, "error")]
    )

    daily = store.daily_quality()

    assert [(d.day, d.claims) for d in daily] == [("2024-06-03", 1), ("2024-06-04", 2)]
    assert daily[0].mean_quality == pytest.approx(0.9)
    assert daily[1].mean_quality == pytest.approx(0.3)
    store.mark_deleted(["a-1"])
    assert [d.day for d in store.daily_quality()] == ["2024-06-04"]


def test_live_blocks_are_every_note_s_even_a_forgotten_one(store: GraphStore) -> None:
    store.sync_files([note("b.md", "beta.", "gamma."), note("a.md", "alpha.")])
    store.mark_deleted(["b-0"])
    store.forget_files(["a.md"])
    assert [(b.id, b.file, b.text) for b in store.live_blocks()] == [
        ("a-0", "a.md", "alpha."),
        ("b-1", "b.md", "gamma."),
    ]
