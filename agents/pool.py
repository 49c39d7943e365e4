"""An evaluator that runs another one in worker processes, so that scoring uses every core.

Offline scoring is pure Python and holds the GIL, so threads cannot spread it over cores. A
:class:`PooledEvaluator` builds one evaluator in each of ``workers`` forked processes and hands
them whole batches, or contiguous slices of a large batch, to score. Fork rather than spawn or a
forkserver, which re-import the program's main module in each worker and so run a script
without a ``__main__`` guard again; a worker only scores text and takes no lock that a thread
of the parent may hold but logging's, which Python resets after a fork. Results come back in input
order. The calling thread waits while the workers score, so a caller with several threads (the
queue consumer) keeps both the workers and its own I/O busy.

With ``workers=1`` nothing is started: the evaluator runs in the calling process, exactly as it
would unwrapped. Otherwise the first :data:`START_AFTER` items are also scored in the calling
process, and the workers start only when more come: starting them costs about half a second,
which a small run (a few edits, a test vault) would never earn back. A worker that dies is not
a scoring failure: the pool is rebuilt and the batch is scored in the calling process instead;
if no worker can be started at all, the evaluator goes on in the calling process.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from aclarai.agents.base import EvalItem, Evaluator, Score

logger = logging.getLogger(__name__)

START_AFTER = 2000
"""Items scored in the calling process before the workers are started."""
MIN_CHUNK = 32
"""Items per slice at least: below that, pickling and the round trip cost more than they save."""

_worker_evaluator: Evaluator | None = None


def _start_worker(factory: Callable[[], Evaluator]) -> None:
    global _worker_evaluator
    _worker_evaluator = factory()


def _score_in_worker(items: Sequence[EvalItem]) -> list[Score]:
    assert _worker_evaluator is not None, "worker started without its evaluator"
    return _worker_evaluator.evaluate_batch(items)


class PooledEvaluator(Evaluator):
    """``factory()``'s evaluator, run in ``workers`` processes; see the module docstring."""

    def __init__(
        self, factory: Callable[[], Evaluator], workers: int, *, start_after: int = START_AFTER
    ) -> None:
        """Build the pool.

        Args:
            factory: Builds the evaluator; called once here and once in each worker.
            workers: Worker processes; 1 scores in the calling process.
            start_after: Items to score in the calling process before starting the workers.
        """
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self._local = factory()
        self._factory = factory
        self.workers = workers
        self.name = self._local.name
        self.version = self._local.version
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False
        self._scored = 0
        self._start_after = start_after

    @property
    def model_id(self) -> str:
        return self._local.model_id

    def evaluate_batch(self, items: Sequence[EvalItem]) -> list[Score]:
        if self.workers == 1 or not items or not self._pooling(len(items)):
            return self._local.evaluate_batch(items)
        pool = self._executor()
        try:
            futures: list[Future[list[Score]]] = [
                pool.submit(_score_in_worker, chunk) for chunk in _slices(items, self.workers)
            ]
            scores: list[Score] = []
            for future in futures:
                scores.extend(future.result())
            return scores
        except BrokenProcessPool as exc:
            logger.warning("evaluation worker died (%s); scoring this batch in-process", exc)
            self._discard(pool)
        except OSError as exc:
            logger.warning("evaluation workers cannot start (%s); scoring in-process", exc)
            self._discard(pool)
            self.workers = 1
        return self._local.evaluate_batch(items)

    def _pooling(self, count: int) -> bool:
        with self._lock:
            self._scored += count
            return self._pool is not None or self._scored > self._start_after

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise RuntimeError("evaluator is closed")
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.workers,
                    mp_context=multiprocessing.get_context("fork"),
                    initializer=_start_worker,
                    initargs=(self._factory,),
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
        self._local.close()


def _slices(items: Sequence[EvalItem], workers: int) -> list[Sequence[EvalItem]]:
    """Contiguous slices, one per worker, none under :data:`MIN_CHUNK` (one for a small batch)."""
    count = max(1, min(workers, len(items) // MIN_CHUNK))
    size = -(-len(items) // count)
    return [items[start : start + size] for start in range(0, len(items), size)]
