"""``aclarai status`` shows what the LLM endpoint has cost across processes, and the claims whose
quality is below ``threshold.claim_quality``; the resync summary counts the latter too.

Resyncs and a daemon run with ``model.backend: llm`` against the scripted OpenAI-compatible
server of :mod:`tests.helpers.scripted_vault`; usage totals live in the queue's meta table.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aclarai.agents import UsageCounters
from aclarai.daemon.config import Config, load_config
from aclarai.daemon.loop.daemon import run_daemon
from aclarai.daemon.loop.handoff import hand_resync_to_daemon
from aclarai.daemon.loop.resync import ResyncSummary, format_summary, resync
from aclarai.daemon.reports.status import collect_status, format_status
from aclarai.daemon.vault.control import UsageRecorder, read_usage
from aclarai.daemon.vault.queue import DurableQueue
from aclarai.graph import key_block_id
from aclarai.parsers import QueueError, parse_note
from tests.helpers.cli import QUIET_S, wait_until
from tests.helpers.scripted_llm import (
    Recorded,
    Reply,
    ScriptedLLMServer,
    grades_responder,
    scripted_llm_server,
)
from tests.helpers.scripted_vault import CLAIMS, NOTES, graded, responder
from tests.helpers.scripted_vault import llm_env as scripted_env
from tests.helpers.vault import note_text

ERIN = ("blk-c1", "erin: The database migration took 40 minutes on Friday.")
LOW_GRADE = 1


def quality(scores: tuple[float, float, float]) -> float:
    return (scores[0] * scores[1] * scores[2]) ** (1 / 3)


LOW = {claim: quality(graded("blk-a1", claim, LOW_GRADE)) for claim in CLAIMS["blk-a1"]}
"""Quality of each bridge claim under :func:`bridge_scored_low` (0.63 and 0.48)."""
HIGH = min(quality(graded(b, c, 5)) for b, texts in CLAIMS.items() if b != "blk-a1" for c in texts)
"""Quality of every other claim (~0.99)."""


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with scripted_llm_server() as server:
        server.responder = responder()
        yield server


@pytest.fixture
def llm_env(tmp_path: Path, llm_server: ScriptedLLMServer) -> dict[str, str]:
    return {**scripted_env(tmp_path, llm_server), "ACLARAI_WATCH__QUIET_PERIOD_S": str(QUIET_S)}


pytestmark = pytest.mark.vault(base=None, files=NOTES)


def run(config: Config, vault: Path) -> ResyncSummary:
    summary = resync(config, vault)
    assert summary.store_error is None
    return summary


def add_block(vault: Path, block: tuple[str, str]) -> None:
    with (vault / "ops/migration.md").open("a", encoding="utf-8") as handle:
        handle.write(note_text([block]).split("\n\n", 1)[1])


def bridge_scored_low() -> Callable[[Recorded], Reply]:
    """Grades the claims of the bridge block 1 of 5, every other claim 5."""
    low = grades_responder(LOW_GRADE)
    high = grades_responder(5)

    def respond(request: Recorded) -> Reply:
        # Only the SOURCE section: the similar utterances shown beside it span the whole vault.
        source = re.search(r'<untrusted kind="source">\n(.*?)\n</untrusted>', request.user_text)
        assert source is not None, "a scoring prompt names its source block"
        return (low if "The bridge" in source.group(1) else high)(request)

    return respond


def test_each_resync_adds_its_llm_usage_to_what_status_shows(
    llm_env: dict[str, str], llm_server: ScriptedLLMServer, vault: Path
) -> None:
    config = load_config(env=llm_env)
    assert collect_status(config, vault).llm_usage == {}
    assert "llm usage    none recorded" in format_status(collect_status(config, vault))

    first = run(config, vault)

    shown = collect_status(config, vault)
    assert first.usage["calls"] == len(llm_server.chat_requests) > 0
    assert shown.llm_usage == first.usage
    assert f"LLM calls {first.usage['calls']} (retries 0, failures 0)" in format_status(shown)

    add_block(vault, ERIN)
    second = run(config, vault)

    assert second.usage["calls"] > 0
    totals = collect_status(config, vault).llm_usage
    assert totals == {name: first.usage[name] + second.usage[name] for name in first.usage}
    assert totals["calls"] == len(llm_server.chat_requests)
    assert totals["prompt_tokens"] > first.usage["prompt_tokens"]

    unchanged = run(config, vault)

    assert unchanged.usage["calls"] == 0
    assert collect_status(config, vault).llm_usage == totals, "nothing is counted twice"


def test_the_daemon_records_its_usage_while_running_and_once_at_shutdown(
    llm_env: dict[str, str], llm_server: ScriptedLLMServer, vault: Path
) -> None:
    config = load_config(env=llm_env)
    stop = threading.Event()
    codes: list[int] = []
    runner = threading.Thread(
        target=lambda: codes.append(run_daemon(config, vault, stop_event=stop))
    )

    def recorded_calls() -> int:
        return collect_status(config, vault).llm_usage.get("calls", 0)

    def reconciled() -> bool:
        return collect_status(config, vault).last_resync is not None

    def erin_scored() -> bool:
        blocks = parse_note((vault / "ops/migration.md").read_text(encoding="utf-8")).blocks
        return any(b.id == ERIN[0] and b.scores for b in blocks)

    runner.start()
    try:
        # The start-up reconcile records what it spent when it ends.
        wait_until(reconciled, timeout_s=30, interval_s=0.2)
        after_start = len(llm_server.chat_requests)
        assert recorded_calls() == after_start > 0
        # An edit the watcher picks up is recorded by the periodic flush, daemon still running.
        add_block(vault, ERIN)
        wait_until(erin_scored, timeout_s=20, interval_s=0.2)
        assert len(llm_server.chat_requests) > after_start
        wait_until(
            lambda: recorded_calls() == len(llm_server.chat_requests), timeout_s=20, interval_s=0.2
        )
        # A handed-off re-evaluation scores with fresh agents: one call per scored block, shown in
        # its summary and recorded before the answer.
        answer = hand_resync_to_daemon(config, vault, reevaluate=True, timeout_s=30)
        assert answer is not None and answer.ok
        scored_blocks = sum(1 for claims in CLAIMS.values() if claims) + 1
        assert re.search(rf"^llm calls +{scored_blocks}$", answer.text, flags=re.MULTILINE)
        assert recorded_calls() == len(llm_server.chat_requests)
    finally:
        stop.set()
        runner.join(timeout=15)
    assert codes == [0]

    totals = collect_status(config, vault).llm_usage
    assert totals["calls"] == len(llm_server.chat_requests), "shutdown adds no second count"
    assert run(config, vault).usage["calls"] == 0
    assert collect_status(config, vault).llm_usage == totals


class FlakyQueue(DurableQueue):
    """A real queue whose next meta write fails when told to (a full disk, say)."""

    fail_next = False

    def set_meta(self, key: str, value: str) -> None:
        if self.fail_next:
            self.fail_next = False
            raise QueueError("disk full")
        super().set_meta(key, value)


def test_recorder_adds_only_growth_and_retries_after_a_failed_write(tmp_path: Path) -> None:
    queue = FlakyQueue(tmp_path / "queue.sqlite")
    counters = UsageCounters()
    recorder = UsageRecorder(queue, counters)
    other = UsageRecorder(queue, UsageCounters(calls=10))
    try:
        counters.add(calls=3, prompt_tokens=100)
        recorder.flush()
        recorder.flush()
        other.flush()
        assert read_usage(queue)["calls"] == 13

        counters.add(calls=2, cache_hits=1)
        queue.fail_next = True
        recorder.flush()
        assert read_usage(queue)["calls"] == 13, "the failed write recorded nothing"
        recorder.flush()

        usage = read_usage(queue)
        assert (usage["calls"], usage["prompt_tokens"], usage["cache_hits"]) == (15, 100, 1)
    finally:
        queue.close()


def test_low_quality_claims_are_counted_listed_and_summarised(
    llm_env: dict[str, str], llm_server: ScriptedLLMServer, vault: Path
) -> None:
    llm_server.responder = responder(scoring=bridge_scored_low())
    config = load_config(env=llm_env)
    assert max(LOW.values()) < 0.70 < HIGH
    assert min(LOW.values()) > 0.45

    summary = run(config, vault)

    assert summary.counts is not None and summary.counts.low_quality == 2
    assert re.search(r"^graph: claims below quality 0\.70 +2$", format_summary(summary), re.M)
    status = collect_status(config, vault)
    assert status.counts is not None and status.counts.low_quality == 2
    assert sorted(c.text for c in status.low_quality) == sorted(CLAIMS["blk-a1"])
    assert all(key_block_id(c.block_id) == "blk-a1" for c in status.low_quality)
    text = format_status(status)
    assert "low quality  2 below 0.70" in text
    for claim in CLAIMS["blk-a1"]:
        assert f"  {LOW[claim]:.2f}  blk-a1  {claim}" in text

    lenient = load_config(env={**llm_env, "ACLARAI_THRESHOLD__CLAIM_QUALITY": "0.45"})
    relaxed = collect_status(lenient, vault)
    assert relaxed.counts is not None and relaxed.counts.low_quality == 0
    assert relaxed.low_quality == []
    assert "low quality  0 below 0.45" in format_status(relaxed)
