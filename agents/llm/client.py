"""One client per OpenAI-compatible endpoint: limits, retries, structured replies, usage counts.

Calls go through llama-index's ``OpenAILike`` (the ``openai`` package underneath) with the
library's own retries switched off, because retrying is done here, once, with rules we control:
only transient failures (timeouts, connection errors, 429 honouring ``Retry-After``, 5xx) are
retried, with exponential backoff and jitter, up to ``max_attempts``. Every attempt first waits for
the endpoint's rate limit (requests per minute) and a concurrency slot, and has its own timeout.
The concurrency limit adapts: halved when a call times out or is answered 429 (a server with
fewer slots than we send queues the rest), raised by one after a run of quick calls. A server that
says how fast it writes (llama.cpp's ``timings.predicted_per_second``) gives each call the time
to write ``max_tokens`` at the slowest speed seen, on top of ``timeout_s``: a small local model on
a busy machine writes a long reply in minutes, which is slow, not down.

Structured replies carry their pydantic schema. Each endpoint is asked first with
``response_format`` ``json_schema`` (OpenAI, vLLM, Ollama and llama.cpp's server constrain
decoding to it), then, if it answers that it does not support that format, with ``json_object``
and the schema in the prompt, then as plain text with the schema in the prompt. The step down
happens on that answer only (never on, say, a context-length error) and is remembered by the
client and, given a ``state_path``, by every client of that endpoint after it (the daemon keeps
the file in its state folder); so is the context size the server reports in a context-length
error.

A structured call may also ask for the ``top_logprobs`` of each reply token (OpenAI, vLLM and
llama.cpp's server give them): a grade then reads as the expected value over the digits the model
weighed, not only the one it wrote. An endpoint that refuses ``logprobs`` is asked without them
from then on, and one that ignores them gives the written grade. Every reply's usage counts the
prompt tokens the server took from its prompt cache (``usage.prompt_tokens_details.cached_tokens``,
or llama.cpp's ``timings.cache_n``).

Foreign exceptions stop here: whatever the stack raises is translated
(:mod:`aclarai.agents.llm.errors`), so callers see only aclarai's errors, the original kept as
``__cause__``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import httpx
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    retry_if_not_exception_type,
    stop_after_attempt,
)
from tenacity.wait import wait_exponential_jitter

from aclarai.agents.llm.endpoint import EndpointMemory, OutputMode
from aclarai.agents.llm.errors import (
    CallCancelled,
    OutOfBudget,
    overloaded,
    refuses_logprobs,
    refuses_response_format,
    translate_error,
)
from aclarai.agents.llm.limits import AdaptiveLimit, EndpointHealth, RateLimiter, UsageCounters
from aclarai.agents.llm.prompts import Message
from aclarai.agents.llm.schemas import (
    T,
    UnparseableOutput,
    json_schema_format,
    parse_json_output,
    schema_hint,
)
from aclarai.parsers import EvaluationError, EvaluatorUnavailable, InputTooLong

if TYPE_CHECKING:
    import openai
    from llama_index.llms.openai_like import OpenAILike

logger = logging.getLogger(__name__)

DEFAULT_API_BASE = "https://api.openai.com/v1"
CHARS_PER_TOKEN = 3.0
"""A cautious estimate (English runs nearer 4): prompts are fitted with room to spare."""
TIMED_REPLY_TOKENS = 16
"""A reply this long or longer tells how fast the server writes; a shorter one is mostly its
start-up."""
WRITING_TIMEOUTS = 3.0
"""The time to write a reply given on top of ``timeout_s`` is at most this many ``timeout_s``: a
speed measured while the machine swapped must not leave a hung server undetected for an hour."""
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
    context_tokens: int | None


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
    """``False`` starts the endpoint in plain-text mode (the schema goes in the prompt)."""
    context_tokens: int | None = None
    """The model's context window in tokens; ``None``: what the server says, else unlimited."""
    max_attempts: int = 3
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 30.0

    @classmethod
    def from_settings(cls, llm: LLMSettingsLike, *, max_attempts: int) -> EndpointSettings:
        """Build from the ``model.llm`` section and its ``max_attempts``."""
        return cls(
            api_base=llm.api_base,
            temperature=llm.temperature,
            max_tokens=llm.max_tokens,
            timeout_s=llm.timeout_s,
            requests_per_minute=llm.requests_per_minute,
            max_concurrency=llm.max_concurrency,
            json_mode=llm.json_mode,
            context_tokens=llm.context_tokens,
            max_attempts=max_attempts,
        )


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` may take, erring high (no tokenizer is loaded for a remote model)."""
    return int(len(text) / CHARS_PER_TOKEN) + 1


@dataclass(frozen=True, slots=True)
class TokenOptions:
    """One token of a reply and the log-probabilities of the tokens the model weighed there."""

    token: str
    options: tuple[tuple[str, float], ...]


@dataclass(frozen=True, slots=True)
class Reply:
    """A model's reply: its text and, when asked for and given, its tokens' options."""

    text: str
    tokens: tuple[TokenOptions, ...] = ()


class InFlight:
    """A client's calls in flight: each runs on a helper thread, so that :meth:`cancel` frees its
    caller at once, and its start is kept, so that a watchdog can see one that never ends."""

    def __init__(self) -> None:
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._started: dict[object, float] = {}
        """Monotonic start of each call in flight."""

    def cancel(self) -> None:
        """Abandon the calls in flight and refuse new ones (:class:`CallCancelled`)."""
        self._cancelled.set()

    def longest_s(self) -> float:
        """How long the oldest call in flight has run; 0.0 when none is.

        httpx's timeout bounds each read, not the whole reply: a server that trickles bytes holds
        a call for ever, and a watchdog asks this to tell such a call from a slow one.
        """
        with self._lock:
            oldest = min(self._started.values(), default=None)
        return 0.0 if oldest is None else time.monotonic() - oldest

    def sleep(self, seconds: float) -> None:
        """Wait between attempts, cut short by :meth:`cancel`."""
        if self._cancelled.wait(seconds):
            raise CallCancelled("model call abandoned: stopping")

    def run(self, call: Callable[[float], Any], timeout: float) -> Any:
        """``call`` on a helper thread, so that :meth:`cancel` frees the caller at once.

        A blocked socket read cannot be interrupted from another thread; the helper is left to
        finish or time out on its own (it is a daemon thread and holds nothing of ours).
        """
        if self._cancelled.is_set():
            raise CallCancelled("model call not started: stopping")
        outcome: list[Any] = []
        done = threading.Event()

        def work() -> None:
            try:
                outcome.append((True, call(timeout)))
            except BaseException as exc:  # handed over to the caller's thread
                outcome.append((False, exc))
            finally:
                done.set()

        token = object()
        with self._lock:
            self._started[token] = time.monotonic()
        try:
            threading.Thread(target=work, name="aclarai-llm-call", daemon=True).start()
            while not done.wait(0.05):
                if self._cancelled.is_set():
                    raise CallCancelled("model call abandoned: stopping")
        finally:
            with self._lock:
                del self._started[token]
        ok, value = outcome[0]
        if ok:
            return value
        raise value


class LLMClient:
    """Calls to one OpenAI-compatible endpoint, any model on it.

    Args:
        settings: the endpoint and its limits.
        api_key: the key's value (the daemon reads it from the environment); ``None`` sends a
            placeholder, which local servers accept.
        usage: counters to add to; a fresh set by default (see :attr:`usage`).
        state_path: a JSON file remembering, per endpoint, the output mode it accepts, its
            context size, whether it gives logprobs and how fast it writes; ``None`` remembers
            them for this client only.
    """

    def __init__(
        self,
        settings: EndpointSettings,
        *,
        api_key: str | None = None,
        usage: UsageCounters | None = None,
        state_path: Path | None = None,
    ) -> None:
        self.settings = settings
        self.usage = usage if usage is not None else UsageCounters()
        self._api_key = api_key or "not-needed"
        self._api_base = settings.api_base or DEFAULT_API_BASE
        self._http = httpx.Client(timeout=settings.timeout_s)
        self._limiter = RateLimiter(settings.requests_per_minute, 60.0)
        self.concurrency = AdaptiveLimit(settings.max_concurrency)
        self.health = EndpointHealth(self._api_base, logger)
        self._memory = EndpointMemory(self._api_base, state_path)
        self._asked_lock = threading.Lock()
        self._in_flight = InFlight()
        self._asked_server = False
        self._llms: dict[str, OpenAILike] = {}
        self._llms_lock = threading.Lock()
        self._embedder: openai.OpenAI | None = None

    @property
    def endpoint(self) -> str:
        """The base URL calls go to (for ``aclarai status``)."""
        return self._api_base

    @property
    def output_mode(self) -> OutputMode:
        """How structured replies are asked for now (see the module docstring)."""
        return self._memory.mode if self.settings.json_mode else "text"

    @property
    def context_tokens(self) -> int | None:
        """The model's context window: configured, else learned from the server, else unknown."""
        return self.settings.context_tokens or self._memory.context_tokens

    @property
    def call_timeout_s(self) -> float:
        """Seconds a call may take (see :func:`call_timeout`)."""
        return call_timeout(self.settings, self._memory.tokens_per_s)

    def prompt_budget_tokens(self) -> int | None:
        """Tokens a prompt may take so that the reply still fits; ``None`` when unlimited."""
        window = self.context_tokens
        if window is None:
            return None
        return max(window - self.settings.max_tokens - 64, window // 4)

    def requests_at_once(self) -> int:
        """How many calls this endpoint is sent at once (``max_concurrency``, capped at the slots a
        llama.cpp server publishes, which is asked here if it was not yet)."""
        self._ask_server_once()
        return self.concurrency.maximum

    def cancel(self) -> None:
        """Abandon calls in flight and refuse new ones (:class:`CallCancelled`): shutting down."""
        self._in_flight.cancel()

    def longest_call_s(self) -> float:
        """How long the oldest call in flight has run; 0.0 when none is (see :class:`InFlight`)."""
        return self._in_flight.longest_s()

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
            InputTooLong: the prompt does not fit the model's context.
            UnparseableOutput: the reply and the repaired reply both failed to validate.
            EvaluationError: the endpoint refused the request.
        """
        return self.complete_json_weighed(model, messages, schema, timeout_s=timeout_s)[0]

    def complete_json_weighed(
        self,
        model: str,
        messages: Sequence[Message],
        schema: type[T],
        *,
        top_logprobs: int = 0,
        timeout_s: float | None = None,
    ) -> tuple[T, tuple[TokenOptions, ...]]:
        """As :meth:`complete_json`, with the reply's tokens and the ``top_logprobs`` options the
        model weighed at each (none when the endpoint does not give them)."""
        with self._counting_failures():
            reply = self._chat(model, messages, schema, timeout_s, top_logprobs)
            try:
                return parse_json_output(reply.text, schema), reply.tokens
            except UnparseableOutput as first:
                logger.info(
                    "model %s gave unusable JSON (%s); asking once for a repair", model, first
                )
                repair = [
                    *messages,
                    Message("assistant", reply.text),
                    Message("user", _REPAIR.format(error=first)),
                ]
                reply = self._chat(model, repair, schema, timeout_s, top_logprobs)
                return parse_json_output(reply.text, schema), reply.tokens

    def complete_text(
        self, model: str, messages: Sequence[Message], *, timeout_s: float | None = None
    ) -> str:
        """The model's reply as plain text (for formats that are not JSON)."""
        with self._counting_failures():
            return self._chat(model, messages, None, timeout_s).text

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
            # An embedding writes no reply: the time to write one is not its to take.
            return self._guarded(call, self.settings.timeout_s)

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
        schema: type[T] | None,
        timeout_s: float | None,
        top_logprobs: int = 0,
    ) -> Reply:
        llm = self._llm(model)
        self._ask_server_once()
        while True:
            mode = self.output_mode if schema is not None else "text"
            sent = list(messages)
            kwargs: dict[str, Any] = {}
            weighed = top_logprobs > 0 and self._memory.takes_logprobs(model)
            if weighed:
                kwargs.update(logprobs=True, top_logprobs=top_logprobs)
            if schema is not None and mode == "json_schema":
                kwargs["response_format"] = json_schema_format(schema)
            else:
                if schema is not None:
                    sent = _with_hint(sent, schema_hint(schema))
                if mode == "json_object" and schema is not None:
                    # llama-cpp-python's server constrains decoding to a schema given here.
                    schema_body = json_schema_format(schema)["json_schema"]["schema"]
                    kwargs["response_format"] = {"type": "json_object", "schema": schema_body}
            try:
                return self._guarded(functools.partial(self._call, llm, sent, kwargs), timeout_s)
            except InputTooLong as exc:
                self._memory.learn_context(exc.context_tokens)
                raise
            except EvaluationError as exc:
                refused_format = mode != "text" and refuses_response_format(exc.__cause__)
                if weighed and not refused_format and refuses_logprobs(exc.__cause__):
                    self._memory.forget_logprobs(model, exc)
                    continue
                if not refused_format:
                    raise
                self._memory.step_down(mode, exc)

    def _call(
        self, llm: OpenAILike, messages: list[Message], kwargs: dict[str, Any], timeout: float
    ) -> Reply:
        # llama-index takes seconds to import: only a process that really calls a model pays it.
        from llama_index.core.base.llms.types import ChatMessage, MessageRole

        chat = [ChatMessage(role=MessageRole(m.role), content=m.content) for m in messages]
        response = llm.chat(chat, timeout=timeout, **kwargs)
        counts = response.additional_kwargs or {}
        self.usage.add(
            prompt_tokens=int(counts.get("prompt_tokens", 0) or 0),
            cached_tokens=_cached_tokens(response.raw),
            completion_tokens=int(counts.get("completion_tokens", 0) or 0),
        )
        self._memory.learn_speed(_writing_speed(response.raw))
        return Reply(response.message.content or "", _token_options(response.raw))

    def _ask_server_once(self) -> None:
        """Read what the server publishes about itself, once: llama.cpp's ``/props`` gives its
        context size (``n_ctx``) and how many requests it serves at once (``total_slots``).
        Other servers answer 404 and are left to the context-length errors and the adaptive
        limit; an unreachable one is asked again on the next call."""
        with self._asked_lock:
            if self._asked_server:
                return
        root = self._api_base.rstrip("/").removesuffix("/v1")
        try:
            reply = self._http.get(f"{root}/props", timeout=min(5.0, self.settings.timeout_s))
            props = reply.json() if reply.status_code == 200 else {}
        except (httpx.HTTPError, ValueError):
            return
        with self._asked_lock:
            self._asked_server = True
        n_ctx, slots = _published(props)
        if n_ctx is not None:
            self._memory.learn_context(n_ctx)
        if slots is not None and slots < self.concurrency.maximum:
            logger.info("endpoint %s serves %d request(s) at once", self._api_base, slots)
            self.concurrency.cap(slots)

    def _guarded(self, call: Callable[[float], Any], timeout_s: float | None) -> Any:
        """Run ``call`` under the rate limit and a concurrency slot, retrying transient errors."""
        timeout = timeout_s if timeout_s is not None else self.call_timeout_s
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
            retry=retry_if_exception_type(EvaluatorUnavailable)
            & retry_if_not_exception_type(CallCancelled),
            sleep=self._in_flight.sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            result = retrying(self._attempt, call, timeout)
        except CallCancelled:
            raise
        except EvaluatorUnavailable as exc:
            if not isinstance(exc, OutOfBudget):  # a judge's short budget: the endpoint may be up
                self.health.failed(exc)
            raise
        self.health.answered()
        return result

    def _attempt(self, call: Callable[[float], Any], timeout: float) -> Any:
        self._limiter.acquire()
        self.concurrency.acquire()
        try:
            self.usage.add(calls=1)
            started = time.monotonic()
            try:
                result = self._in_flight.run(call, timeout)
            except CallCancelled:
                raise
            except Exception as exc:
                # The edge of the foreign stack: whatever it raises, callers see our errors.
                error = translate_error(exc, short_budget=timeout < self.call_timeout_s)
                if overloaded(exc):
                    self.concurrency.overloaded()
                elif not isinstance(error, EvaluatorUnavailable):
                    self.health.answered()
                raise error from exc
            # Quick against ``timeout_s``: the time to write a long reply says nothing of load.
            self.concurrency.finished(time.monotonic() - started, self.settings.timeout_s)
            return result
        finally:
            self.concurrency.release()

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


def _with_hint(messages: list[Message], hint: str) -> list[Message]:
    """``messages`` with ``hint`` closing the system message (one is added if there is none)."""
    for i, message in enumerate(messages):
        if message.role == "system":
            return [
                *messages[:i],
                Message("system", f"{message.content}\n\n{hint}"),
                *messages[i + 1 :],
            ]
    return [Message("system", hint), *messages]


def _cached_tokens(raw: Any) -> int:
    """Prompt tokens served from the server's cache: OpenAI's and vLLM's
    ``usage.prompt_tokens_details.cached_tokens``, else llama.cpp's ``timings.cache_n``."""
    details = getattr(getattr(raw, "usage", None), "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    if isinstance(cached, int):
        return cached
    extra = getattr(raw, "model_extra", None) or {}
    timings = extra.get("timings") if isinstance(extra, dict) else None
    value = timings.get("cache_n") if isinstance(timings, dict) else None
    return value if isinstance(value, int) and value > 0 else 0


def call_timeout(settings: EndpointSettings, tokens_per_s: float | None) -> float:
    """Seconds a call may take: ``timeout_s``, and the time to write ``max_tokens`` at
    ``tokens_per_s`` (the slowest speed the server reported, if it reported one), at most
    :data:`WRITING_TIMEOUTS` ``timeout_s`` more."""
    writing = settings.max_tokens / tokens_per_s if tokens_per_s else 0.0
    return settings.timeout_s + min(writing, WRITING_TIMEOUTS * settings.timeout_s)


def _published(props: Any) -> tuple[int | None, int | None]:
    """The context size and the slots a llama.cpp server's ``/props`` publishes."""
    if not isinstance(props, dict):
        return None, None
    defaults = props.get("default_generation_settings")
    n_ctx = defaults.get("n_ctx") if isinstance(defaults, dict) else None
    slots = props.get("total_slots")
    return (
        n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None,
        slots if isinstance(slots, int) and slots > 0 else None,
    )


def _writing_speed(raw: Any) -> float | None:
    """Tokens a second the server wrote this reply at (llama.cpp's ``timings``), if it said and
    the reply was long enough to tell."""
    extra = getattr(raw, "model_extra", None) or {}
    timings = extra.get("timings") if isinstance(extra, dict) else None
    if not isinstance(timings, dict):
        return None
    written = timings.get("predicted_n")
    speed = timings.get("predicted_per_second")
    if not isinstance(written, int) or written < TIMED_REPLY_TOKENS:
        return None
    return float(speed) if isinstance(speed, int | float) and speed > 0 else None


def _token_options(raw: Any) -> tuple[TokenOptions, ...]:
    """The reply's tokens with their ``top_logprobs``; empty when the server gave none."""
    try:
        content = raw.choices[0].logprobs.content
    except (AttributeError, IndexError, TypeError):
        return ()
    if not content:
        return ()
    return tuple(
        TokenOptions(
            str(entry.token),
            tuple((str(o.token), float(o.logprob)) for o in (entry.top_logprobs or ())),
        )
        for entry in content
    )
