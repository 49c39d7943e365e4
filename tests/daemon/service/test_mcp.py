"""``aclarai mcp`` through the official MCP SDK's own client, over stdio, against the real server
process started as a user's assistant would start it."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[3]
SPEC_QUERY = "What is the capital of France?"
SPEC_CONTEXT = (
    "France is a country in Western Europe. Its capital city is Paris, which is also the largest "
    "city in the country."
)


def environment(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "ACLARAI_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }


def call_tools(tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list]:
    """Start ``aclarai mcp``, list its tools and make ``calls``; the results in order."""

    async def session() -> tuple[list[str], list]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "aclarai.daemon.cli", "mcp"],
            env=environment(tmp_path),
        )
        async with Client(params) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            results = [await client.call_tool(name, args) for name, args in calls]
        return tools, results

    return asyncio.run(asyncio.wait_for(session(), timeout=90))


@pytest.fixture(scope="module")
def graded_vault(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A resynced copy of the sample vault, and the folder whose state it used."""
    base = tmp_path_factory.mktemp("mcp")
    vault = base / "vault"
    shutil.copytree(ROOT / "sample_vault", vault)
    done = subprocess.run(
        [sys.executable, "-m", "aclarai.daemon.cli", "resync", str(vault)],
        env=environment(base),
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return base, vault


def test_the_evaluation_tools_answer_over_stdio(graded_vault: tuple[Path, Path]) -> None:
    base, vault = graded_vault
    tools, (good, early, verified, graded, weak, cli_claims) = call_tools(
        base,
        [
            (
                "evaluate_answer",
                {
                    "query": SPEC_QUERY,
                    "context": SPEC_CONTEXT,
                    "answer": "The capital of France is Paris.",
                },
            ),
            (
                "evaluate_answer",
                {
                    "query": "Explain the theory of relativity in detail",
                    "context": "Einstein developed the theory of relativity.",
                    "answer": "ok",
                },
            ),
            (
                "verify_claims",
                {
                    "claims": [
                        {
                            "claim": "The tower is 330 metres tall.",
                            "documents": ["The tower is 330 metres tall."],
                        },
                        {
                            "claim": "The tower is in Rome.",
                            "documents": ["The tower stands in Paris."],
                        },
                    ]
                },
            ),
            (
                "grade_text",
                {
                    "passage": "The tower is 330 metres tall.\n\nIt opened in 1889 in Paris.",
                    "source": "The Eiffel Tower in Paris is 330 metres tall. It opened in 1889.",
                },
            ),
            ("weak_claims", {"vault": str(vault), "limit": 3}),
            ("weak_claims", {"vault": str(vault), "limit": 1000}),
        ],
    )
    assert tools == [
        "evaluate_answer",
        "verify_claims",
        "grade_text",
        "weak_claims",
        "search_claims",
        "get_block",
        "check_answer",
    ]
    assert not any(r.is_error for r in (good, early, verified, graded, weak, cli_claims))

    assert good.structured_content["verdict"] == "pass"
    assert [s["name"] for s in good.structured_content["stages"]][3:] == [
        "relevance-judge",
        "faithfulness-judge",
        "coherence-judge",
    ]
    assert early.structured_content["verdict"] == "fail"
    assert len(early.structured_content["stages"]) == 3

    labels = [v["label"] for v in verified.structured_content["verdicts"]]
    assert labels[0] == "supported" and labels[1] != "supported"
    assert all(v["justification"] for v in verified.structured_content["verdicts"])

    claims = graded.structured_content["claims"]
    assert [c["paragraph"] for c in claims] == [1, 2]
    for claim in claims:
        for name in ("entailed_score", "coverage_score", "decontextualization_score"):
            assert claim[name] is not None and 0.0 <= claim[name] <= 1.0

    listed = weak.structured_content
    assert 0 < len(listed["claims"]) <= 3 and listed["total"] >= len(listed["claims"])
    qualities = [c["quality"] for c in listed["claims"]]
    assert qualities == sorted(qualities) and all(q < 0.7 for q in qualities)
    every = cli_claims.structured_content["claims"]
    from_cli = subprocess.run(
        [sys.executable, "-m", "aclarai.daemon.cli", "claims", str(vault), "--json"],
        env=environment(base),
        capture_output=True,
        timeout=120,
    )
    assert [c["claim_id"] for c in every] == [
        json.loads(line)["claim_id"] for line in from_cli.stdout.splitlines()
    ]


def test_an_error_the_user_can_act_on_reaches_the_assistant(tmp_path: Path) -> None:
    never_synced = tmp_path / "vault"
    never_synced.mkdir()
    _, (result, empty) = call_tools(
        tmp_path,
        [("weak_claims", {"vault": str(never_synced)}), ("grade_text", {"passage": "  "})],
    )
    assert result.is_error
    assert "run `aclarai resync` first" in result.content[0].text
    assert empty.is_error and "passage is empty" in empty.content[0].text
