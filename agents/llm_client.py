"""One client per OpenAI-compatible endpoint: limits, retries, structured replies, usage counts.

Calls go through llama-index's ``OpenAILike`` (the ``openai`` package underneath) with the
library's own retries switched off, because retrying is done here, once, with rules we control:
only transient failures (timeouts, connection errors, 429 honouring ``Retry-After``, 5xx) are
retried, with exponential backoff and jitter, up to ``max_attempts``. Every attempt first waits for
the endpoint's rate limit (requests per minute) and a concurrency slot, and has its own timeout.

Foreign exceptions stop here: :func:`translate_error` turns them into
:class:`~aclarai.parsers.EvaluatorUnavailable` (transient) or
:class:`~aclarai.parsers.EvaluationError`, the original kept as ``__cause__``.
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_exponential_jitter

from aclarai.agents.llm_limits import RateLimiter, UsageCounters
from aclarai.agents.llm_schemas import T, UnparseableOutput, parse_json_output
from aclarai.agents.prompts import Message
from aclarai.parsers import EvaluationError, EvaluatorUnavailable

if TYPE_CHECKING:
    import openai
    from llama_index.llms.openai_like import OpenAILike

logger = logging.getLogger(__name__)

DEFAULT_API_BASE = "https://api.openai.com/v1"
MAX_RETRY_AFTER_S = 300.0
_TRANSIENT_STATUS = frozenset({408, 409, 429})
_REPAIR = (
    "Your previous reply could not be used: {error}. Reply again with only the JSON object "
    "in the format you were given, with no other text."
)


class LLMSettingsLike(Protocol):
    """The fields of the ``model.llm`` configuration section this module uses."""

    api_base: str | None
    temperature: float
    max_tokens: int
    timeout_s: float
    requests_per_minute: int
    max_concurrency: int
    json_mode: bool


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    """How to talk to one endpoint."""

    api_base: str | None = None
    temperature: float = 0.0
    max_tokens: int = 1024
    timeout_s: float = 60.0
    requests_per_minute: int = 600
    max_concurrency: int = 4
    json_mode: bool = True
    max_attempts: int = 3
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 30.0

    @classmethod
    def from_settings(cls, llm: LLMSettingsLike, *, max_attempts: int) -> EndpointSettings:
        """Build from the ``model.llm`` section and ``processing.retries.max_attempts``."""
        return cls(
            api_base=llm.api_base,
            temperature=llm.temperature,
            max_tokens=llm.max_tokens,
            timeout_s=llm.timeout_s,
            requests_per_minute=llm.requests_per_minute,
            max_concurrency=llm.max_concurrency,
            json_mode=llm.json_mode,
            max_attempts=max_attempts,
        )


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


def translate_error(exc: BaseException) -> EvaluationError:
    """The aclarai error for a foreign exception from the HTTP/openai/llama-index stack.

    Timeouts, connection failures, 408/409/429 and 5xx become :class:`EvaluatorUnavailable`
    (with ``retry_after`` when the server gave one); any other status, or a malformed reply,
    becomes :class:`EvaluationError`. The caller raises it ``from exc``.
    """
    if isinstance(exc, EvaluationError):
        return exc
    import openai  # only a process that met a model error pays for the import

    if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
        return EvaluatorUnavailable(f"model endpoint timed out: {exc}")
    if isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        return EvaluatorUnavailable(f"cannot reach the model endpoint: {exc}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status in _TRANSIENT_STATUS or status >= 500:
            return EvaluatorUnavailable(
                f"model endpoint answered HTTP {status}: {exc.message}",
                retry_after=retry_after_s(exc.response),
            )
        return EvaluationError(f"model endpoint refused the request (HTTP {status}): {exc.message}")
    return EvaluationError(f"model call failed: {type(exc).__name__}: {exc}")


class LLMClient:
    """Calls to one OpenAI-compatible endpoint, any model on it.

    Args:
        settings: the endpoint and its limits.
        api_key: the key's value (the daemon reads it from the environment); ``None`` sends a
            placeholder, which local servers accept.
        usage: counters to add to; a fresh set by default (see :attr:`usage`).
    """

    def __init__(
        self,
        settings: EndpointSettings,
        *,
        api_key: str | None = None,
        usage: UsageCounters | None = None,
    ) -> None:
        self.settings = settings
        self.usage = usage if usage is not None else UsageCounters()
        self._api_key = api_key or "not-needed"
        self._api_base = settings.api_base or DEFAULT_API_BASE
        self._http = httpx.Client(timeout=settings.timeout_s)
        self._limiter = RateLimiter(settings.requests_per_minute, 60.0)
        self._slots = threading.BoundedSemaphore(settings.max_concurrency)
        self._json_mode = settings.json_mode
        self._llms: dict[str, OpenAILike] = {}
        self._llms_lock = threading.Lock()
        self._embedder: openai.OpenAI | None = None

    @property
    def endpoint(self) -> str:
        """The base URL calls go to (for ``aclarai status``)."""
        return self._api_base

    def complete_json(
        self,
        model: str,
        messages: Sequence[Message],
        schema: type[T],
        *,
        timeout_s: float | None = None,
    ) -> T:
        """One structured reply, validated against ``schema``, with one repair turn if needed.

        Raises:
            EvaluatorUnavailable: the endpoint stayed unreachable through every retry.
            UnparseableOutput: the reply and the repaired reply both failed to validate.
            EvaluationError: the endpoint refused the request.
        """
        with self._counting_failures():
            text = self._chat(model, messages, json_reply=True, timeout_s=timeout_s)
            try:
                return parse_json_output(text, schema)
            except UnparseableOutput as first:
                logger.info(
                    "model %s gave unusable JSON (%s); asking once for a repair", model, first
                )
                repair = [
                    *messages,
                    Message("assistant", text),
                    Message("user", _REPAIR.format(error=first)),
                ]
                text = self._chat(model, repair, json_reply=True, timeout_s=timeout_s)
                return parse_json_output(text, schema)

    def complete_text(
        self, model: str, messages: Sequence[Message], *, timeout_s: float | None = None
    ) -> str:
        """The model's reply as plain text (for formats that are not JSON)."""
        with self._counting_failures():
            return self._chat(model, messages, json_reply=False, timeout_s=timeout_s)

    def embed(self, model: str, texts: Sequence[str]) -> list[list[float]]:
        """Embedding vectors for ``texts``, in order, from the endpoint's ``/embeddings``."""
        if not texts:
            return []
        client = self._openai_client()

        def call(timeout: float) -> list[list[float]]:
            reply = client.embeddings.create(model=model, input=list(texts), timeout=timeout)
            usage = getattr(reply, "usage", None)
            self.usage.add(prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0)
            ordered = sorted(reply.data, key=lambda item: item.index)
            return [list(item.embedding) for item in ordered]

        with self._counting_failures():
            return self._guarded(call, None)

    def close(self) -> None:
        """Close the HTTP connections."""
        self._http.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextlib.contextmanager
    def _counting_failures(self) -> Iterator[None]:
        try:
            yield
        except EvaluationError:
            self.usage.add(failures=1)
            raise

    def _chat(
        self,
        model: str,
        messages: Sequence[Message],
        *,
        json_reply: bool,
        timeout_s: float | None,
    ) -> str:
        llm = self._llm(model)
        # llama-index takes seconds to import: only a process that really calls a model pays it.
        from llama_index.core.base.llms.types import ChatMessage, MessageRole

        chat_messages = [ChatMessage(role=MessageRole(m.role), content=m.content) for m in messages]

        def call(json_mode: bool, timeout: float) -> str:
            kwargs: dict[str, Any] = {"timeout": timeout}
            if json_mode:
                kwargs["response_format"] = {"type": "json_object"}
            response = llm.chat(chat_messages, **kwargs)
            counts = response.additional_kwargs or {}
            self.usage.add(
                prompt_tokens=int(counts.get("prompt_tokens", 0) or 0),
                completion_tokens=int(counts.get("completion_tokens", 0) or 0),
            )
            return response.message.content or ""

        json_mode = json_reply and self._json_mode
        try:
            return self._guarded(functools.partial(call, json_mode), timeout_s)
        except EvaluationError as exc:
            import openai

            if not (json_mode and isinstance(exc.__cause__, openai.BadRequestError)):
                raise
            # Many local servers reject response_format; tolerant parsing covers them.
            logger.warning(
                "endpoint %s refused JSON mode (%s); parsing free-form replies instead",
                self._api_base,
                exc,
            )
            self._json_mode = False
            return self._guarded(functools.partial(call, False), timeout_s)

    def _guarded(self, call: Callable[[float], Any], timeout_s: float | None) -> Any:
        """Run ``call`` under the rate limit and a concurrency slot, retrying transient errors."""
        timeout = timeout_s if timeout_s is not None else self.settings.timeout_s
        backoff = wait_exponential_jitter(
            initial=self.settings.backoff_initial_s,
            max=self.settings.backoff_max_s,
            jitter=self.settings.backoff_initial_s,
        )

        def wait(state: RetryCallState) -> float:
            delay = backoff(state)
            outcome = state.outcome
            error = outcome.exception() if outcome is not None else None
            asked = getattr(error, "retry_after", None)
            return max(delay, asked) if asked is not None else delay

        def before_sleep(state: RetryCallState) -> None:
            self.usage.add(retries=1)
            error = state.outcome.exception() if state.outcome is not None else None
            logger.info(
                "retrying model call in %.2fs (attempt %d): %s",
                state.upcoming_sleep,
                state.attempt_number,
                error,
            )

        retrying = Retrying(
            stop=stop_after_attempt(self.settings.max_attempts),
            wait=wait,
            retry=retry_if_exception_type(EvaluatorUnavailable),
            before_sleep=before_sleep,
            reraise=True,
        )
        return retrying(self._attempt, call, timeout)

    def _attempt(self, call: Callable[[float], Any], timeout: float) -> Any:
        self._limiter.acquire()
        with self._slots:
            self.usage.add(calls=1)
            try:
                return call(timeout)
            except Exception as exc:
                # The edge of the foreign stack: whatever it raises, callers see our errors.
                raise translate_error(exc) from exc

    def _llm(self, model: str) -> OpenAILike:
        from llama_index.llms.openai_like import OpenAILike

        with self._llms_lock:
            if model not in self._llms:
                self._llms[model] = OpenAILike(
                    model=model,
                    api_base=self._api_base,
                    api_key=self._api_key,
                    is_chat_model=True,
                    is_function_calling_model=False,
                    temperature=self.settings.temperature,
                    max_tokens=self.settings.max_tokens,
                    timeout=self.settings.timeout_s,
                    max_retries=0,
                    http_client=self._http,
                )
            return self._llms[model]

    def _openai_client(self) -> openai.OpenAI:
        import openai

        with self._llms_lock:
            if self._embedder is None:
                self._embedder = openai.OpenAI(
                    api_key=self._api_key,
                    base_url=self._api_base,
                    max_retries=0,
                    timeout=self.settings.timeout_s,
                    http_client=self._http,
                )
            return self._embedder
