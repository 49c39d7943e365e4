"""End-to-end ``resync`` with ``model.backend: llm`` against a scripted OpenAI-compatible server.

Real HTTP through the real client stack: the responder below plays the one extraction call per
block and the one grading call per source block, reading the delimited texts of each prompt the
way a model would.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from aclarai.daemon.config import Config, load_config
from aclarai.daemon.factory import build_store
from aclarai.daemon.loop.resync import ResyncSummary, format_summary, resync
from aclarai.graph import StoredClaim
from aclarai.parsers import SCORE_NAMES
from aclarai.parsers.grammar import format_score_value
from tests.helpers.scripted_llm import (
    Recorded,
    Reply,
    ScriptedLLMServer,
    claim_ids,
    grades_responder,
    json_reply,
    scripted_llm_server,
    status,
    text,
)
from tests.helpers.scripted_vault import (
    CLAIMS,
    NOTES,
    STAGES,
    delimited,
    graded,
    llm_env,
    note_scores,
    responder,
    stage,
)
from tests.helpers.vault import note_text

N_CLAIMS = sum(len(c) for c in CLAIMS.values())
SCORED_BLOCKS = sum(1 for c in CLAIMS.values() if c)
EXTRACTION_CALLS = len(CLAIMS)
"""One call per block, whatever it holds."""


def failing_forever() -> Callable[[Recorded], Reply]:
    """500, then 429 with Retry-After, and so on: a down or overloaded endpoint."""
    replies = itertools.cycle([status(500), status(429, {"Retry-After": "0"})])
    return lambda _request: next(replies)


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with scripted_llm_server() as server:
        yield server


@pytest.fixture
def setup(
    tmp_path: Path,
    llm_server: ScriptedLLMServer,
    make_vault: Callable[[Mapping[str, str]], Path],
) -> tuple[Config, Path]:
    return load_config(env=llm_env(tmp_path, llm_server)), make_vault(NOTES)


def calls_by_stage(requests: list[Recorded]) -> dict[str, int]:
    counts = dict.fromkeys(STAGES.values(), 0)
    for request in requests:
        counts[stage(request)] += 1
    return counts


def stored_claims(config: Config, vault: Path) -> dict[str, list[StoredClaim]]:
    store = build_store(config, config.state_dir_for(vault))
    try:
        blocks = store.live_blocks_with_ids(CLAIMS)
        claims = store.claims_of_blocks(b.id for b in blocks)
        return {b.block_id: claims[b.id] for b in blocks}
    finally:
        store.close()


def weakest(scores: list[tuple[float, float, float]]) -> dict[str, float]:
    """What a block's score comment shows: each score's lowest over its claims, as written."""
    return {
        name: float(format_score_value(min(s[i] for s in scores)))
        for i, name in enumerate(SCORE_NAMES)
    }


def scores_of(claim: StoredClaim) -> tuple[float | None, ...]:
    assert claim.score is not None, f"claim {claim.id} was never evaluated"
    return tuple(getattr(claim.score, name) for name in SCORE_NAMES)


def new_requests(server: ScriptedLLMServer, since: int) -> list[Recorded]:
    return server.chat_requests[since:]


def run(config: Config, vault: Path, **options: bool) -> ResyncSummary:
    summary = resync(config, vault, **options)
    assert summary.store_error is None
    return summary


def test_llm_scores_reach_edges_and_notes_and_cost_nothing_when_unchanged(
    setup: tuple[Config, Path], llm_server: ScriptedLLMServer
) -> None:
    config, vault = setup
    llm_server.responder = responder()

    first = run(config, vault)

    requests = llm_server.chat_requests
    by_stage = calls_by_stage(requests)
    assert by_stage["extraction"] == EXTRACTION_CALLS
    scoring = [r for r in requests if stage(r) == "scoring"]
    assert len(scoring) == SCORED_BLOCKS <= N_CLAIMS
    assert sum(len(claim_ids(r)) for r in scoring) == N_CLAIMS, "each claim scored in one call"
    claims = stored_claims(config, vault)
    assert {bid: [c.text for c in found] for bid, found in claims.items()} == CLAIMS
    for block_id, found in claims.items():
        for claim in found:
            assert scores_of(claim) == graded(block_id, claim.text, 5)
            assert claim.score is not None and claim.score.status == "ok"
            assert claim.score.verdict == "supported"
            assert scores_of(claim)[2] == 1.0, "every claim stands alone: 'It' was resolved"
    assert note_scores(vault) == {
        block_id: weakest([graded(block_id, c, 5) for c in texts]) if texts else {}
        for block_id, texts in CLAIMS.items()
    }
    assert note_scores(vault)["blk-a1"]["coverage_score"] < 1.0, "1998 is left out of a claim"
    assert first.usage["calls"] == len(requests)
    assert first.usage["prompt_tokens"] > 0 and first.usage["completion_tokens"] > 0
    assert (first.usage["cache_hits"], first.usage["failures"]) == (0, 0)
    text = format_summary(first)
    for row in ("llm calls", "llm prompt_tokens", "llm cache_hits", "llm failures"):
        assert row in text

    seen = len(llm_server.chat_requests)
    second = run(config, vault)

    assert new_requests(llm_server, seen) == []
    assert second.usage["calls"] == 0
    assert (second.synced.dirty_blocks, second.drain.claims_evaluated) == (0, 0)


def test_reevaluate_rescores_every_claim_without_extracting_again(
    setup: tuple[Config, Path], llm_server: ScriptedLLMServer
) -> None:
    config, vault = setup
    llm_server.responder = responder()
    run(config, vault)
    seen = len(llm_server.chat_requests)
    llm_server.responder = responder(grades_responder(3))

    again = run(config, vault, reevaluate=True)

    by_stage = calls_by_stage(new_requests(llm_server, seen))
    assert by_stage == {"extraction": 0, "scoring": SCORED_BLOCKS}
    assert again.drain.claims_evaluated == N_CLAIMS
    assert again.usage["calls"] == SCORED_BLOCKS
    assert all(
        scores_of(c) == graded(block_id, c.text, 3)
        for block_id, found in stored_claims(config, vault).items()
        for c in found
    )
    assert note_scores(vault)["blk-b1"] == weakest(
        [graded("blk-b1", c, 3) for c in CLAIMS["blk-b1"]]
    )
    assert again.drain.files_written == 2


def test_failing_endpoint_gives_null_scores_that_the_next_resync_fills(
    setup: tuple[Config, Path], llm_server: ScriptedLLMServer
) -> None:
    config, vault = setup
    original = {rel: (vault / rel).read_bytes() for rel in NOTES}

    # Down for everything: nothing is extracted, the blocks stay queued, nothing crashes.
    llm_server.responder = failing_forever()
    down = run(config, vault)

    assert down.usage["failures"] > 0 and down.usage["retries"] > 0
    assert down.queued == len(CLAIMS)
    assert down.drain.claims_extracted == 0
    assert {rel: (vault / rel).read_bytes() for rel in NOTES} == original
    assert down.model_error is not None and "could not be reached" in down.model_error
    assert "model unavailable" in format_summary(down)

    # Extraction works again, scoring is still down: no null scores written, the work waits.
    llm_server.responder = responder(scoring=failing_forever())
    waiting = run(config, vault)

    assert waiting.drain.claims_extracted == N_CLAIMS
    assert (waiting.drain.scores_written, waiting.drain.null_scores) == (0, 0)
    assert waiting.queued == len(CLAIMS)
    assert waiting.model_error is not None
    assert {rel: (vault / rel).read_bytes() for rel in NOTES} == original

    # The model answers, but nothing usable: null scores with a status, never 0.
    llm_server.responder = responder(scoring=lambda _request: text("I cannot grade these."))
    nulls = run(config, vault)

    assert nulls.drain.null_scores == N_CLAIMS
    assert nulls.model_error == f"evaluation failed for all {N_CLAIMS} claim(s)"
    assert nulls.counts is not None and nulls.counts.null_scores == N_CLAIMS
    for found in stored_claims(config, vault).values():
        for claim in found:
            assert scores_of(claim) == (None, None, None)
            assert claim.score is not None
            assert claim.score.status.startswith("unparseable_output")
    assert {rel: (vault / rel).read_bytes() for rel in NOTES} == original, "no score comments"
    assert "=0.00" not in "".join((vault / rel).read_text() for rel in NOTES)

    # Recovered: the null scores are retried (and only they), extraction stays cached.
    seen = len(llm_server.chat_requests)
    llm_server.responder = responder()
    filled = run(config, vault)

    by_stage = calls_by_stage(new_requests(llm_server, seen))
    assert by_stage == {"extraction": 0, "scoring": SCORED_BLOCKS}
    assert filled.counts is not None
    assert (filled.counts.scored_claims, filled.counts.null_scores) == (N_CLAIMS, 0)
    assert filled.queued == 0
    assert note_scores(vault)["blk-a1"] == weakest(
        [graded("blk-a1", c, 5) for c in CLAIMS["blk-a1"]]
    )


def test_resync_and_evaluate_exit_69_while_the_model_is_down(
    tmp_path: Path,
    llm_server: ScriptedLLMServer,
    make_vault: Callable[[Mapping[str, str]], Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from aclarai.daemon.cli import EX_UNAVAILABLE, main

    for name, value in llm_env(tmp_path, llm_server).items():
        monkeypatch.setenv(name, value)
    vault = make_vault(NOTES)
    claims = tmp_path / "claims.jsonl"
    claims.write_text('{"id": 1, "source": "The bridge opened in 1998.", "claim": "It opened."}\n')
    llm_server.go_down()

    assert main(["resync", str(vault)]) == EX_UNAVAILABLE == 69
    assert "model unavailable: the model endpoint could not be reached" in capsys.readouterr().out
    assert main(["evaluate", str(claims)]) == EX_UNAVAILABLE
    assert '"status": "llm_unavailable' in capsys.readouterr().out

    llm_server.come_back()
    llm_server.responder = responder()
    assert main(["resync", str(vault)]) == 0
    assert note_scores(vault)["blk-b1"] == weakest(
        [graded("blk-b1", c, 5) for c in CLAIMS["blk-b1"]]
    )


INCIDENT = {
    "blk-i1": "fred: The checkout service was down for 47 minutes on June 6, from 14:02 to 14:49 "
    "UTC.",
    "blk-i2": "gina: The root cause was an expired TLS certificate on the payments gateway.",
}
OUTAGE_CLAIM = "The checkout service was down for 47 minutes on June 6, from 14:02 to 14:49 UTC."
ROOT_CAUSE_CLAIM = "The root cause was an expired TLS certificate on the payments gateway."


def misfiling(request: Recorded) -> Reply:
    """A small model's mistake from issue 23: the facts of the context given beside the target
    block come back as claims of the block, with the block's own."""
    assert stage(request) == "extraction"
    [block] = delimited(request, "target_block")
    own = [c for c in (OUTAGE_CLAIM, ROOT_CAUSE_CLAIM) if c in block]
    return json_reply({"claims": [*own, OUTAGE_CLAIM, ROOT_CAUSE_CLAIM]})


