from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aclarai.daemon.config import load_config
from aclarai.daemon.factory import build_evaluator
from aclarai.daemon.service.batch_eval import run_batch
from tests.helpers.cli import run_cli


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
    out = run_cli("evaluate", "-", env=env, stdin="\n".join(lines) + "\n")
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


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.sampled_from(["The deploy failed twice on Tuesday.", "\ud800", ""]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children),
    max_leaves=8,
)
records = st.fixed_dictionaries(
    {},
    optional={"id": json_values, "source": json_values, "claim": json_values, "x": json_values},
)
nasty_lines = st.one_of(
    records.map(lambda r: json.dumps(r).encode()),
    records.map(lambda r: json.dumps(r, ensure_ascii=False).encode("utf-8", "surrogatepass")),
    st.binary(max_size=80).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from(
        [
            b"[" * 100_000,
            b'{"id": ' + b"9" * 5000 + b', "source": "a b", "claim": "a"}',
            b'{"id": 1e999, "source": "The deploy failed.", "claim": "The deploy failed."}',
            b"\xef\xbb\xbf{}",
            b"   ",
            b"\r",
        ]
    ),
)


@pytest.mark.timeout(max(120, settings.default.max_examples // 4))
@given(st.lists(nasty_lines, max_size=12))
def test_evaluate_gives_one_json_record_per_nonblank_line_whatever_the_bytes(
    lines: list[bytes],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = load_config(env={"ACLARAI_STATE_DIR": tmp})
        source = io.BytesIO(b"\n".join(lines) + b"\n")
        out = io.StringIO()
        with build_evaluator(config, Path(tmp)) as evaluator:
            counts = run_batch(source, out, evaluator)
    # JSON lines end in LF only: U+2028 and other line breaks of str.splitlines may sit inside.
    written = out.getvalue().split("\n")[:-1]
    assert len(written) == sum(1 for line in lines if line.strip())
    decoded = [json.loads(line) for line in written]
    assert all(line.encode("utf-8") for line in written)
    assert counts.errors == sum(r["status"].startswith("error") for r in decoded)
    for record in decoded:
        assert set(record) == {
            "id",
            "entailed_score",
            "coverage_score",
            "decontextualization_score",
            "verdict",
            "status",
        }
        if record["status"].startswith("error"):
            assert record["entailed_score"] is None
