"""Agents run in worker processes, so that extraction and scoring use every core.

Offline extraction and scoring are pure Python and hold the GIL, so threads cannot spread them
over cores. A :class:`WorkerPool` builds the agents it is given once in each of ``workers``
forked processes; a :class:`PooledEvaluator` and a :class:`PooledExtractor` hand them whole
batches, or contiguous slices of a large batch, and may share one pool. Fork rather than spawn
or a forkserver, which re-import the program's main module in each worker and so run a script
without a ``__main__`` guard again; a worker only reads text and takes no lock that a thread of
the parent may hold but logging's, which Python resets after a fork. Results come back in input
order. The calling thread waits while the workers work, so a caller with several threads (the
queue consumer) keeps both the workers and its own I/O busy.

With ``workers=1`` nothing is started: the agents run in the calling process, exactly as they
would unwrapped. Otherwise the first :data:`START_AFTER` items are also handled in the calling
process, and the workers start only when more come: starting them costs about half a second,
which a small run (a few edits, a test vault) would never earn back. A worker that dies is not
a failure of the batch: the pool is rebuilt and the batch is handled in the calling process
instead; if no worker can be started at all, the agents go on in the calling process.

No worker outlives the process that started it, however that process dies (``kill -9``
included): each worker watches its parent's pid and exits within :data:`PARENT_POLL_S` once it
changes. Where the pool is started from the main thread, Linux also kills the worker at once
(``PR_SET_PDEATHSIG``); not from another thread, since that signal comes when the *thread* that
forked ends, and the queue consumer's threads end after each drain.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from aclarai.agents.base import (
    Claim,
    ClaimExtractor,
    EvalItem,
    Evaluator,
    ExtractionInput,
    Score,
)
from aclarai.parsers import EvaluationError

logger = logging.getLogger(__name__)

START_AFTER = 2000
"""Items handled in the calling process before the workers are started."""
MIN_CHUNK = 32
"""Items per slice at least: below that, pickling and the round trip cost more than they save."""

PARENT_POLL_S = 0.25
"""How often a worker checks that the process that started it still runs."""
_PR_SET_PDEATHSIG = 1

EVALUATOR = "evaluator"
EXTRACTOR = "extractor"

_worker_agents: dict[str, Any] = {}

T = TypeVar("T")
R = TypeVar("R")


# Loaded in the parent: between fork and exec (``preexec_fn``) a child may start nothing, and
# find_library would run ldconfig.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def die_with_parent(parent_pid: int) -> None:
    """Have Linux SIGKILL this process when the thread that forked it ends, and exit now if
    ``parent_pid`` is no longer its parent (it died before the call). Elsewhere a no-op.

    Fit for ``subprocess.Popen(preexec_fn=functools.partial(die_with_parent, os.getpid()))``
    from a main thread: the setting survives ``exec``.
    """
    if _LIBC is None:
        return
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # The parent may have died before prctl took effect: then no signal will ever come.
    if os.getppid() != parent_pid:
        os._exit(1)


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def _start_worker(
    factories: Mapping[str, Callable[[], object]], parent_pid: int, from_main_thread: bool
) -> None:
    if from_main_thread:
        die_with_parent(parent_pid)
    threading.Thread(
        target=_watch_parent, args=(parent_pid,), name="aclarai-parent-watch", daemon=True
    ).start()
    for kind, factory in factories.items():
        _worker_agents[kind] = factory()


def _score_in_worker(items: Sequence[EvalItem]) -> list[Score]:
    evaluator: Evaluator = _worker_agents[EVALUATOR]
    return evaluator.evaluate_batch(items)


def _extract_each_in_worker(
    inputs: Sequence[ExtractionInput],
) -> list[list[Claim] | EvaluationError]:
    extractor: ClaimExtractor = _worker_agents[EXTRACTOR]
    return extractor.extract_each(inputs)


def _extract_batch_in_worker(inputs: Sequence[ExtractionInput]) -> list[list[Claim]]:
    extractor: ClaimExtractor = _worker_agents[EXTRACTOR]
    return extractor.extract_batch(inputs)


class WorkerPool:
    """Worker processes, each holding one agent per kind of ``factories``; see the module
    docstring for when they start and what happens when they die."""

    def __init__(
        self,
        factories: Mapping[str, Callable[[], object]],
        workers: int,
        *,
        start_after: int = START_AFTER,
    ) -> None:
        """Build the pool (no process starts here).

        Args:
            factories: Build each agent, by kind (:data:`EVALUATOR`, :data:`EXTRACTOR`); called
                once in each worker.
            workers: Worker processes; 1 handles everything in the calling process.
            start_after: Items to handle in the calling process before starting the workers.
        """
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self._factories = dict(factories)
        self._start_after = start_after
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False
        self._handled = 0

    def run(
        self,
        task: Callable[[Sequence[T]], list[R]],
        items: Sequence[T],
        local: Callable[[Sequence[T]], list[R]],
    ) -> list[R]:
        """``task`` over contiguous slices of ``items`` in the workers, results in input
        order; ``local(items)`` in the calling process while the workers are not started, or
        when they fail."""
        if self.workers == 1 or not items or not self._pooling(len(items)):
            return local(items)
        pool = self._executor()
        try:
            futures: list[Future[list[R]]] = [
                pool.submit(task, chunk) for chunk in _slices(items, self.workers)
            ]
            results: list[R] = []
            for future in futures:
                results.extend(future.result())
            return results
        except BrokenProcessPool as exc:
            logger.warning("worker process died (%s); handling this batch in-process", exc)
            self._discard(pool)
        except OSError as exc:
            logger.warning("worker processes cannot start (%s); working in-process", exc)
            self._discard(pool)
            self.workers = 1
        return local(items)

    def _pooling(self, count: int) -> bool:
        with self._lock:
            self._handled += count
            return self._pool is not None or self._handled > self._start_after

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise RuntimeError("worker pool is closed")
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=multiprocessing.get_context("fork"),
                    initializer=_start_worker,
                    # The workers are forked by the first submit, in this thread.
                    initargs=(
                        self._factories,
                        os.getpid(),
                        threading.current_thread() is threading.main_thread(),
                    ),
                )
            return self._pool

    def _discard(self, pool: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


class PooledEvaluator(Evaluator):
    """``factory()``'s evaluator, run in worker processes; see the module docstring."""

    def __init__(
        self,
        factory: Callable[[], Evaluator],
        workers: int = 1,
        *,
        start_after: int = START_AFTER,
        pool: WorkerPool | None = None,
    ) -> None:
        """Build the evaluator.

        Args:
            factory: Builds the evaluator; called once here (and once in each worker of a pool
                built here).
            workers: Worker processes of the pool built here; 1 scores in the calling process.
            start_after: Items to score in the calling process before the workers start.
            pool: A pool to share instead, whose :data:`EVALUATOR` is ``factory``'s; its owner
                closes it.
        """
        self._local = factory()
        self._owns_pool = pool is None
        self.pool = pool or WorkerPool({EVALUATOR: factory}, workers, start_after=start_after)
        self.name = self._local.name
        self.version = self._local.version

    @property
    def workers(self) -> int:
        return self.pool.workers

    @property
    def model_id(self) -> str:
        return self._local.model_id

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        return self.pool.run(_score_in_worker, items, self._local.evaluate_batch)

    def close(self) -> None:
        if self._owns_pool:
            self.pool.close()
        self._local.close()


class PooledExtractor(ClaimExtractor):
    """``factory()``'s extractor, run in the worker processes of ``pool`` (whose
    :data:`EXTRACTOR` is ``factory``); its owner closes the pool."""

    def __init__(self, factory: Callable[[], ClaimExtractor], pool: WorkerPool) -> None:
        self._local = factory()
        self.pool = pool
        self.name = self._local.name
        self.version = self._local.version

    def extract_batch(self, inputs: Sequence[ExtractionInput]) -> list[list[Claim]]:
        return self.pool.run(_extract_batch_in_worker, inputs, self._local.extract_batch)

    def extract_each(
        self, inputs: Sequence[ExtractionInput]
    ) -> list[list[Claim] | EvaluationError]:
        return self.pool.run(_extract_each_in_worker, inputs, self._local.extract_each)

    def close(self) -> None:
        self._local.close()


def _slices(items: Sequence[T], workers: int) -> list[Sequence[T]]:
    """Contiguous slices, one per worker, none under :data:`MIN_CHUNK` (one for a small batch)."""
    count = max(1, min(workers, len(items) // MIN_CHUNK))
    size = -(-len(items) // count)
    return [items[start : start + size] for start in range(0, len(items), size)]
