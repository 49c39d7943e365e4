"""A two-note vault graded by the scripted OpenAI-compatible server: its notes, the claims the
scripted model extracts from each block, the grades it gives, and the environment that points
aclarai at it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from aclarai.agents import EvalItem
from aclarai.agents.offline import OfflineEvaluator
from aclarai.agents.offline.coverage import coverage
from aclarai.agents.offline.decontext import decontextualization
from aclarai.daemon.config import LLMSettings
from aclarai.parsers import parse_note
from tests.helpers.scripted_llm import (
    Recorded,
    Reply,
    ScriptedLLMServer,
    grades_responder,
    json_reply,
)
from tests.helpers.vault import note_text

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
STAGES = {
    "You extract the claims": "extraction",
    "You grade claims": "scoring",
}


def delimited(request: Recorded, kind: str) -> list[str]:
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
    [block] = delimited(request, "target_block")
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
