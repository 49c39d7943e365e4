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

from aclarai.agents import EvalItem
from aclarai.agents.offline import OfflineEvaluator
from aclarai.agents.offline.coverage import coverage
from aclarai.agents.offline.decontext import decontextualization
from aclarai.daemon.config import Config, LLMSettings, load_config
from aclarai.daemon.factory import build_store
from aclarai.daemon.loop.resync import ResyncSummary, format_summary, resync
from aclarai.graph import StoredClaim
from aclarai.parsers import SCORE_NAMES, parse_note
from aclarai.parsers.grammar import format_score_value
from tests.agents.scripted_llm import (
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
from tests.daemon.conftest import note_text

KEY_ENV = "SCRIPTED_LLM_KEY"
BLOCKS = {
    "blk-a1": "alice: The bridge opened in 1998. It carries 40,000 cars a day.",
    "blk-a2": "bob: Thanks, sounds good!",
    "blk-b1": "carol: Migration 0042 times out after 300 seconds.",
    "blk-b2": "dana: Sprint 18 ends on June 19.",
}
NOTES = {
    "bridge.md": note_text([(b, BLOCKS[b]) for b in ("blk-a1", "blk-a2")], title="Bridge"),
    "ops/migration.md": note_text([(b, BLOCKS[b]) for b in ("blk-b1", "blk-b2")], title="Ops"),
}
CLAIMS = {
    "blk-a1": ["The bridge opened in 1998.", "The bridge carries 40,000 cars a day."],
    "blk-a2": [],
    "blk-b1": ["Migration 0042 times out after 300 seconds."],
    "blk-b2": ["Sprint 18 ends on June 19."],
}
N_CLAIMS = sum(len(c) for c in CLAIMS.values())
SCORED_BLOCKS = sum(1 for c in CLAIMS.values() if c)
EXTRACTION_CALLS = len(CLAIMS)
"""One call per block, whatever it holds."""

STAGES = {
    "You extract the claims": "extraction",
    "You grade claims": "scoring",
}


def _delimited(request: Recorded, kind: str) -> list[str]:
    pattern = rf'<untrusted kind="{kind}"(?: n="\d+")?>\n(.*?)\n</untrusted>'
    return re.findall(pattern, request.user_text, flags=re.DOTALL)


def stage(request: Recorded) -> str:
    for marker, name in STAGES.items():
        if marker in request.system_text:
            return name
    raise AssertionError(f"unexpected prompt: {request.system_text[:80]!r}")


def claimify(request: Recorded) -> Reply:
    """Each sentence of the target block with a number is one claim, "It" resolved to the
    bridge."""
    assert stage(request) == "extraction", "not an extraction prompt"
    [block] = _delimited(request, "target_block")
    sentences = re.split(r"(?<=[.!?])\s+", block.split(": ", 1)[-1])
    claims = [s.replace("It ", "The bridge ") for s in sentences if re.search(r"\d", s)]
    return json_reply({"claims": claims})


def responder(
    scoring: Callable[[Recorded], Reply] | None = None,
    extraction: Callable[[Recorded], Reply] = claimify,
) -> Callable[[Recorded], Reply]:
    score = scoring or grades_responder(5)

    def respond(request: Recorded) -> Reply:
        return score(request) if stage(request) == "scoring" else extraction(request)

    return respond


def failing_forever() -> Callable[[Recorded], Reply]:
    """500, then 429 with Retry-After, and so on: a down or overloaded endpoint."""
    replies = itertools.cycle([status(500), status(429, {"Retry-After": "0"})])
    return lambda _request: next(replies)


def llm_env(tmp_path: Path, server: ScriptedLLMServer) -> dict[str, str]:
    """The environment of a user pointing aclarai at the scripted endpoint."""
    return {
        "ACLARAI_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "ACLARAI_MODEL__BACKEND": "llm",
        "ACLARAI_MODEL__LLM__API_BASE": server.base_url,
        "ACLARAI_MODEL__LLM__API_KEY_ENV": KEY_ENV,
        KEY_ENV: "scripted-key",
        "ACLARAI_MODEL__LLM__MAX_ATTEMPTS": "2",
    }


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


def note_scores(vault: Path) -> dict[str, dict[str, float]]:
    return {
        b.id: dict(b.scores)
        for rel in NOTES
        for b in parse_note((vault / rel).read_text(encoding="utf-8")).blocks
    }


def graded(block_id: str, claim: str, grade: int) -> tuple[float, float, float]:
    """A claim's scores when the model grades it ``grade``: the entailment from the grade with the
    default share of the offline scorer's, the coverage and decontextualization from the offline
    agents' lexical checks on its block."""
    share = LLMSettings().lexical_share
    [lexical] = OfflineEvaluator().evaluate_batch([EvalItem(claim=claim, source=BLOCKS[block_id])])
    assert lexical.entailed_score is not None
    return (
        round((1 - share) * (grade - 1) / 4 + share * lexical.entailed_score, 3),
        coverage(claim, BLOCKS[block_id]).score,
        decontextualization(claim, BLOCKS[block_id], ()).score,
    )


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
    [block] = _delimited(request, "target_block")
    own = [c for c in (OUTAGE_CLAIM, ROOT_CAUSE_CLAIM) if c in block]
    return json_reply({"claims": [*own, OUTAGE_CLAIM, ROOT_CAUSE_CLAIM]})


def _claims_of(request: Recorded) -> list[str]:
    [section] = _delimited(request, "claims")
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
