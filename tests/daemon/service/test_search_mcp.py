"""The vault tools of ``aclarai mcp`` (search_claims, get_block, check_answer, and verify_claims
given no documents) through the official MCP SDK's own client, over stdio, against the real
server process, on a resynced copy of sample_vault/."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client, StdioServerParameters

from aclarai.parsers import SCORE_NAMES
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[3]
BACKUP_NOTE = "conversations/2024-06-18 Nightly backup window.md"
BACKUP_QUERY = "nightly backup of the orders database"
ABSENT_QUESTION = "What is the boiling point of mercury at sea level?"
ABSENT_ANSWER = "Mercury boils at 356.7 degrees Celsius at sea level."
LINK = re.compile(r"^\[\[(?P<note>[^\]#|]+)#\^(?P<block>blk-[0-9a-f]+)\]\]$")
VAULT_TOOLS = {"search_claims", "get_block", "check_answer", "verify_claims"}

T = TypeVar("T")


@dataclass(frozen=True)
class Graded:
    base: Path
    vault: Path
    env: dict[str, str]
    claims: list[dict[str, Any]]
    """``aclarai claims VAULT --json --below 1.01``: every graded claim."""


def environment(base: Path) -> dict[str, str]:
    """The whole environment of the commands: state, config and cache under ``base``. No
    ``ACLARAI_STATE_DIR``: each vault gets its own state folder, so one never synced has none."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(base / "home"),
        "XDG_STATE_HOME": str(base / "state"),
        "XDG_CONFIG_HOME": str(base / "config"),
        "XDG_CACHE_HOME": str(base / "cache"),
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Graded:
    base = tmp_path_factory.mktemp("search-mcp")
    vault = base / "vault"
    shutil.copytree(ROOT / "sample_vault", vault)
    env = environment(base)
    done = run_cli("resync", str(vault), env=env)
    assert done.returncode == 0, done.stderr
    listed = run_cli("claims", str(vault), "--json", "--below", "1.01", env=env)
    assert listed.returncode == 0, listed.stderr
    return Graded(base, vault, env, [json.loads(line) for line in listed.stdout.splitlines()])


def with_mcp(env: dict[str, str], talk: Callable[[Client], Awaitable[T]]) -> T:
    """Start ``aclarai mcp`` with ``env`` as its environment and let ``talk`` use its client."""

    async def session() -> T:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "aclarai.daemon.cli", "mcp"], env=env
        )
        async with Client(params) as client:
            return await talk(client)

    return asyncio.run(asyncio.wait_for(session(), timeout=120))


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """The tool's structured reply; fails on an error reply."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    reply: dict[str, Any] = result.structured_content or {}
    return reply


async def error(client: Client, tool: str, **args: Any) -> str:
    """The message of the tool's error reply; fails on a result."""
    result = await client.call_tool(tool, args)
    assert result.is_error, result.structured_content
    text: str = result.content[0].text  # type: ignore[union-attr]
    return text


def cli_search(graded: Graded, query: str) -> list[dict[str, Any]]:
    done = run_cli("search", str(graded.vault), query, "--json", env=graded.env)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_search_claims_and_get_block_round_trip(graded: Graded) -> None:
    vault = str(graded.vault)

    async def talk(client: Client) -> tuple[Any, ...]:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        found = await call(client, "search_claims", query=BACKUP_QUERY, vault=vault)
        link = found["hits"][0]["link"]
        bare = link.removeprefix("[[").removesuffix("]]")
        forms = [link, bare, bare.replace("#^", ".md#^"), bare.replace("#^", "#"), f"[[{bare}|x]]"]
        blocks = [await call(client, "get_block", link_or_id=form, vault=vault) for form in forms]
        top = await call(client, "search_claims", query="backup", vault=vault, limit=2)
        return tools, found, blocks, top

    tools, found, blocks, top = with_mcp(graded.env, talk)
    assert VAULT_TOOLS | {"evaluate_answer", "grade_text", "weak_claims"} <= tools
    assert found["unembedded"] == 0 and found["note"] == ""
    assert found["hits"] == cli_search(graded, BACKUP_QUERY)
    hit = found["hits"][0]
    assert hit["file"] == BACKUP_NOTE and LINK.match(hit["link"])
    assert len(top["hits"]) == 2

    block = blocks[0]
    assert all(other == block for other in blocks[1:])
    assert (block["file"], block["block_id"], block["link"]) == (
        hit["file"],
        hit["block_id"],
        hit["link"],
    )
    assert block["text"] == hit["text"] and block["about"] == hit["about"]
    assert [(c["claim"], c["quality"]) for c in block["claims"]] == [
        (c["claim"], c["quality"]) for c in hit["claims"]
    ]
    listed = {
        c["claim_id"]: c
        for c in graded.claims
        if (c["file"], c["block_id"]) == (hit["file"], hit["block_id"])
    }
    assert listed and set(listed) == {c["claim_id"] for c in block["claims"]}
    for claim in block["claims"]:
        assert claim["quality"] == pytest.approx(listed[claim["claim_id"]]["quality"])
        for name in SCORE_NAMES:
            assert claim[name] == pytest.approx(listed[claim["claim_id"]][name])


