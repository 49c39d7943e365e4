"""Issue 21, item 3: block ids are note-scoped, as in Obsidian. A block is its note plus its id:
the same ``^summary`` in two notes made from one template is two blocks, both graded; a note
renamed or moved keeps its blocks; two equal ids inside one note are resolved as before.

Real files, the real ``resync`` (offline agents), the embedded store and a real Bolt server.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from aclarai.daemon.config import Config, load_config
from aclarai.daemon.factory import build_agents, build_queue, build_store, build_vault
from aclarai.daemon.loop.consumer import DirtyBlockConsumer
from aclarai.daemon.loop.resync import format_summary, resync
from aclarai.daemon.reports.claims import list_claims
from aclarai.daemon.vault.notesync import NoteSync
from aclarai.graph import StoredClaim, block_key
from aclarai.parsers import parse_note
from tests.fixtures.bolt_server import BoltServer
from tests.helpers.vault import KEPANO

ROOT = Path(__file__).resolve().parents[3]

TEMPLATE = (
    "# {title}\n"
    "\n"
    "{summary}\n"
    "<!-- aclarai:id=summary ver=1 -->\n"
    "^summary\n"
    "\n"
    "{detail}\n"
    "<!-- aclarai:id=blk-7f3a9c ver=1 -->\n"
    "^blk-7f3a9c\n"
)
"""A note template carrying its ids: every note made from it holds ``summary`` and
``blk-7f3a9c``, the one written by hand, the other as ``aclarai adopt`` writes them."""

MONDAY = TEMPLATE.format(
    title="Monday",
    summary="The Berlin office opened in March 2021 with 12 engineers.",
    detail="Anna Schmidt leads the payments team of 8 people in Munich.",
)
TUESDAY = TEMPLATE.format(
    title="Tuesday",
    summary="The Lisbon warehouse shipped 4,500 orders on 3 June 2024.",
    detail="Carlos Mendes signed the lease for 10 years at 30,000 euros a month.",
)
IDS = ("summary", "blk-7f3a9c")
SCORE = "<!-- aclarai:entailed_score="


# Two daily notes made from one template, beside a copy of a real Obsidian vault.
pytestmark = pytest.mark.vault(
    base=KEPANO, files={"Daily/2024-06-03.md": MONDAY, "Daily/2024-06-04.md": TUESDAY}
)


@pytest.fixture
def fresh_database(bolt_server: BoltServer) -> Iterator[str]:
    name = bolt_server.create_database(f"t{uuid.uuid4().hex[:16]}")
    yield name
    bolt_server.drop_database(name)


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.slow)])
def config(request: pytest.FixtureRequest, tmp_path: Path) -> Config:
    """The embedded store, or a fresh database on the session's Bolt server."""
    env = {"ACLARAI_STATE_DIR": str(tmp_path / "state")}
    if request.param == "neo4j":
        server: BoltServer = request.getfixturevalue("bolt_server")
        database: str = request.getfixturevalue("fresh_database")
        env |= {
            "ACLARAI_GRAPH__BACKEND": "neo4j",
            "ACLARAI_GRAPH__NEO4J__URI": f"bolt://127.0.0.1:{server.bolt_port}",
            "ACLARAI_GRAPH__NEO4J__USER": server.user,
            "ACLARAI_GRAPH__NEO4J__DATABASE": database,
            "NEO4J_PASSWORD": server.password,
        }
    return load_config(env=env)


@pytest.fixture
def embedded(tmp_path: Path) -> Config:
    return load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state")})


def claims_of(config: Config, vault: Path, rel: str) -> dict[str, list[StoredClaim]]:
    """The claims of the note's template blocks as the store holds them, by block id."""
    store = build_store(config, config.state_dir_for(vault))
    try:
        found = store.claims_of_blocks(block_key(rel, i) for i in IDS)
    finally:
        store.close()
    return {i: found[block_key(rel, i)] for i in IDS}


def duplicates_skipped(summary_text: str) -> int:
    match = re.search(r"^duplicate ids skipped +(\d+)$", summary_text, re.M)
    assert match is not None, summary_text
    return int(match.group(1))


def test_two_notes_made_from_one_template_both_get_claims_evaluated(
    vault: Path, config: Config
) -> None:
    summary = resync(config, vault)

    assert summary.ok
    assert duplicates_skipped(format_summary(summary)) == 0
    for rel, city in (("Daily/2024-06-03.md", "Berlin"), ("Daily/2024-06-04.md", "Lisbon")):
        note = parse_note((vault / rel).read_text(encoding="utf-8"))
        assert [b.id for b in note.blocks] == list(IDS)
        assert all(set(b.scores) >= {"entailed_score", "coverage_score"} for b in note.blocks)
        claims = claims_of(config, vault, rel)
        for block in note.blocks:
            assert claims[block.id], f"{rel}#^{block.id} has no claims"
            assert all(c.score is not None for c in claims[block.id])
        assert any(city in c.text for c in claims["summary"]), "each note's own summary"
        assert (vault / rel).read_text(encoding="utf-8").count(SCORE) == 2


