"""A built wheel carries every module, the default config and the prompts."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_wheel_installs_into_a_fresh_venv(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(ROOT),
        ],
        check=True,
    )
    [wheel] = (tmp_path / "dist").glob("aclarai-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for room in ("parsers", "graph", "agents", "daemon"):
        for module in (ROOT / room).glob("*.py"):
            assert f"aclarai/{room}/{module.name}" in names
    assert "aclarai/daemon/aclarai.config.default.yaml" in names
    for prompt in (ROOT / "agents" / "llm" / "prompts").glob("*.yaml"):
        assert f"aclarai/agents/llm/prompts/{prompt.name}" in names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # The fresh venv borrows the test environment's dependencies through a plain path entry
    # (no network needed); the editable install's import hook is not carried over, so every
    # aclarai module must come from the wheel itself.
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    [site] = (venv / "lib").glob("python3*/site-packages")
    (site / "deps.pth").write_text(deps + "\n")
    pip = venv / "bin" / "pip"
    subprocess.run([str(pip), "install", "-q", "--no-deps", str(wheel)], check=True)
    out = subprocess.run(
        [str(venv / "bin" / "aclarai"), "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert "resync" in out.stdout
    probe = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import aclarai.daemon.config as c; print(c.__file__); "
            "print(c.load_config(env={}).graph.backend)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert str(venv) in probe.stdout and "sqlite" in probe.stdout
