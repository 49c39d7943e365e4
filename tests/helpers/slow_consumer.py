"""A real consumer process whose judge holds each entry, for the kill and SIGTERM tests.

Run as ``python -m tests.helpers.slow_consumer CONFIG_JSON MARKER HOLD_S``: CONFIG_JSON holds the
dotted-key overrides; each time the judge starts on an entry it appends a line to MARKER, then
holds the entry HOLD_S seconds. SIGTERM and SIGINT are handled by :func:`run_consumer` itself.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from aclarai.agents import Interaction, Judge, Judgement
from aclarai.daemon.config import load_config
from aclarai.daemon.service.consume import run_consumer
from aclarai.daemon.service.core import assemble_core
from tests.helpers.service_fakes import OverlapEvaluator


class HoldingJudge(Judge):
    name = "relevance-judge"

    def __init__(self, marker: Path, hold_s: float):
        self._marker = marker
        self._hold_s = hold_s

    def judge(self, interaction: Interaction) -> Judgement:
        with self._marker.open("a", encoding="utf-8") as out:
            out.write(interaction.query + "\n")
        time.sleep(self._hold_s)
        return Judgement(1.0, f"held {self._hold_s} s")


def main(argv: list[str]) -> int:
    overrides, marker, hold_s = json.loads(argv[0]), Path(argv[1]), float(argv[2])
    config = load_config(env={"XDG_CONFIG_HOME": str(marker.parent)}, overrides=overrides)
    core = assemble_core(config.service, OverlapEvaluator(), judges=[HoldingJudge(marker, hold_s)])
    try:
        stats = run_consumer(config, core=core, consumer="slow-consumer")
    finally:
        core.close()
    print(json.dumps({"processed": stats.processed}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
