"""Per-agent grading through a worker: the decontextualization agent's neighbours travel with
the job, so a worker that never reads the vault grades as the daemon would at home.

The scripted model scores decontextualization by how many similar utterances its prompt shows,
so the neighbours a search finds reach the notes' score comments as well as the prompts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from aclarai.daemon.workers.wire import Job, decode_job
from tests.fixtures.redis_server import RedisServer
from tests.helpers.grading import (
    resync,
    running_workers,
    stream_entries,
    unique_prefix,
    vault_differences,
    write_config,
)
from tests.helpers.scripted_llm import (
    Recorded,
    Reply,
    ScriptedLLMServer,
    json_reply,
    scripted_llm_server,
    text,
)
from tests.helpers.scripted_vault import KEY_ENV, claimify
from tests.helpers.vault import dashboard_stamps, note_text

LLM_ENV = {KEY_ENV: "scripted-key"}
NOTES_BLOCKS = {
    "deploys.md": {
        "blk-d1": "alice: The staging deploy failed 2 times on Tuesday.",
        "blk-d2": "bob: The production deploy is planned for June 19.",
    },
    "ops/migrations.md": {
        "blk-m1": "carol: Migration 0042 failed on staging 3 times.",
        "blk-m2": "dana: The staging database restarts at 02:00 every night.",
    },
    "retro.md": {
        "blk-r1": "erin: Staging failed 5 times in sprint 18 because of migration 0042.",
        "blk-r2": "frank: Thanks, sounds good!",
    },
}
"""Blocks of different notes share words (staging, failed, migration 0042), so a claim's
nearest utterances include other notes' blocks."""
NOTES = {rel: note_text(list(blocks.items()), title=rel) for rel, blocks in NOTES_BLOCKS.items()}
SAYINGS = {
    said.split(": ", 1)[1]: rel for rel, blocks in NOTES_BLOCKS.items() for said in blocks.values()
}
"""Each block's words without its speaker, by the note that holds it."""
CLAIMS = 5
"""What :func:`claimify` draws: each block's sentence with a number, one a block but the last."""

ROLES = {
    "You extract the claims": "extraction",
    "whether a CLAIM is entailed": "entailment",
    "the coverage of a CLAIM": "coverage",
    "the decontextualization of a CLAIM": "decontextualization",
    "verify a CLAIM against EVIDENCE": "verification",
}


def delimited(prompt: str, kind: str) -> list[str]:
    pattern = rf'<untrusted kind="{kind}"(?: n="\d+")?>\n(.*?)\n</untrusted>'
    return re.findall(pattern, prompt, flags=re.DOTALL)


def role(request: Recorded) -> str:
    for marker, name in ROLES.items():
        if marker in request.system_text:
            return name
    raise AssertionError(f"unexpected prompt: {request.system_text[:80]!r}")


def respond(request: Recorded) -> Reply:
    """One deterministic model for every per-agent prompt; decontextualization drops an eighth
    for each similar utterance shown."""
    asked = role(request)
    if asked == "extraction":
        return claimify(request)
    if asked == "entailment":
        return json_reply({"entailment": "entailed", "reason": "stated"})
    if asked == "coverage":
        return json_reply({"coverage_score": 0.75, "omitted": []})
    if asked == "decontextualization":
        similar = delimited(request.user_text, "similar_utterance")
        return json_reply({"decontextualization_score": 1 - len(similar) / 8, "reason": "ok"})
    return text("LABEL: supported\nJUSTIFICATION: The source states it.")


def note_of(utterance: str) -> str:
    """The note holding the block whose words ``utterance`` carries."""
    [rel] = {rel for saying, rel in SAYINGS.items() if saying in utterance}
    return rel


def decontextualization_prompts(server: ScriptedLLMServer) -> list[str]:
    return sorted(r.user_text for r in server.chat_requests if role(r) == "decontextualization")


def foreign_neighbours(prompt: str) -> list[str]:
    """The similar utterances a decontextualization prompt shows from other notes than its
    source's."""
    [source] = delimited(prompt, "source")
    home = note_of(source)
    return [u for u in delimited(prompt, "similar_utterance") if note_of(u) != home]


@dataclass
class Run:
    """One vault's resync: its folder, state, config, and the model server it talks to."""

    vault: Path
    state: Path
    config: Path
    server: ScriptedLLMServer


@pytest.fixture
def servers() -> Iterator[tuple[ScriptedLLMServer, ScriptedLLMServer]]:
    with scripted_llm_server() as local, scripted_llm_server() as remote:
        local.responder = remote.responder = respond
        yield local, remote


def make_run(root: Path, name: str, server: ScriptedLLMServer, prefix: str) -> Run:
    vault = root / name
    for rel, content in NOTES.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(content, encoding="utf-8")
    # One note at a time: the index holds the notes graded before, whatever the machine's
    # speed, so two passes search the same utterances.
    settings: dict[str, Any] = {
        "model": {
            "backend": "llm",
            "llm": {
                "api_base": server.base_url,
                "api_key_env": KEY_ENV,
                "mode": "per_agent",
                "max_attempts": 2,
            },
        },
        "processing": {"concurrent_notes": 1},
        "grading_workers": {
            "prefix": prefix,
            "concurrent_notes": 1,
            "block_s": 0.2,
            "heartbeat_s": 0.5,
        },
    }
    config = write_config(root / f"{name}.yaml", settings)
    return Run(vault, root / f"{name}-state", config, server)


def evaluate_jobs(client: redis.Redis, prefix: str) -> list[Job]:
    jobs = [decode_job(fields[b"payload"]) for _, fields in stream_entries(client, prefix, "work")]
    return [job for job in jobs if job.kind == "evaluate"]


def test_a_worker_grades_per_agent_with_the_neighbours_the_job_carries(
    tmp_path: Path,
    redis_server: RedisServer,
    servers: tuple[ScriptedLLMServer, ScriptedLLMServer],
) -> None:
    prefix = unique_prefix()
    local = make_run(tmp_path, "local", servers[0], prefix)
    remote = make_run(tmp_path, "remote", servers[1], prefix)

    resync(local.vault, config=local.config, state_dir=local.state, env=LLM_ENV)
    with running_workers(
        1, redis_url=redis_server.url, config=remote.config, root=tmp_path, env=LLM_ENV
    ):
        resync(
            remote.vault,
            config=remote.config,
            state_dir=remote.state,
            redis_url=redis_server.url,
            env=LLM_ENV,
        )

    assert vault_differences(local.vault, remote.vault) == []
    assert dashboard_stamps(remote.vault) == 1, "only the dashboard's time stamp line is left out"
    prompts = decontextualization_prompts(remote.server)
    assert prompts == decontextualization_prompts(local.server)
    assert len(prompts) == CLAIMS, "one decontextualization call a claim, none cached"
    assert any(foreign_neighbours(p) for p in prompts), "the worker found other notes' blocks"

    client = redis.Redis.from_url(redis_server.url)
    try:
        jobs = evaluate_jobs(client, prefix)
    finally:
        client.close()
    assert jobs, "the claims were scored through the worker"
    assert all(job.nearby for job in jobs), "every evaluate job carries its neighbours"
    shipped = [
        (note_of(job.items[0].source), {note_of(u.text) for u in job.nearby}) for job in jobs
    ]
    assert any(notes - {home} for home, notes in shipped), shipped
