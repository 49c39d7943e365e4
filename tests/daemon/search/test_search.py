"""Search over a graded vault, in process: the real store, FTS5 and WordLlama's vectors."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from aclarai.daemon.config import load_config
from aclarai.daemon.search import SearchFilter
from aclarai.daemon.search.session import VaultSearch
from aclarai.graph import ScoreRecord, block_key
from aclarai.parsers import SCORE_NAMES, AclaraiError
from tests.helpers.cli import cli, run_cli
from tests.helpers.search_vault import write_vault


@pytest.fixture
def search(graded_vault: Path) -> Iterator[VaultSearch]:
    with VaultSearch(load_config(None), graded_vault) as vault:
        yield vault


def files(result: object) -> list[str]:
    return [hit.file for hit in result.hits]  # type: ignore[attr-defined]


def test_a_question_in_the_notes_words_finds_its_block_with_claim_scores_and_link(
    search: VaultSearch,
) -> None:
    result = search.search("Who serviced the boiler?", limit=3)

    hit = result.hits[0]
    assert hit.file == "journal/2024-05-02.md"
    assert hit.link == f"[[journal/2024-05-02#^{hit.block_id}]]"
    assert hit.text == "The boiler was serviced by Marta on Thursday morning."
    assert hit.claim is not None and "boiler" in hit.claim.claim
    assert set(hit.claim.scores) == set(SCORE_NAMES)
    assert hit.quality is not None and 0 <= hit.quality <= 1
    assert result.unembedded == 0, "resync embedded every block"


def test_a_question_in_other_words_is_found_by_meaning(graded_vault: Path) -> None:
    question = "cheaper price for schools and charities"
    with VaultSearch(load_config(None), graded_vault) as vault:
        hits = vault.search(question, limit=2).hits
        assert [h.file for h in hits] == ["help/Pricing.md"] * 2
        assert any("40% off" in hit.text for hit in hits)
    words_only = load_config(None, overrides={"search.vectors": False})
    with VaultSearch(words_only, graded_vault) as vault:
        hits = vault.search(question, limit=3).hits
        assert all("40% off" not in hit.text for hit in hits), "words alone miss the paraphrase"


def test_title_aliases_headings_and_callouts_are_part_of_what_a_block_is_about(
    search: VaultSearch,
) -> None:
    # "Education discount" is a heading; "plans" an alias; the callout holds "100 GB".
    discount = search.search("education discount", limit=1).hits[0]
    assert discount.text.startswith("Students and nonprofits")
    assert discount.about == "Pricing · Plans · Education discount"
    assert "storage limit" in search.search("100 GB", limit=1).hits[0].text


def test_chinese_is_found_by_its_characters(search: VaultSearch) -> None:
    assert files(search.search("观测站记录", limit=1)) == ["zh/潮汐.md"]


def test_scope_keeps_a_folder_or_a_note(search: VaultSearch) -> None:
    everywhere = search.search("prune fruit tree", limit=10)
    assert {"garden/Roses.md", "garden/deep/Figs.md"} <= set(files(everywhere))
    assert set(
        files(search.search("prune fruit tree", where=SearchFilter(scope="garden/deep")))
    ) == {"garden/deep/Figs.md"}
    one = search.search("prune", where=SearchFilter(scope="garden/Roses.md"))
    assert set(files(one)) == {"garden/Roses.md"}


def _grade(search: VaultSearch, rel: str, *values: float | None) -> None:
    """Overwrite the scores of every claim of ``rel``'s blocks (the store's own write)."""
    store = search.store
    blocks = store.blocks_of_file(rel)
    claims = store.claims_of_blocks(b.id for b in blocks)
    scores = [
        ScoreRecord(
            c.id,
            b.id,
            b.hash,
            *values,
            status="ok" if None not in values else "failed",
            model="test",
        )
        for b in blocks
        for c in claims[b.id]
    ]
    assert store.write_scores(scores) == len(scores) > 0


def test_a_scope_is_read_as_the_user_writes_it(search: VaultSearch, graded_vault: Path) -> None:
    deep = {"garden/deep/Figs.md"}
    for given in ("./garden/deep/", str(graded_vault / "garden" / "deep"), "garden/deep/Figs"):
        assert set(files(search.search("fig tree", where=SearchFilter(scope=given)))) == deep
    assert search.scope(".") == ""
    with pytest.raises(AclaraiError, match="not inside the vault"):
        search.search("fig", where=SearchFilter(scope="../elsewhere"))


def test_min_quality_drops_weak_claims_and_failed_ones_unless_asked(search: VaultSearch) -> None:
    _grade(search, "garden/Roses.md", 0.2, 0.2, 0.2)
    _grade(search, "garden/deep/Figs.md", None, 0.9, 0.9)
    query = "roses figs prune fruit aphids"
    assert {"garden/Roses.md", "garden/deep/Figs.md"} <= set(files(search.search(query)))

    filtered = search.search(query, where=SearchFilter(min_quality=0.5))
    assert not {"garden/Roses.md", "garden/deep/Figs.md"} & set(files(filtered))
    with_null = search.search(query, where=SearchFilter(min_quality=0.5, include_null=True))
    assert "garden/deep/Figs.md" in files(with_null)
    assert "garden/Roses.md" not in files(with_null)
    assert all(h.quality is None or h.quality >= 0.5 for h in filtered.hits)


def test_quality_lifts_the_better_claim_between_two_equal_blocks(tmp_path: Path) -> None:
    same = "The ferry to the island leaves at nine every morning.\n"
    vault = write_vault(tmp_path / "v", {"a/Ferry.md": same, "b/Ferry.md": same})
    cli("adopt", str(vault))
    cli("resync", str(vault))
    with VaultSearch(load_config(None), vault) as search:
        _grade(search, "a/Ferry.md", 0.3, 0.3, 0.3)
        _grade(search, "b/Ferry.md", 0.95, 0.95, 0.95)
        assert files(search.search("ferry island morning", limit=2)) == ["b/Ferry.md", "a/Ferry.md"]
        _grade(search, "a/Ferry.md", 0.95, 0.95, 0.95)
        _grade(search, "b/Ferry.md", 0.3, 0.3, 0.3)
        assert files(search.search("ferry island morning", limit=2)) == ["a/Ferry.md", "b/Ferry.md"]


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced',
        "NEAR(boiler marta)",
        "boiler AND OR NOT",
        "* ^ : ( ) { } - +",
        "col:boiler",
        "\x00\ufffd\U0001f600",
        "a" * 100_000,
        "boiler " * 20_000,
        "budget \udcff",
    ],
)
def test_any_query_gives_a_result_never_an_index_error(search: VaultSearch, query: str) -> None:
    result = search.search(query)
    assert isinstance(result.hits, list)


def test_a_limit_out_of_range_is_refused(search: VaultSearch) -> None:
    with pytest.raises(AclaraiError, match="limit"):
        search.search("boiler", limit=0)


def test_a_vault_never_synced_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AclaraiError, match="resync"):
        VaultSearch(load_config(None), tmp_path)


def test_unembedded_blocks_are_counted_and_found_by_their_words(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v")
    cli("adopt", str(vault))
    env_off = {"ACLARAI_SEARCH__VECTORS": "false"}
    done = run_cli("resync", str(vault), env={**os.environ, **env_off})
    assert done.returncode == 0, done.stderr
    with VaultSearch(load_config(None), vault) as search:
        result = search.search("Who serviced the boiler?")
        assert result.unembedded == result.blocks > 0
        assert result.hits[0].file == "journal/2024-05-02.md"
    out = run_cli("search", str(vault), "boiler")
    assert "have no vector yet" in out.stdout
    cli("resync", str(vault))
    assert "have no vector yet" not in run_cli("search", str(vault), "boiler").stdout


def test_search_json_prints_one_hit_a_line(graded_vault: Path) -> None:
    out = cli("search", str(graded_vault), "boiler serviced", "--json", "--limit", "2")
    lines = [json.loads(line) for line in out.splitlines()]
    assert 1 <= len(lines) <= 2
    first = lines[0]
    assert {"file", "block_id", "link", "claim", "quality", "score"} <= set(first)
    assert first["file"] == "journal/2024-05-02.md"
    key = block_key(first["file"], first["block_id"])
    assert key.startswith(first["block_id"] + "@")
    claims = [
        json.loads(line)
        for line in cli("claims", str(graded_vault), "--below", "1.01", "--json").splitlines()
    ]
    same = [
        c for c in claims if c["block_id"] == first["block_id"] and c["claim"] == first["claim"]
    ]
    assert same and same[0]["quality"] == pytest.approx(first["quality"])


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_query_is_one_line_and_a_non_zero_exit(graded_vault: Path, query: str) -> None:
    done = run_cli("search", str(graded_vault), query)
    assert done.returncode != 0
    assert done.stderr.strip() == "aclarai: the query is empty"


def test_a_100_kb_query_of_syntax_is_an_ordinary_search(graded_vault: Path) -> None:
    done = run_cli("search", str(graded_vault), ('"NEAR(* ' * 12_500)[:100_000], "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
