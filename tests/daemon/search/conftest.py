"""A small vault of ordinary notes, adopted and resynced once per test that asks for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.search_vault import write_vault


@pytest.fixture
def graded_vault(tmp_path: Path) -> Path:
    """The notes above, adopted and resynced with the offline scorer."""
    vault = write_vault(tmp_path / "vault")
    for args in (("adopt", str(vault)), ("resync", str(vault))):
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr
    return vault
