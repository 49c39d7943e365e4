"""``aclarai status --verify``: the graph against a fresh parse of the vault.

Every note is read and parsed again, whatever the store's file states say, and every difference
between what the vault says and what the graph holds is named, block by block:

- a block of the vault that the graph does not hold live, or holds with other text;
- a live block of the graph that no note holds (its paragraph or its note was deleted);
- a claim of a block that was not graded against the block's current text (or a block still
  waiting in the queue to be graded);
- a block whose score comments in the note say other values than its claims in the graph;
- a note that cannot be read, whose blocks the graph keeps as last synced;
- a search index that does not hold every live block with its text, claims, title, headings and
  nearby text, or holds more (named as the note ``(search index)``: ``resync`` mends it).

The claims of a deleted block are counted and listed nowhere, so a block the graph holds live is
all it takes for its claims to be named.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from aclarai.daemon.vault.notes import Vault
from aclarai.graph import (
    GraphStore,
    SearchDoc,
    StoredBlock,
    begin_write,
    block_key,
    block_scores,
    key_block_id,
)
from aclarai.parsers import Block, BlockContext, ParseError, block_about, scan_note

SEARCH_INDEX = "(search index)"
CLAIMS_PER_CALL = 1000
"""Blocks whose claims are read in one store call."""


@dataclass(frozen=True, slots=True)
class Difference:
    """One way the graph does not say what the vault says."""

    file: str
    block_id: str
    """The block's id in its note (empty for a note as a whole)."""
    what: str

    def __str__(self) -> str:
        where = f"{self.file}#^{self.block_id}" if self.block_id else self.file
        return f"{where}: {self.what}"


def differences(vault: Vault, store: GraphStore, queued: Collection[str] = ()) -> list[Difference]:
    """Every difference between ``store`` and a fresh parse of ``vault``, in note order;
    ``queued``: the keys of the blocks waiting in the queue."""
    found: dict[str, tuple[str, Block]] = {}
    contexts: dict[str, BlockContext] = {}
    found_notes: list[Difference] = []
    unreadable: set[str] = set()
    for note in vault.iter_notes():
        try:
            content = vault.read(note)
        except FileNotFoundError:
            continue
        except ParseError as exc:
            unreadable.add(note.rel)
            found_notes.append(Difference(note.rel, "", f"cannot be read ({exc})"))
            continue
        layout = scan_note(content.text)
        about = block_about(note.rel, layout)
        for block in layout.note.blocks:
            found[block_key(note.rel, block.id)] = (note.rel, block)
            contexts[block_key(note.rel, block.id)] = about[block.id]
    live = {b.id: b for b in store.live_blocks()}
    result = list(found_notes)
    in_step: list[str] = []
    for key, (rel, block) in found.items():
        stored = live.get(key)
        if stored is None:
            result.append(Difference(rel, block.id, "in the vault, not in the graph"))
        elif stored.hash != block.hash:
            result.append(Difference(rel, block.id, "its text differs from the graph's"))
        else:
            in_step.append(key)
    for key, stored in live.items():
        if key not in found and stored.file not in unreadable:
            result.append(
                Difference(stored.file, key_block_id(key), "in the graph, not in the vault")
            )
    for start in range(0, len(in_step), CLAIMS_PER_CALL):
        keys = in_step[start : start + CLAIMS_PER_CALL]
        claims = store.claims_of_blocks(keys)
        for key in keys:
            rel, block = found[key]
            if key in queued:
                result.append(Difference(rel, block.id, "waits in the queue to be graded"))
                continue
            stale = [
                c for c in claims[key] if c.score is None or c.score.evaluated_hash != block.hash
            ]
            if stale:
                result.append(
                    Difference(rel, block.id, f"{len(stale)} claim(s) not graded for its text")
                )
                continue
            graph = _shown(block_scores(claims[key]))
            note = _shown(dict(block.scores))
            if graph != note:
                result.append(
                    Difference(rel, block.id, f"the note says {note}, the graph says {graph}")
                )
    result += _search_drift(store, live, found, contexts)
    return sorted(result, key=lambda d: (d.file, d.block_id, d.what))


def _search_drift(
    store: GraphStore,
    live: dict[str, StoredBlock],
    found: dict[str, tuple[str, Block]],
    contexts: dict[str, BlockContext],
) -> list[Difference]:
    """The search index against the live blocks."""
    hashes = {key: block.hash for key, (_, block) in found.items()}
    drift = store.search_drift(search_docs(live.values(), hashes, contexts))
    if not drift.total:
        return []
    # The sign the next resync reconciles on: a drift no count shows (a stale claim text) is
    # mended by the resync this line tells the user to run.
    store.search.write(begin_write)
    what = (
        f"{drift.missing} block(s) missing, {drift.extra} extra, {drift.stale} out of date: "
        "`aclarai resync` rebuilds it"
    )
    return [Difference(SEARCH_INDEX, "", what)]


def search_docs(
    live: Iterable[StoredBlock], hashes: Mapping[str, str], contexts: Mapping[str, BlockContext]
) -> list[SearchDoc]:
    """The live blocks as the search index should hold them: those a parse of the vault found
    with the same text (``hashes``) with their title, headings and nearby text, the others as
    the graph holds them (the index keeps their context)."""
    docs = []
    for stored in live:
        context = contexts.get(stored.id)
        if context is not None and hashes.get(stored.id) == stored.hash:
            docs.append(
                SearchDoc(
                    stored.id, stored.file, stored.hash, context.about, stored.text, context.nearby
                )
            )
        else:
            docs.append(SearchDoc(stored.id, stored.file, stored.hash, None, stored.text))
    return docs


def parsed_search_docs(vault: Vault, store: GraphStore) -> list[SearchDoc]:
    """:func:`search_docs` from a fresh parse of every note of ``vault``."""
    hashes: dict[str, str] = {}
    contexts: dict[str, BlockContext] = {}
    for note in vault.iter_notes():
        try:
            content = vault.read(note)
        except (FileNotFoundError, ParseError):
            continue
        layout = scan_note(content.text)
        about = block_about(note.rel, layout)
        for block in layout.note.blocks:
            key = block_key(note.rel, block.id)
            hashes[key] = block.hash
            contexts[key] = about[block.id]
    return search_docs(store.live_blocks(), hashes, contexts)


def _shown(scores: dict[str, float | None]) -> dict[str, str]:
    """Score values as a note shows them: two decimals, a missing one left out."""
    return {name: f"{value:.2f}" for name, value in scores.items() if value is not None}