def test_min_quality_filters_the_search(graded: Graded) -> None:
    vault = str(graded.vault)

    async def talk(client: Client) -> tuple[dict[str, Any], dict[str, Any], float]:
        every = await call(client, "search_claims", query="backup retention", vault=vault, limit=20)
        qualities = sorted({h["quality"] for h in every["hits"] if h["quality"] is not None})
        cut = qualities[len(qualities) // 2]
        kept = await call(
            client,
            "search_claims",
            query="backup retention",
            vault=vault,
            limit=20,
            min_quality=cut,
        )
        return every, kept, cut

    every, kept, cut = with_mcp(graded.env, talk)
    assert kept["hits"] and all(h["quality"] >= cut for h in kept["hits"])
    weaker = {h["link"] for h in every["hits"] if h["quality"] is not None and h["quality"] < cut}
    assert weaker and not weaker & {h["link"] for h in kept["hits"]}


def test_check_answer_cites_the_block_or_finds_no_evidence(graded: Graded) -> None:
    vault = str(graded.vault)

    async def talk(client: Client) -> tuple[dict[str, Any], ...]:
        found = await call(
            client, "search_claims", query="backup took minutes Monday Tuesday", vault=vault
        )
        hit = found["hits"][0]
        consistent = await call(
            client,
            "check_answer",
            question="How long did the nightly backup take on Monday?",
            answer=hit["claim"],
            vault=vault,
        )
        absent = await call(
            client, "check_answer", question=ABSENT_QUESTION, answer=ABSENT_ANSWER, vault=vault
        )
        return hit, consistent, absent

    hit, consistent, absent = with_mcp(graded.env, talk)
    assert hit["file"] == BACKUP_NOTE and "52 minutes" in hit["text"]
    assert consistent["verdict"] in {"pass", "review"}
    assert hit["link"] in [c["link"] for c in consistent["citations"]]
    assert [s["name"] for s in consistent["stages"]][3:] == [
        "relevance-judge",
        "faithfulness-judge",
        "coherence-judge",
    ]
    assert absent["verdict"] == "no_evidence"
    assert absent["citations"] == [] and absent["stages"] == []


def test_verify_claims_without_documents_cites_the_vault(graded: Graded) -> None:
    claims = [
        {"claim": "The backup took 52 minutes on Monday and 58 minutes on Tuesday."},
        {"claim": ABSENT_ANSWER},
        {"claim": "The tower is 330 metres tall.", "documents": ["The tower is 330 metres tall."]},
    ]

    async def talk(client: Client) -> dict[str, Any]:
        return await call(client, "verify_claims", claims=claims, vault=str(graded.vault))

    reply = with_mcp(graded.env, talk)
    from_vault, absent, given = reply["verdicts"]
    assert "note" not in reply
    assert from_vault["label"] == "supported" and from_vault["status"] == "ok"
    assert from_vault["citations"] and all(
        set(c) == {"file", "block_id", "link"} and LINK.match(c["link"])
        for c in from_vault["citations"]
    )
    assert from_vault["citations"][0]["file"] == BACKUP_NOTE
    assert absent["status"] == "no_evidence" and absent["citations"] == []
    assert given["label"] == "supported" and "citations" not in given


def test_the_configured_vault_is_the_default(graded: Graded) -> None:
    env = {**graded.env, "ACLARAI_VAULT__PATH": str(graded.vault)}

    async def talk(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        found = await call(client, "search_claims", query=BACKUP_QUERY)
        verified = await call(
            client, "verify_claims", claims=[{"claim": "The backup took 52 minutes on Monday."}]
        )
        return found, verified

    found, verified = with_mcp(env, talk)
    assert found["hits"][0]["file"] == BACKUP_NOTE
    assert verified["verdicts"][0]["citations"][0]["file"] == BACKUP_NOTE


def test_errors_the_assistant_can_act_on(graded: Graded, tmp_path: Path) -> None:
    never = tmp_path / "never-synced"
    never.mkdir()
    vault = str(graded.vault)

    async def talk(client: Client) -> tuple[Any, ...]:
        messages = [
            await error(client, "search_claims", query=BACKUP_QUERY),
            await error(client, "search_claims", query="  ", vault=vault),
            await error(client, "search_claims", query="backup", vault=vault, limit=0),
            await error(
                client, "get_block", link_or_id=f"[[{BACKUP_NOTE}#^blk-nope]]", vault=vault
            ),
            await error(client, "get_block", link_or_id="just a note", vault=vault),
            await error(client, "check_answer", question=" ", answer="Yes.", vault=vault),
            await error(client, "check_answer", question="Q?", answer="A.", vault=str(never)),
        ]
        no_vault = await call(client, "verify_claims", claims=[{"claim": "The sky is green."}])
        return messages, no_vault

    messages, no_vault = with_mcp(graded.env, talk)
    assert messages[0].endswith("no vault given: pass vault or set vault.path in the config")
    assert "query is empty" in messages[1]
    assert "limit must be 1 to 100" in messages[2]
    assert f"no block ^blk-nope in {BACKUP_NOTE}" in messages[3]
    assert "not a block link" in messages[4]
    assert "question is empty" in messages[5]
    assert "run `aclarai resync` first" in messages[6]
    assert all("\n" not in message for message in messages)
    [verdict] = no_vault["verdicts"]
    assert verdict["status"] == "no_evidence" and verdict["citations"] == []
    assert "no vault" in no_vault["note"]
