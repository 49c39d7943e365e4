"""Every chart of the dashboard goes through ``mermaid.parse()`` of the Mermaid that Obsidian
bundles, run by node: a chart Obsidian would refuse fails the suite."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from aclarai.daemon.config import load_config
from aclarai.daemon.loop.resync import resync
from aclarai.parsers import DailyQuality, DashboardData, render_dashboard
from tests.fixtures.mermaid import (
    INSTALL_TIMEOUT_S,
    MermaidUnavailable,
    install_mermaid,
    mermaid_parse,
)

ROOT = Path(__file__).resolve().parents[3]
# The first test also pays for npm installing Mermaid into the virtual environment (once).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(INSTALL_TIMEOUT_S + 60)]


@pytest.fixture(scope="module")
def mermaid() -> Path:
    try:
        return install_mermaid()
    except MermaidUnavailable as exc:
        pytest.fail(str(exc))


def _charts(markdown: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [t.content for t in tokens if t.type == "fence" and t.info.strip() == "mermaid"]


def test_the_judge_refuses_a_broken_chart(mermaid: Path) -> None:
    good = 'xychart-beta\n    x-axis ["a", "b"]\n    bar [1, 2]\n'
    results = mermaid_parse(mermaid, [good, 'xychart-beta\n    x-axis ["a", "b"\n', "nochart\n"])
    assert [r["ok"] for r in results] == [True, False, False]
    assert results[0]["type"] == "xychart"
    assert results[1]["error"]


def test_every_chart_of_a_resynced_vault_parses(mermaid: Path, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(ROOT / "sample_vault", vault)
    config = load_config(env={"ACLARAI_STATE_DIR": str(tmp_path / "state")})
    summary = resync(config, vault)
    assert summary.dashboard is not None

    charts = _charts(summary.dashboard.path.read_text(encoding="utf-8"))

    assert len(charts) == 4, "three score distributions and quality over time"
    results = mermaid_parse(mermaid, charts)
    assert [(r["ok"], r["type"], r["error"]) for r in results] == [(True, "xychart", None)] * 4


def test_charts_at_the_edges_parse(mermaid: Path) -> None:
    """One day, many days, all values in one bin, zero and full quality."""
    days = [
        DailyQuality(f"2024-{m:02d}-{d:02d}", q, 1)
        for m in (1, 2)
        for d, q in ((1, 0.0), (28, 1.0))
    ]
    data = [
        DashboardData(
            threshold=0.7,
            model="m",
            score_counts={"entailed_score": {100: 7}},
            daily=[DailyQuality("2024-06-03", 1.0, 1)],
        ),
        DashboardData(
            threshold=0.7,
            model="m",
            score_counts={
                name: {0: 1, 100: 2}
                for name in ("entailed_score", "coverage_score", "decontextualization_score")
            },
            daily=days * 30,
        ),
    ]
    charts = [c for d in data for c in _charts(render_dashboard(d, "2024-06-03T09:00:00Z"))]

    assert len(charts) == 8
    assert all(r["ok"] for r in mermaid_parse(mermaid, charts)), "every chart parses"


def test_an_unreachable_registry_fails_the_suite_rather_than_skipping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A closed loopback port stands for a registry that cannot be reached.
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    monkeypatch.setenv("npm_config_fetch_timeout", "2000")
    with pytest.raises(MermaidUnavailable, match="the npm registry must be reachable"):
        install_mermaid(tmp_path)
    assert not list(tmp_path.glob("mermaid-*")), "nothing half-installed is left to be trusted"
