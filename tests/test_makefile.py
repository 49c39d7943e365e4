"""The Makefile parses, and its targets are the ones docs/development.md lists."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAKEFILE = (ROOT / "Makefile").read_text()
PHONY = re.search(r"^\.PHONY:(.*)$", MAKEFILE, re.M)
TARGETS = sorted(PHONY.group(1).split()) if PHONY else []


def test_every_phony_target_has_a_recipe() -> None:
    assert TARGETS
    defined = set(re.findall(r"^([a-z][a-z-]*):", MAKEFILE, re.M))
    assert set(TARGETS) <= defined


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_reads_every_target_without_a_warning() -> None:
    # -n prints the recipes without running them; a merge that breaks a rule shows up here as
    # "missing separator" or "overriding recipe".
    done = subprocess.run(
        ["make", "-n", "-C", str(ROOT), *TARGETS], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr.lower(), done.stderr


def test_the_development_page_lists_every_target() -> None:
    page = (ROOT / "docs" / "development.md").read_text()
    listed = set(re.findall(r"^\| `make ([a-z-]+)`", page, re.M))
    assert listed == set(TARGETS) - {"install"}
