"""The process pool: same scores in the same order as in-process, and a dead worker costs
nothing but time."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from aclarai.agents import (
    EvalItem,
    Evaluator,
    ExtractionInput,
    OfflineClaimExtractor,
    OfflineEvaluator,
    Score,
    Utterance,
)
from aclarai.agents.pool import (
    EVALUATOR,
    EXTRACTOR,
    MIN_CHUNK,
    PooledEvaluator,
    PooledExtractor,
    WorkerPool,
)
from aclarai.daemon.config import load_config
from aclarai.daemon.factory import build_agents, eval_processes

SOURCE = "frank: The checkout service was down for {n} minutes on June 6 in Frankfurt."


def items(count: int) -> list[EvalItem]:
    return [
        EvalItem(f"The checkout service was down for {i % 90} minutes.", SOURCE.format(n=i % 7))
        for i in range(count)
    ]


class CrashingEvaluator(Evaluator):
    """Kills the worker process it runs in when asked to score the claim ``crash``."""

    name = "crashing"

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        if multiprocessing.parent_process() is not None and any(i.claim == "crash" for i in items):
            os._exit(1)
        return [Score(float(len(i.claim)) / 100, 1.0, 1.0) for i in items]


def test_pooled_scores_equal_in_process_scores_in_order() -> None:
    batch = items(5 * MIN_CHUNK + 3)
    expected = OfflineEvaluator().evaluate_batch(batch)
    with PooledEvaluator(OfflineEvaluator, 2, start_after=0) as pooled:
        assert pooled.evaluate_batch(batch) == expected
        assert pooled.evaluate_batch(batch[:5]) == expected[:5]
        assert pooled.evaluate_batch([]) == []
        assert len(multiprocessing.active_children()) >= 2
        assert pooled.model_id == OfflineEvaluator().model_id


def test_one_worker_scores_in_process() -> None:
    before = set(multiprocessing.active_children())
    with PooledEvaluator(OfflineEvaluator, 1, start_after=0) as pooled:
        scores = pooled.evaluate_batch(items(3 * MIN_CHUNK))
        assert set(multiprocessing.active_children()) == before
    assert all(s.status == "ok" and s.entailed_score is not None for s in scores)


def test_small_runs_never_start_the_workers() -> None:
    before = set(multiprocessing.active_children())
    with PooledEvaluator(OfflineEvaluator, 2, start_after=100) as pooled:
        assert len(pooled.evaluate_batch(items(60))) == 60
        assert set(multiprocessing.active_children()) == before
        assert len(pooled.evaluate_batch(items(60))) == 60
        assert set(multiprocessing.active_children()) > before


def test_a_dead_worker_costs_time_not_scores() -> None:
    with PooledEvaluator(CrashingEvaluator, 2, start_after=0) as pooled:
        crashed = pooled.evaluate_batch([EvalItem("crash", "source"), EvalItem("ok", "source")])
        assert [s.entailed_score for s in crashed] == [0.05, 0.02]
        assert [s.entailed_score for s in pooled.evaluate_batch([EvalItem("fine", "s")])] == [0.04]


def blocks(count: int) -> list[ExtractionInput]:
    return [
        ExtractionInput(
            Utterance(
                f"blk-{i}", f"dana: I moved the billing job to Frankfurt on June {i % 28 + 1}."
            ),
            before=(Utterance(f"blk-{i - 1}", "erik: The build failed on Tuesday."),),
        )
        for i in range(count)
    ]


def test_one_pool_extracts_and_scores_as_in_process() -> None:
    inputs = blocks(3 * MIN_CHUNK + 1)
    expected = OfflineClaimExtractor().extract_each(inputs)
    assert any(claims for claims in expected), "the inputs hold claims"
    pool = WorkerPool(
        {EVALUATOR: OfflineEvaluator, EXTRACTOR: OfflineClaimExtractor}, 2, start_after=0
    )
    before = set(multiprocessing.active_children())
    try:
        extractor = PooledExtractor(OfflineClaimExtractor, pool)
        evaluator = PooledEvaluator(OfflineEvaluator, pool=pool)
        assert extractor.extract_each(inputs) == expected
        assert extractor.extract_batch(inputs[:3]) == expected[:3]
        started = set(multiprocessing.active_children()) - before
        assert len(started) == 2
        assert evaluator.evaluate_batch(items(2 * MIN_CHUNK)) == OfflineEvaluator().evaluate_batch(
            items(2 * MIN_CHUNK)
        )
        assert set(multiprocessing.active_children()) - before == started, "the same workers"
        evaluator.close()
        assert extractor.extract_each(inputs[:1]) == expected[:1], "the pool's owner closes it"
    finally:
        pool.close()
    assert not set(multiprocessing.active_children()) - before


def test_workers_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        PooledEvaluator(OfflineEvaluator, 0)


def test_the_factory_sizes_the_pool_from_eval_workers(tmp_path: Path) -> None:
    env = {"ACLARAI_STATE_DIR": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)}
    config = load_config(env={**env, "ACLARAI_EVAL__PROCESSES": "3"})
    agents = build_agents(config, tmp_path)
    try:
        assert isinstance(agents.evaluator, PooledEvaluator)
        assert agents.evaluator.workers == 3
        assert isinstance(agents.extractor, PooledExtractor)
        assert agents.extractor.pool is agents.evaluator.pool
    finally:
        agents.close()
    assert eval_processes(load_config(env=env)) == (os.cpu_count() or 1)
