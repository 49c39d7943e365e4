from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_evaluate_streams_jsonl_in_order_with_error_records(tmp_path: Path) -> None:
    lines = [
        json.dumps(
            {
                "id": "a",
                "source": "The deploy failed twice on Tuesday.",
                "claim": "The deploy failed twice on Tuesday.",
            }
        ),
        "{not json",
        json.dumps({"id": "c", "source": "The deploy failed twice on Tuesday."}),
        "",
        json.dumps(
            {
                "id": 4,
                "source": "Bob rolled back to v2.3 on Monday.",
                "claim": "Alice upgraded to v3.1 on Friday.",
            }
        ),
    ]
    env = {"ACLARAI_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path), "PATH": "/usr/bin"}
    out = subprocess.run(
        [sys.executable, "-m", "aclarai.daemon.cli", "evaluate", "-"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["id"] for r in records] == ["a", None, "c", 4]
    assert records[1]["status"].startswith("error") and "invalid JSON" in records[1]["status"]
    assert records[2]["status"].startswith("error") and "claim" in records[2]["status"]
    assert records[1]["entailed_score"] is None
    good, bad = records[0], records[3]
    assert good["status"] == bad["status"] == "ok"
    for key in ("entailed_score", "coverage_score", "decontextualization_score"):
        assert 0.0 <= good[key] <= 1.0 and 0.0 <= bad[key] <= 1.0
    assert good["entailed_score"] > bad["entailed_score"]
    assert good["verdict"] in {"supported", "weakly_supported", "unsupported"}
