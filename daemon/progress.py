"""Progress of a long command (``adopt``, ``resync``, ``import``, ``evaluate``) on a terminal,
through tqdm.

Only a person watching a terminal wants a bar: when stderr is not a terminal (a log file, a pipe,
systemd's journal) :func:`terminal_progress` gives ``None`` and the command writes nothing
extra. While a bar is shown, aclarai's log lines are written above it rather than through it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm


class Progress:
    """A tqdm bar told how far a count has got (not by how much it grew), so callers that
    report a running total (``files_seen``) or ``(done, total)`` pairs both fit. A count
    reaching its total closes the bar, leaving its last line; a new count then starts a bar."""

    def __init__(self, label: str, *, unit: str) -> None:
        self.label = label
        self.unit = unit
        self._bar: tqdm | None = None
        self._stack = ExitStack()

    def __call__(self, done: int, total: int | None = None) -> None:
        bar = self._bar
        if bar is None or done < bar.n or total != bar.total:
            self.close()
            bar = self._open(total)
        bar.update(done - bar.n)
        if total is not None and done >= total:
            self.close()

    def _open(self, total: int | None) -> tqdm:
        self._stack.enter_context(logging_redirect_tqdm([logging.getLogger("aclarai")]))
        self._bar = tqdm(
            desc=self.label, total=total, unit=f" {self.unit}", file=sys.stderr, dynamic_ncols=True
        )
        return self._bar

    def close(self) -> None:
        """End the bar shown, if any (its last state stays on the terminal)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._stack.close()


def terminal_progress(label: str, *, unit: str) -> Progress | None:
    """A :class:`Progress` when stderr is a terminal; ``None`` otherwise."""
    return Progress(label, unit=unit) if sys.stderr.isatty() else None


@contextmanager
def progress_shown(label: str, *, unit: str) -> Iterator[Progress | None]:
    """:func:`terminal_progress`, closed when the block ends however it ends."""
    progress = terminal_progress(label, unit=unit)
    try:
        yield progress
    finally:
        if progress is not None:
            progress.close()
