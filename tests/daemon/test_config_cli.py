"""Every command checks the configuration before it does anything: one line, the key, where."""

from __future__ import annotations

from pathlib import Path

import pytest

from aclarai.daemon.cli import main

BAD = [
    ("logging:\n  level: LOUD\n", ["logging.level"]),
    ("watch:\n  reconcile_cron: '*/30 * * *'\n", ["watch.reconcile_cron"]),
    (
        "service:\n  thresholds:\n    pass_above: 0.5\n    review_above: 0.6\n",
        ["service.thresholds.review_above", "service.thresholds.pass_above"],
    ),
    (
        "service:\n  weights:\n    pre_checks: 0\n    judges: 0\n",
        ["service.weights.pre_checks", "service.weights.judges"],
    ),
    (
        "queue:\n  backoff_base_s: 10\n  backoff_max_s: 5\n",
        ["queue.backoff_base_s", "queue.backoff_max_s"],
    ),
]


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nThe river floods every spring.\n", encoding="utf-8")
    return vault


@pytest.mark.parametrize("command", ["status", "resync", "claims"])
@pytest.mark.parametrize(("text", "named"), BAD, ids=[b[1][0] for b in BAD])
def test_a_bad_value_stops_every_command_with_one_line(
    tmp_path: Path,
    notes: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    text: str,
    named: list[str],
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    code = main(["--config", str(path), command, str(notes)])
    [line] = capsys.readouterr().err.splitlines()
    assert code == 1
    assert line.startswith("aclarai: invalid config")
    assert all(key in line for key in named) and str(path) in line
    assert not (tmp_path / "state").exists(), "nothing was done"


def test_a_bad_environment_variable_or_flag_is_named(
    notes: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACLARAI_WATCH__RECONCILE_CRON", "at noon")
    assert main(["status", str(notes)]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert "watch.reconcile_cron (from ACLARAI_WATCH__RECONCILE_CRON)" in line
    monkeypatch.delenv("ACLARAI_WATCH__RECONCILE_CRON")
    assert main(["--log-level", "LOUD", "status", str(notes)]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert "logging.level (from the command line)" in line


def test_an_old_key_name_works_with_one_warning_line(
    tmp_path: Path, notes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("processing:\n  workers: 2\neval:\n  workers: 1\n", encoding="utf-8")
    assert main(["--config", str(path), "resync", str(notes)]) == 0
    err = capsys.readouterr().err.splitlines()
    [line] = [line for line in err if "processing.workers" in line]
    assert "processing.workers is now processing.concurrent_notes" in line
    [line] = [line for line in err if "eval.workers" in line]
    assert "eval.workers is now eval.processes" in line
