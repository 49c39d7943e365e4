"""``aclarai check``: an answer judged against the vault's own blocks, which it cites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli

QUESTION = "Who serviced the boiler, and when?"


def check(vault: Path, question: str, answer: str, *extra: str) -> tuple[int, dict[str, object]]:
    done = run_cli(
        "check", str(vault), "--question", question, "--answer", answer, "--json", *extra
    )
    assert "Traceback" not in done.stderr
    return done.returncode, json.loads(done.stdout) if done.stdout else {}


def test_an_answer_the_notes_say_passes_and_cites_the_block(graded_vault: Path) -> None:
    code, reply = check(graded_vault, QUESTION, "Marta serviced the boiler on Thursday morning.")

    assert (code, reply["verdict"]) == (0, "pass")
    assert reply["confidence"] >= 0.8
    cited = reply["citations"]
    assert cited[0]["file"] == "journal/2024-05-02.md"
    assert cited[0]["link"] == f"[[journal/2024-05-02#^{cited[0]['block_id']}]]"
    assert cited[0]["claims"] and "boiler" in cited[0]["claims"][0]["claim"]
    stages = {s["name"]: s["score"] for s in reply["stages"]}
    assert stages["faithfulness-judge"] >= 0.5, "the cited block says what the answer says"


def test_an_answer_the_notes_contradict_does_not_pass(graded_vault: Path) -> None:
    code, reply = check(
        graded_vault, QUESTION, "Oskar repaired the boiler on a Sunday evening last year."
    )

    assert code == 1
    assert reply["verdict"] in ("review", "fail")
    assert reply["citations"][0]["file"] == "journal/2024-05-02.md"


def test_a_question_the_vault_knows_nothing_of_says_so(graded_vault: Path) -> None:
    code, reply = check(
        graded_vault, "What is the capital of Peru?", "Lima is the capital of Peru."
    )

    assert code == 1
    assert reply == {
        "verdict": "no_evidence",
        "confidence": None,
        "reason": "nothing in the vault is relevant to this question",
        "citations": [],
        "stages": [],
    }


@pytest.mark.parametrize(("question", "answer"), [("", "x"), (QUESTION, "  "), ("q" * 30_000, "a")])
def test_bad_input_is_one_line_and_exit_2(graded_vault: Path, question: str, answer: str) -> None:
    done = run_cli("check", str(graded_vault), "--question", question, "--answer", answer)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1


def test_text_output_names_the_verdict_and_the_cited_blocks(graded_vault: Path) -> None:
    done = run_cli(
        "check", str(graded_vault), "--question", QUESTION, "--answer", "Marta did, on Thursday."
    )
    assert done.stdout.startswith("verdict: ")
    assert "[[journal/2024-05-02#^" in done.stdout