def _claims_of(request: Recorded) -> list[str]:
    [section] = delimited(request, "claims")
    return [line.split(": ", 1)[1] for line in section.splitlines()]


def test_the_checkout_outage_is_never_filed_under_the_tls_certificate_block(
    tmp_path: Path,
    llm_server: ScriptedLLMServer,
    make_vault: Callable[[Mapping[str, str]], Path],
) -> None:
    config = load_config(env=llm_env(tmp_path, llm_server))
    vault = make_vault({"incident.md": note_text(list(INCIDENT.items()), title="Incident")})
    llm_server.responder = responder(extraction=misfiling)

    run(config, vault)

    store = build_store(config, config.state_dir_for(vault))
    try:
        blocks = store.live_blocks_with_ids(INCIDENT)
        claims = store.claims_of_blocks(b.id for b in blocks)
        filed = {b.block_id: [c.text for c in claims[b.id]] for b in blocks}
    finally:
        store.close()
    assert filed == {"blk-i1": [OUTAGE_CLAIM], "blk-i2": [ROOT_CAUSE_CLAIM]}
    graded_texts = [
        text for r in llm_server.chat_requests if stage(r) == "scoring" for text in _claims_of(r)
    ]
    assert sorted(graded_texts) == sorted([OUTAGE_CLAIM, ROOT_CAUSE_CLAIM]), "none graded twice"


def test_resync_counts_the_prompt_tokens_the_servers_cache_served(
    setup: tuple[Config, Path], llm_server: ScriptedLLMServer
) -> None:
    config, vault = setup
    llm_server.cache_report = "llama.cpp"
    llm_server.responder = responder()

    summary = run(config, vault)

    served = sum(llm_server.cached_tokens(r) for r in llm_server.chat_requests)
    assert served > 0, "the instructions repeat from one call to the next"
    assert summary.usage["cached_tokens"] == served
    assert re.search(rf"^llm cached_tokens +{served}$", format_summary(summary), re.M)
