"""The block scores are listed once, in :data:`aclarai.parsers.SCORE_NAMES`: every record that
holds them, every table that describes them and every output that gives them follows that list,
and no module spells the whole list again."""

from __future__ import annotations

import ast
import json
from dataclasses import fields
from pathlib import Path

import pytest

from aclarai.agents import Score
from aclarai.agents.offline import OfflineEvaluator
from aclarai.daemon.reports.claims import claim_json, format_claim
from aclarai.daemon.service.batch_eval import evaluate_lines
from aclarai.daemon.service.mcp import grade_text
from aclarai.daemon.workers.wire import Outcome, decode_outcome, encode_outcome
from aclarai.graph import ScoreRecord, block_scores
from aclarai.graph.base import StoredClaim
from aclarai.parsers import SCORE_NAMES, SCORE_WORDS, ClaimRef, named_scores
from aclarai.parsers.dashboard import REASONS, SCORE_TITLES

ROOT = Path(__file__).resolve().parent.parent
VALUES = dict(zip(SCORE_NAMES, (0.11, 0.22, 0.33, 0.44, 0.55), strict=False))
"""A distinct value per score, so that a score given under another's name shows."""

SPELLED_OUT_IN = {
    "parsers/model.py": "SCORE_NAMES itself",
    "graph/migrations.py": "the edge columns each migration created, as it created them",
}
"""Where the whole list may be written out; anywhere else it is read from SCORE_NAMES."""
EACH_SCORE_ON_ITS_OWN = {
    "parsers/model.py": "the word a justification names each score by (SCORE_WORDS)",
    "agents/base.py": "the reason explained() gives for each score",
    "parsers/dashboard.py": "the dashboard's heading and title of each score",
    "agents/offline/evaluator.py": "the offline agents compute each score",
    "agents/llm/agents.py": "the combined mode computes each score",
    "agents/llm/per_agent.py": "one agent computes each score",
}
"""Where each score is given something of its own (its text, how it is computed)."""


def _field_names(cls: type) -> list[str]:
    return [f.name for f in fields(cls)]


def _in_order(names: list[str]) -> list[str]:
    return [name for name in names if name in SCORE_NAMES]


def test_the_list_is_the_scores_of_a_block() -> None:
    assert len(SCORE_NAMES) == len(set(SCORE_NAMES)) >= 1
    assert all(name.endswith("_score") for name in SCORE_NAMES)


@pytest.mark.parametrize("record", [Score, ScoreRecord, ClaimRef])
def test_records_hold_every_score_in_the_list_order(record: type) -> None:
    assert _in_order(_field_names(record)) == list(SCORE_NAMES)


def test_an_evaluator_score_takes_the_scores_first_and_positionally() -> None:
    assert _field_names(Score)[: len(SCORE_NAMES)] == list(SCORE_NAMES)
    assert named_scores(Score(*VALUES.values())) == VALUES
    assert named_scores(Score.failed("broken")) == dict.fromkeys(SCORE_NAMES)


@pytest.mark.parametrize("table", [SCORE_WORDS, REASONS, SCORE_TITLES])
def test_each_table_of_score_texts_describes_every_score(table: dict[str, str]) -> None:
    assert list(table) == list(SCORE_NAMES)


def _ref(**scores: float | None) -> ClaimRef:
    return ClaimRef("clm-1", "The sky is blue.", "note.md", "b1", "", **scores, quality=0.2)


def test_claims_report_gives_every_score_in_order() -> None:
    record = json.loads(claim_json(_ref(**VALUES)))
    assert _in_order(list(record)) == list(SCORE_NAMES)
    assert named_scores(type("Row", (), record)) == VALUES
    shown = format_claim(_ref(**VALUES)).split("[", 1)[1].split("]", 1)[0]
    assert shown == " ".join(f"{v:.2f}" for v in VALUES.values())


def test_dashboard_line_names_every_score_in_order() -> None:
    from aclarai.parsers.dashboard import _scores_line

    line = _scores_line(_ref(**VALUES))
    assert line == " · ".join(
        f"{name.removesuffix('_score')} {value:.2f}" for name, value in VALUES.items()
    )


def test_batch_output_gives_every_score_in_order() -> None:
    lines = [
        json.dumps({"id": "a", "claim": "Paris is in France.", "source": "Paris is in France."}),
        "not json",
    ]
    records = list(evaluate_lines([line.encode() for line in lines], OfflineEvaluator()))
    for record in records:
        keys = list(record)
        assert keys[1 : 1 + len(SCORE_NAMES)] == list(SCORE_NAMES), keys
    assert all(isinstance(records[0][name], float) for name in SCORE_NAMES)
    assert all(records[1][name] is None for name in SCORE_NAMES)