def test_two_notes_made_from_one_template_with_the_same_text_are_two_blocks(
    vault: Path, embedded: Config
) -> None:
    (vault / "Daily" / "2024-06-04.md").write_text(MONDAY, encoding="utf-8")

    summary = resync(embedded, vault)

    assert duplicates_skipped(format_summary(summary)) == 0
    monday = claims_of(embedded, vault, "Daily/2024-06-03.md")
    copy = claims_of(embedded, vault, "Daily/2024-06-04.md")
    for block_id in IDS:
        assert [c.text for c in monday[block_id]] == [c.text for c in copy[block_id]] != []
        assert all(c.score is not None for c in (*monday[block_id], *copy[block_id]))
    first = (vault / "Daily" / "2024-06-03.md").read_text(encoding="utf-8")
    assert (vault / "Daily" / "2024-06-04.md").read_text(encoding="utf-8") == first
    assert first.count(SCORE) == 2


def test_renaming_a_note_made_from_a_template_keeps_its_blocks(vault: Path, config: Config) -> None:
    resync(config, vault)
    before = claims_of(config, vault, "Daily/2024-06-04.md")
    scored = (vault / "Daily" / "2024-06-04.md").read_bytes()
    (vault / "Archive").mkdir()
    (vault / "Daily" / "2024-06-04.md").rename(vault / "Archive" / "Tuesday.md")

    summary = resync(config, vault)

    assert summary.ok
    assert summary.drain.claims_evaluated == 0, "no claim evaluated again"
    assert summary.drain.files_written == 0
    assert summary.synced.deleted_blocks == 0
    assert (vault / "Archive" / "Tuesday.md").read_bytes() == scored
    after = claims_of(config, vault, "Archive/Tuesday.md")
    for block_id in IDS:
        assert _kept(after[block_id]) == _kept(before[block_id]) != []
    assert claims_of(config, vault, "Daily/2024-06-04.md") == {i: [] for i in IDS}
    monday = claims_of(config, vault, "Daily/2024-06-03.md")
    assert all(monday[i] for i in IDS), "the other note's blocks of the same ids are untouched"
    again = resync(config, vault)
    assert (again.synced.dirty_blocks, again.drain.claims_evaluated) == (0, 0)


def _kept(claims: list[StoredClaim]) -> list[tuple[object, ...]]:
    """What a move must keep of a block's claims: ids, texts, scores and when they were made."""
    return [
        (c.id, c.text)
        + (
            ()
            if c.score is None
            else (
                c.score.evaluated_hash,
                c.score.entailed_score,
                c.score.coverage_score,
                c.score.decontextualization_score,
                c.score.evaluated_at,
            )
        )
        for c in claims
    ]


def test_a_paragraph_cut_from_one_note_and_pasted_into_another_keeps_its_claims(
    vault: Path, embedded: Config
) -> None:
    resync(embedded, vault)
    source, target = vault / "Daily" / "2024-06-03.md", vault / "Notes.md"
    text = source.read_text(encoding="utf-8")
    start = text.index("Anna Schmidt")
    paragraph = text[start:]
    before = claims_of(embedded, vault, "Daily/2024-06-03.md")["blk-7f3a9c"]
    source.write_text(text[:start], encoding="utf-8")
    target.write_text("# Notes\n\n" + paragraph, encoding="utf-8")

    summary = resync(embedded, vault)

    assert summary.drain.claims_evaluated == 0
    assert summary.synced.deleted_blocks == 0
    moved = claims_of(embedded, vault, "Notes.md")["blk-7f3a9c"]
    assert _kept(moved) == _kept(before) != []
    assert all(c.score is not None for c in moved)


def test_a_paragraph_copied_into_a_second_note_is_a_second_block(
    vault: Path, embedded: Config
) -> None:
    resync(embedded, vault)
    source = vault / "Daily" / "2024-06-03.md"
    text = source.read_text(encoding="utf-8")
    (vault / "Notes.md").write_text("# Notes\n\n" + text[text.index("Anna Schmidt") :])

    summary = resync(embedded, vault)

    assert duplicates_skipped(format_summary(summary)) == 0
    assert summary.synced.deleted_blocks == 0
    original = claims_of(embedded, vault, "Daily/2024-06-03.md")["blk-7f3a9c"]
    copy = claims_of(embedded, vault, "Notes.md")["blk-7f3a9c"]
    assert original and [c.text for c in copy] == [c.text for c in original]
    assert all(c.score is not None for c in (*original, *copy))
    assert source.read_text(encoding="utf-8") == text


