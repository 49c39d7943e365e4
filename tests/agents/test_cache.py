"""The SQLite result cache: a real file under tmp_path."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from aclarai.agents.cache import ResultCache, cache_key


def test_values_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "state" / "llm-cache.sqlite"
    with ResultCache(path) as cache:
        cache.put("k1", {"entailed_score": 0.5, "omitted": ["1998"]})

    with ResultCache(path) as reopened:
        assert reopened.get("k1") == {"entailed_score": 0.5, "omitted": ["1998"]}
        assert reopened.get("missing") is None
        assert len(reopened) == 1


def test_bypass_ignores_stored_values_but_records_new_ones(
    make_cache: Callable[..., ResultCache],
) -> None:
    normal = make_cache("c.sqlite")
    normal.put("old", [1, 2])
    bypassing = make_cache("c.sqlite", bypass=True)

    assert bypassing.get("old") is None
    bypassing.put("new", [3])
    assert normal.get("new") == [3]


def test_put_replaces(make_cache: Callable[..., ResultCache]) -> None:
    cache = make_cache()
    cache.put("k", 1)
    cache.put("k", 2)

    assert cache.get("k") == 2
    assert len(cache) == 1


def test_corrupt_entry_reads_as_missing(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    ResultCache(path).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO results VALUES ('bad', '{not json', 0)")
    db.close()

    with ResultCache(path) as cache:
        assert cache.get("bad") is None


def test_key_depends_on_every_part_and_their_order() -> None:
    base = cache_key("llm", "model-a", "combined@1", "claim", "source")

    assert base == cache_key("llm", "model-a", "combined@1", "claim", "source")
    assert base != cache_key("llm", "model-b", "combined@1", "claim", "source")
    assert base != cache_key("llm", "model-a", "combined@2", "claim", "source")
    assert base != cache_key("llm", "model-a", "combined@1", "claim!", "source")
    assert base != cache_key("llm", "model-a", "combined@1", "source", "claim")


def test_threads_share_one_cache(make_cache: Callable[..., ResultCache]) -> None:
    cache = make_cache()

    def write(start: int) -> None:
        for i in range(start, start + 50):
            cache.put(f"k{i}", i)

    threads = [threading.Thread(target=write, args=(n * 50,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    assert len(cache) == 200
    assert cache.get("k123") == 123
