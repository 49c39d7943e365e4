"""What went wrong with a model call, in aclarai's terms.

Foreign exceptions stop at the client's edge: :func:`translate_error` turns them into
:class:`~aclarai.parsers.EvaluatorUnavailable` (transient) or
:class:`~aclarai.parsers.EvaluationError` (:class:`InputTooLong` for a context-length refusal),
the original kept as ``__cause__``. The refusals the client answers by asking differently (a
``response_format`` or ``logprobs`` the endpoint does not take) and the overload that halves its
concurrency are read here too, as is the wait a server asks for (``Retry-After``). An agent
records a failed call as :func:`failure_status`.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import httpx

from aclarai.agents.base import UNAVAILABLE_STATUS, Score
from aclarai.parsers import EvaluationError, EvaluatorUnavailable, InputTooLong, UnparseableOutput

if TYPE_CHECKING:
    import openai

MAX_RETRY_AFTER_S = 300.0
_TRANSIENT_STATUS = frozenset({408, 409, 429})
_CONTEXT_MARKERS = (
    "context_length_exceeded",  # OpenAI's error code
    "exceed_context_size_error",  # llama.cpp's error type
    "maximum context length",  # OpenAI, vLLM
    "exceeds the available context size",  # llama.cpp
    "context window",
    "prompt is too long",
)
_CONTEXT_SIZE = re.compile(r"maximum context length is (\d+)")
_FORMAT_MARKERS = ("response_format", "response format", "json_schema", "json_object", "json mode")
_VALIDATION_MARKERS = ("validation error", "input should be", "literal_error", "not supported")
_LOGPROBS_MARKERS = ("logprobs", "top_logprobs")


class CallCancelled(EvaluatorUnavailable):
    """The call was abandoned because the process is stopping; the work stays queued."""


class OutOfBudget(EvaluatorUnavailable):
    """A call given less time than the client's own timed out: the caller's budget ran out
    (a judge's ``judge_timeout_s``), which says nothing of whether the endpoint answers."""


def retry_after_s(response: httpx.Response | None) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``), if it said."""
    if response is None:
        return None
    headers = response.headers
    try:
        if "retry-after-ms" in headers:
            return min(float(headers["retry-after-ms"]) / 1000.0, MAX_RETRY_AFTER_S)
        raw = headers.get("retry-after")
        if raw is None:
            return None
        try:
            seconds = float(raw)
        except ValueError:
            when = email.utils.parsedate_to_datetime(raw)
            seconds = when.timestamp() - time.time()
        return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)
    except (TypeError, ValueError, OverflowError):
        return None


def translate_error(exc: BaseException, *, short_budget: bool = False) -> EvaluationError:
    """The aclarai error for a foreign exception from the HTTP/openai/llama-index stack.

    Timeouts, connection failures, 408/409/429 and 5xx become :class:`EvaluatorUnavailable`
    (with ``retry_after`` when the server gave one); any other status, or a malformed reply,
    becomes :class:`EvaluationError`. The caller raises it ``from exc``. A timeout of a call
    given less time than the client's own (``short_budget``) is :class:`OutOfBudget`.
    """
    if isinstance(exc, EvaluationError):
        return exc
    import openai  # only a process that met a model error pays for the import

    if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
        kind = OutOfBudget if short_budget else EvaluatorUnavailable
        return kind(f"model endpoint timed out: {exc}")
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        return EvaluatorUnavailable(f"cannot reach the model endpoint: {exc}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status in (400, 413) and _says(exc, _CONTEXT_MARKERS):
            return InputTooLong(
                f"the prompt does not fit the model's context (HTTP {status}): {exc.message}",
                context_tokens=_context_size(exc),
            )
        if refuses_response_format(exc):
            return EvaluationError(
                f"model endpoint does not take this response_format (HTTP {status}): {exc.message}"
            )
        if status in _TRANSIENT_STATUS or status >= 500:
            return EvaluatorUnavailable(
                f"model endpoint answered HTTP {status}: {exc.message}",
                retry_after=retry_after_s(exc.response),
            )
        return EvaluationError(f"model endpoint refused the request (HTTP {status}): {exc.message}")
    return EvaluationError(f"model call failed: {type(exc).__name__}: {exc}")


def refuses_response_format(exc: BaseException | None) -> bool:
    """Whether a refusal says the endpoint does not support the ``response_format`` we sent."""
    import openai

    if not isinstance(exc, openai.APIStatusError) or _says(exc, _CONTEXT_MARKERS):
        return False
    if exc.status_code in (400, 422, 501):
        return _says(exc, _FORMAT_MARKERS)
    # llama-cpp-python's server answers a request it cannot validate with a 500 whose body names
    # the field ("response_format ... Input should be 'text' or 'json_object'"): not an outage.
    return (
        exc.status_code == 500
        and _says(exc, ("response_format",))
        and _says(exc, _VALIDATION_MARKERS)
    )


def refuses_logprobs(exc: BaseException | None) -> bool:
    """Whether a refusal says the endpoint does not take ``logprobs`` (some reasoning models)."""
    import openai

    return (
        isinstance(exc, openai.APIStatusError)
        and exc.status_code in (400, 422)
        and _says(exc, _LOGPROBS_MARKERS)
    )


def overloaded(exc: BaseException) -> bool:
    """A timeout or a 429: the server has more requests than it can take at once."""
    import openai

    if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code == 429


def failure_status(exc: EvaluationError) -> str:
    """The status recorded for a failed call: the kind of failure, then the message."""
    if isinstance(exc, EvaluatorUnavailable):
        return f"{UNAVAILABLE_STATUS}: {exc}"
    if isinstance(exc, InputTooLong):
        return f"input too long: {exc}"
    if isinstance(exc, UnparseableOutput):
        return f"unparseable_output: {exc}"
    return f"llm_error: {exc}"


def failed_score(exc: EvaluationError | None) -> Score:
    """The score of a claim whose evaluation failed with ``exc`` (``None``: never evaluated)."""
    status = failure_status(exc) if exc is not None else "not_evaluated"
    return Score.failed(status)


def _says(exc: openai.APIStatusError, markers: Sequence[str]) -> bool:
    said = " ".join(
        str(part) for part in (exc.message, exc.code, exc.type, exc.body) if part
    ).lower()
    return any(marker in said for marker in markers)


def _context_size(exc: openai.APIStatusError) -> int | None:
    """The context size an error names: llama.cpp's ``n_ctx`` field, or OpenAI's wording."""
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("n_ctx"), int):
        return int(body["n_ctx"])
    found = _CONTEXT_SIZE.search(exc.message or "")
    return int(found.group(1)) if found else None