def test_two_equal_ids_inside_one_note_are_resolved_as_today(vault: Path, embedded: Config) -> None:
    twice = MONDAY + "\nThe Paris team moved to a new floor in 2023.\n<!-- aclarai:id=summary -->\n"
    (vault / "Daily" / "2024-06-03.md").write_text(twice, encoding="utf-8")

    summary = resync(embedded, vault)

    assert duplicates_skipped(format_summary(summary)) == 1
    assert any("already used earlier in this note" in e for e in summary.synced.errors)
    text = (vault / "Daily" / "2024-06-03.md").read_text(encoding="utf-8")
    assert text.endswith(
        "The Paris team moved to a new floor in 2023.\n<!-- aclarai:id=summary -->\n"
    )
    [first] = claims_of(embedded, vault, "Daily/2024-06-03.md")["summary"][:1]
    assert "Berlin" in first.text
    tuesday = claims_of(embedded, vault, "Daily/2024-06-04.md")
    assert all(tuesday[i] for i in IDS), "the other note's summary is graded"


def test_claims_and_dashboard_link_each_block_in_its_own_note(
    vault: Path, embedded: Config
) -> None:
    resync(embedded, vault)

    refs = list_claims(embedded, vault, below=1.01)
    places = {(r.file, r.block_id) for r in refs}
    assert {(rel, "summary") for rel in ("Daily/2024-06-03.md", "Daily/2024-06-04.md")} <= places
    for ref in refs:
        assert f"^{ref.block_id}" in (vault / ref.file).read_text(encoding="utf-8")
        words = ref.text.rstrip(".").split()
        note_text = (vault / ref.file).read_text(encoding="utf-8")
        assert any(w in note_text for w in words), "the claim is of the note it links to"
    dashboard = (vault / "aclarai" / "Dashboard.md").read_text(encoding="utf-8")
    links = re.findall(r"\[\[([^\]|#]+)#\^([A-Za-z0-9_-]+)", dashboard)
    assert links
    for target, block_id in links:
        assert f"^{block_id}" in (vault / f"{target}.md").read_text(encoding="utf-8")


@pytest.fixture
def watch_path(vault: Path, embedded: Config) -> Iterator[tuple[NoteSync, DirtyBlockConsumer]]:
    """The daemon's parts, driven by hand: the note sync the watcher calls and the consumer,
    on a vault where only Monday's note exists yet, synced and graded."""
    (vault / "Daily" / "2024-06-04.md").unlink()
    state = embedded.state_dir_for(vault)
    store, queue = build_store(embedded, state), build_queue(embedded, state)
    agents = build_agents(embedded, state)
    notes = NoteSync(build_vault(embedded, vault), store, queue)
    consumer = DirtyBlockConsumer(notes, queue, agents.extractor, agents.evaluator)
    notes.sync_vault()
    consumer.drain()
    try:
        yield notes, consumer
    finally:
        agents.close()
        store.close()
        queue.close()


def settle(notes: NoteSync, *rels: str, grace_s: float = 0.0) -> dict[str, str]:
    """What the daemon does once notes are quiet: sync those there, forget those gone, then
    mark deleted what left its note ``grace_s`` ago and turned up nowhere (key -> note)."""
    there = [n for rel in rels if (n := notes.vault.note(rel)) is not None]
    notes.sync_notes(there)
    notes.forget([rel for rel in rels if notes.vault.note(rel) is None])
    return notes.settle(grace_s=grace_s)


def test_the_daemon_grades_a_note_made_from_the_template_while_another_holds_its_ids(
    vault: Path, watch_path: tuple[NoteSync, DirtyBlockConsumer]
) -> None:
    notes, consumer = watch_path
    monday = (vault / "Daily" / "2024-06-03.md").read_bytes()
    assert monday.count(SCORE.encode()) == 2
    (vault / "Daily" / "2024-06-04.md").write_text(TUESDAY, encoding="utf-8")

    assert settle(notes, "Daily/2024-06-04.md") == {}
    stats = consumer.drain()

    assert stats.claims_evaluated > 0 and stats.files_written == 1
    assert (vault / "Daily" / "2024-06-04.md").read_text(encoding="utf-8").count(SCORE) == 2
    assert (vault / "Daily" / "2024-06-03.md").read_bytes() == monday


def test_the_daemon_keeps_the_blocks_of_a_note_moved_as_delete_then_create(
    vault: Path, watch_path: tuple[NoteSync, DirtyBlockConsumer]
) -> None:
    notes, consumer = watch_path
    before = {i: _kept(c) for i, c in claims_of_store(notes, "Daily/2024-06-03.md").items()}
    scored = (vault / "Daily" / "2024-06-03.md").read_bytes()
    (vault / "Daily" / "2024-06-03.md").unlink()
    assert settle(notes, "Daily/2024-06-03.md", grace_s=60.0) == {}
    (vault / "Monday.md").write_bytes(scored)
    assert settle(notes, "Monday.md", grace_s=60.0) == {}

    assert notes.settle() == {}, "moved within the grace: nothing deleted"
    assert consumer.drain().claims_evaluated == 0
    after = {i: _kept(c) for i, c in claims_of_store(notes, "Monday.md").items()}
    assert after == before and all(after.values())
    assert (vault / "Monday.md").read_bytes() == scored


def claims_of_store(notes: NoteSync, rel: str) -> dict[str, list[StoredClaim]]:
    found = notes.store.claims_of_blocks(block_key(rel, i) for i in IDS)
    return {i: found[block_key(rel, i)] for i in IDS}