def test_mcp_grade_text_gives_every_score_in_order(tmp_path: Path) -> None:
    from aclarai.daemon.config import load_config
    from aclarai.daemon.service.core import build_service_core

    core = build_service_core(load_config(env={"ACLARAI_STATE_DIR": str(tmp_path)}, overrides={}))
    try:
        result = grade_text(core, "The Eiffel Tower is in Paris. It opened in 1889.", "")
    finally:
        core.close()
    assert result["claims"]
    for claim in result["claims"]:
        assert _in_order(list(claim)) == list(SCORE_NAMES)
        assert all(claim[name] is None or 0.0 <= claim[name] <= 1.0 for name in SCORE_NAMES)


def test_the_wire_carries_every_score_under_its_name() -> None:
    score = Score(*VALUES.values(), verdict="supported", justification="said", omitted=("x",))
    raw = encode_outcome(Outcome(key="k", scores=(score,)))
    [sent] = json.loads(raw)["scores"]
    assert _in_order(list(sent)) == list(SCORE_NAMES)
    [back] = decode_outcome(raw).scores
    assert back == score


def test_a_block_shows_each_score_of_its_weakest_claim() -> None:
    def stored(claim_id: str, value: float) -> StoredClaim:
        record = ScoreRecord(
            claim_id, "b1", "h", **dict.fromkeys(SCORE_NAMES, value), status="ok", model="m"
        )
        return StoredClaim(claim_id, "b1", "text", record)

    assert block_scores([stored("c1", 0.9), stored("c2", 0.4)], "h") == dict.fromkeys(
        SCORE_NAMES, 0.4
    )


def _python_files() -> list[Path]:
    return sorted(
        path
        for folder in ("parsers", "graph", "agents", "daemon", "benchmarks")
        for path in (ROOT / folder).rglob("*.py")
    )


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings (a text may name every score)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for statement in body:
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    found.add(id(statement.value))
    return found


def _spells_every_score(node: ast.AST, docstrings: set[int]) -> bool:
    """Whether ``node`` lists every score by hand: a list, tuple or set of their names or of
    attributes named after them, or a text (a query) naming each of them."""
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        named = {
            e.value if isinstance(e, ast.Constant) else getattr(e, "attr", None) for e in node.elts
        }
        return set(SCORE_NAMES) <= named
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return id(node) not in docstrings and all(name in node.value for name in SCORE_NAMES)
    return False


def _gives_each_score(node: ast.AST) -> bool:
    """Whether ``node`` gives every score on its own: a dict keyed by each, or a call passing
    each by keyword."""
    if isinstance(node, ast.Dict):
        keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
        return set(SCORE_NAMES) <= keys
    if isinstance(node, ast.Call):
        return set(SCORE_NAMES) <= {k.arg for k in node.keywords}
    return False


def _offenders(path: Path) -> list[str]:
    rel = path.relative_to(ROOT).as_posix()
    tree = ast.parse(path.read_text())
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if rel not in SPELLED_OUT_IN and _spells_every_score(node, docstrings):
            found.append(f"{rel}:{getattr(node, 'lineno', '?')} lists every score")
        if rel not in EACH_SCORE_ON_ITS_OWN and _gives_each_score(node):
            found.append(f"{rel}:{getattr(node, 'lineno', '?')} gives each score by name")
    return found


def test_no_module_lists_the_scores_by_hand() -> None:
    offenders = [found for path in _python_files() for found in _offenders(path)]
    assert offenders == []


@pytest.mark.parametrize(
    "source",
    [
        'KEYS = ("quality", "entailed_score", "coverage_score", "decontextualization_score")',
        "shown = [ref.entailed_score, ref.coverage_score, ref.decontextualization_score]",
        'SQL = "SELECT entailed_score, coverage_score, decontextualization_score FROM edges"',
        "row = {'entailed_score': a, 'coverage_score': b, 'decontextualization_score': c}",
        "Score(entailed_score=a, coverage_score=b, decontextualization_score=c)",
    ],
)
def test_the_hand_written_list_check_catches(source: str) -> None:
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    assert any(
        _spells_every_score(node, docstrings) or _gives_each_score(node) for node in ast.walk(tree)
    )


def test_the_check_reads_every_room_and_the_benchmarks() -> None:
    read = {path.relative_to(ROOT).parts[0] for path in _python_files()}
    assert read == {"parsers", "graph", "agents", "daemon", "benchmarks"}
