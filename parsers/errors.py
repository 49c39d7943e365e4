"""The one exception tree of aclarai.

::

    AclaraiError
    ├── ConfigError              bad or unknown configuration key (.key, .source)
    ├── ParseError               a note that cannot be parsed (.path, .line, .block_id)
    ├── StoreError               the graph store refused an operation
    │   └── StoreUnavailable     … because it cannot be reached right now      (TransientError)
    ├── EvaluationError          an evaluator could not produce a result
    │   └── EvaluatorUnavailable … because the model endpoint is unreachable   (TransientError)
    │   ├── InputTooLong         … because the prompt does not fit the model's context
    │   └── UnparseableOutput    … because the model's reply does not fit the schema
    ├── WriteConflict            a note changed between read and write (.path)
    ├── VaultBusy                another aclarai process holds the vault       (TransientError)
    ├── PayloadError             an evaluation request that is not valid (names the field)
    └── QueueError               the durable queue or the stream broker failed
        └── BrokerUnavailable    … because Redis cannot be reached             (TransientError)

The command line turns each into one line on stderr and an exit status, in one table
(``aclarai.daemon.cli.EXIT_STATUS``).

``TransientError`` is a marker mixed into every "try again later" error, so retry code can name
one class. Built-in exceptions (``ValueError``, ``TypeError``) stay for programming mistakes;
``AclaraiError`` is for what an operator can act on.
"""

from __future__ import annotations

from pathlib import Path


class AclaraiError(Exception):
    """Root of every error an operator can act on."""


class TransientError(AclaraiError):
    """Marker: the operation may succeed if retried later."""

    retry_after: float | None = None


class ConfigError(AclaraiError):
    """The configuration is invalid; ``key`` and ``source`` say where."""

    def __init__(self, message: str, *, key: str | None = None, source: str | None = None):
        super().__init__(message)
        self.key = key
        self.source = source


class ParseError(AclaraiError):
    """A note cannot be parsed."""

    def __init__(
        self,
        message: str,
        *,
        path: Path | str | None = None,
        line: int | None = None,
        block_id: str | None = None,
    ):
        super().__init__(message)
        self.path = path
        self.line = line
        self.block_id = block_id


class StoreError(AclaraiError):
    """The graph store refused an operation."""


class StoreUnavailable(StoreError, TransientError):
    """The graph store cannot be reached right now."""


class EvaluationError(AclaraiError):
    """An evaluator could not produce a result."""


class EvaluatorUnavailable(EvaluationError, TransientError):
    """The model endpoint cannot be reached right now (timeouts, 429, 5xx)."""

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class InputTooLong(EvaluationError):
    """The request does not fit the model's context window: it alone fails, nothing is retried."""

    def __init__(self, message: str, *, context_tokens: int | None = None):
        super().__init__(message)
        self.context_tokens = context_tokens


class UnparseableOutput(EvaluationError):
    """The model replied, but not with what the schema asks for (even after one repair)."""


class WriteConflict(AclaraiError):
    """A note changed between the moment it was read and the moment it was to be replaced."""

    def __init__(self, message: str, *, path: Path | str | None = None):
        super().__init__(message)
        self.path = path


class VaultBusy(TransientError):
    """Another aclarai process holds the vault (its lock names the holder)."""


class PayloadError(AclaraiError):
    """A payload that is not a valid evaluation request; the message names the field."""


class QueueError(AclaraiError):
    """The durable queue or the stream broker failed."""


class BrokerUnavailable(QueueError, TransientError):
    """The stream broker (Redis) cannot be reached right now."""
