"""A scripted OpenAI-compatible HTTP server for the LLM-path tests.

Real HTTP on a loopback port, so requests go through the whole client stack (llama-index, openai,
httpx). Each test queues the replies it wants for ``/v1/chat/completions``: good JSON, free text,
fenced JSON, error statuses with headers, slow replies. When the queue is empty a ``responder``
callable (if set) answers from the request; otherwise the server answers 418, which the client
treats as a refused request, so an unplanned call shows up as a failed test. ``/v1/embeddings``
answers deterministic bag-of-words vectors.

It can also behave like the real servers do before any scripted reply is consulted: accept only
some ``response_format`` types (:attr:`ScriptedLLMServer.formats`, refused with a 400 that says
so), refuse prompts over a context size with the 400 that llama.cpp or OpenAI sends
(:attr:`~ScriptedLLMServer.context_tokens`, :attr:`~ScriptedLLMServer.context_error`), serve one
request at a time like a single-slot server (:attr:`~ScriptedLLMServer.slots`), give each reply
token's ``top_logprobs`` in OpenAI's shape or refuse ``logprobs`` with a 400
(:attr:`~ScriptedLLMServer.logprobs`), report the prompt tokens its prompt cache served as OpenAI
or llama.cpp does (:attr:`~ScriptedLLMServer.cache_report`), say how fast it wrote a reply as
llama.cpp does (:attr:`~ScriptedLLMServer.tokens_per_s`), and go away and come back on the same
port (:meth:`~ScriptedLLMServer.go_down`, :meth:`~ScriptedLLMServer.come_back`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

EMBEDDING_DIM = 32
TokenOptions = tuple[str, tuple[tuple[str, float], ...]]
"""A reply token and the (token, logprob) options the model weighed there, its own first."""


@dataclass(frozen=True)
class Reply:
    """One scripted answer to a chat completion."""

    content: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw_body: str | None = None
    """Send this body verbatim instead of a chat completion."""
    tokens: tuple[TokenOptions, ...] | None = None
    """The reply's tokens with their options, given where :attr:`ScriptedLLMServer.logprobs`
    says so; ``None``: the content cut into tokens, each digit one, each sure of itself."""


def text(content: str) -> Reply:
    return Reply(content=content)


def json_reply(obj: Any) -> Reply:
    return Reply(content=json.dumps(obj))


def status(code: int, headers: dict[str, str] | None = None, message: str = "scripted") -> Reply:
    body = json.dumps({"error": {"message": message, "type": "scripted", "code": code}})
    return Reply(status=code, headers=headers or {}, raw_body=body)


def slow(delay_s: float, content: str = "{}") -> Reply:
    return Reply(content=content, delay_s=delay_s)


@dataclass(frozen=True)
class Recorded:
    path: str
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, str]]:
        return list(self.body.get("messages", []))

    @property
    def user_text(self) -> str:
        return "\n".join(m["content"] for m in self.messages if m["role"] == "user")

    @property
    def system_text(self) -> str:
        return "\n".join(m["content"] for m in self.messages if m["role"] == "system")


def llama_cpp_context_error(n_prompt_tokens: int, n_ctx: int) -> dict[str, Any]:
    """The 400 body llama.cpp's server sends for a prompt over its context size."""
    return {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": n_prompt_tokens,
            "n_ctx": n_ctx,
        }
    }


def llama_cpp_python_format_error(kind: str, allowed: str) -> dict[str, Any]:
    """The 500 body llama-cpp-python's server (0.3.x) sends for a ``response_format`` type it
    does not know: its request validation error, reported as an internal error."""
    detail = (
        "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
        f"'type'), 'msg': \"Input should be {allowed}\", 'input': '{kind}'}}\n\n  File "
        '"llama_cpp/server/app.py", line 376, in create_chat_completion\n    POST '
        "/v1/chat/completions"
    )
    return {
        "error": {
            "message": detail,
            "type": "internal_server_error",
            "param": None,
            "code": None,
        }
    }


def openai_context_error(n_prompt_tokens: int, n_ctx: int) -> dict[str, Any]:
    """The 400 body OpenAI sends for messages over the model's context length."""
    return {
        "error": {
            "message": f"This model's maximum context length is {n_ctx} tokens. However, your "
            f"messages resulted in {n_prompt_tokens} tokens. Please reduce the length of the "
            "messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def prompt_tokens(body: dict[str, Any]) -> int:
    """The server's token count of a request: four characters a token."""
    return sum(len(m.get("content") or "") for m in body.get("messages", [])) // 4


def openai_logprobs_refusal() -> dict[str, Any]:
    """The 400 body OpenAI sends a model that gives no logprobs (its reasoning models)."""
    return {
        "error": {
            "message": "Unsupported parameter: 'logprobs' is not supported with this model.",
            "type": "invalid_request_error",
            "param": "logprobs",
            "code": "unsupported_parameter",
        }
    }


def _prompt_text(body: dict[str, Any]) -> str:
    return "".join(f"<{m.get('role')}>{m.get('content') or ''}" for m in body.get("messages", []))


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def cut_into_tokens(content: str) -> tuple[TokenOptions, ...]:
    """``content`` as a model's tokens: each digit one token, each sure of itself."""
    pieces = re.findall(r"\d|\s*[^\d\s]+|\s+", content)
    return tuple((piece, ((piece, 0.0),)) for piece in pieces)


class ScriptedLLMServer:
    """Start with :func:`scripted_llm_server`; queue replies; inspect :attr:`requests`."""

    def __init__(self) -> None:
        self._replies: deque[Reply] = deque()
        self.responder: Callable[[Recorded], Reply] | None = None
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.formats: frozenset[str] | None = None
        """``response_format`` types accepted; ``None`` accepts every one."""
        self.format_refusal: Literal["400", "llama-cpp-python"] = "400"
        """How another type is refused: a 400 naming the field, or the HTTP 500 with a pydantic
        validation error that llama-cpp-python's server sends."""
        self.context_tokens: int | None = None
        """Prompts over this many tokens (see :func:`prompt_tokens`) are refused."""
        self.context_error: Literal["llama.cpp", "openai"] = "llama.cpp"
        self.slots: int | None = None
        """Requests served at once; the others wait their turn, as on a llama.cpp server."""
        self.props: dict[str, Any] | None = None
        """What ``GET /props`` answers (llama.cpp publishes its context size and slots there);
        ``None``: 404, as other servers answer."""
        self.logprobs: Literal["ignore", "give", "refuse"] = "ignore"
        """What a request asking for ``logprobs`` gets: nothing more (as Ollama), each reply
        token's ``top_logprobs`` (OpenAI, vLLM, llama.cpp), or OpenAI's 400 for a model that
        gives none."""
        self.cache_report: Literal["openai", "llama.cpp"] | None = None
        """How a reply says how many prompt tokens the prompt cache served (the longest prefix
        shared with an earlier request): ``usage.prompt_tokens_details.cached_tokens`` or
        llama.cpp's ``timings.cache_n``; ``None`` says nothing."""
        self.tokens_per_s: float | None = None
        """The writing speed each reply reports in llama.cpp's ``timings`` (with the reply's
        ``predicted_n``); ``None`` says nothing."""
        self._slot_lock: threading.Semaphore | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._down = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._address = self._httpd.server_address[:2]
        self._thread = self._serving_thread()

    @property
    def base_url(self) -> str:
        host, port = self._address
        return f"http://{host!s}:{port}/v1"

    def go_down(self) -> None:
        """Stop listening and drop open connections: calls fail until :meth:`come_back`."""
        self._down.set()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def come_back(self) -> None:
        """Listen again on the same port."""
        self._down.clear()
        self._httpd = ThreadingHTTPServer(self._address, self._handler_class())
        self._thread = self._serving_thread()
        self._thread.start()

    def _serving_thread(self) -> threading.Thread:
        return threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def _refusal(self, body: dict[str, Any]) -> Reply | None:
        """What a real server would refuse before generating anything."""
        if body.get("logprobs") and self.logprobs == "refuse":
            return Reply(status=400, raw_body=json.dumps(openai_logprobs_refusal()))
        kind = (body.get("response_format") or {}).get("type")
        if kind is not None and self.formats is not None and kind not in self.formats:
            allowed = " or ".join(f"'{f}'" for f in sorted(self.formats))
            if self.format_refusal == "llama-cpp-python":
                return Reply(
                    status=500, raw_body=json.dumps(llama_cpp_python_format_error(kind, allowed))
                )
            message = f"'response_format.type' must be {allowed}, got '{kind}'"
            return status(400, message=message)
        tokens = prompt_tokens(body)
        if self.context_tokens is not None and tokens > self.context_tokens:
            make = (
                llama_cpp_context_error
                if self.context_error == "llama.cpp"
                else (openai_context_error)
            )
            return Reply(status=400, raw_body=json.dumps(make(tokens, self.context_tokens)))
        return None

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def cached_tokens(self, request: Recorded) -> int:
        """The prompt tokens of ``request`` an ideal prompt cache holds: the longest prefix it
        shares with a request before it, four characters a token."""
        prompt = _prompt_text(request.body)
        with self._lock:
            earlier = [
                _prompt_text(r.body)
                for r in self.requests[: self.requests.index(request)]
                if r.path.endswith("/chat/completions")
            ]
        return max((_common_prefix(prompt, e) for e in earlier), default=0) // 4

    def _next_reply(self, request: Recorded) -> Reply:
        refused = self._refusal(request.body)
        if refused is not None:
            return refused
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        if self.responder is not None:
            return self.responder(request)
        return status(418, message="no scripted reply left")

    @contextmanager
    def _slot(self) -> Iterator[None]:
        with self._lock:
            if self.slots is not None and self._slot_lock is None:
                self._slot_lock = threading.Semaphore(self.slots)
            slot = self._slot_lock
        if slot is None:
            yield
            return
        with slot:
            yield

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Replies go out at once, as a real server's: http.server writes headers and body
            # apart, which otherwise meet the client's delayed ACK (some 40 ms a call).
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server._connections.add(self.connection)

            def finish(self) -> None:
                with server._lock:
                    server._connections.discard(self.connection)
                with contextlib.suppress(OSError):
                    super().finish()

            def do_GET(self) -> None:
                if self.path == "/props" and server.props is not None:
                    self._send(200, {}, json.dumps(server.props))
                else:
                    self._send(404, {}, json.dumps({"error": {"message": "no such path"}}))

            def do_POST(self) -> None:
                if server._down.is_set():
                    self.close_connection = True  # a server that is gone answers nothing
                    return
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    body = {}
                recorded = Recorded(self.path, body)
                with server._lock:
                    server.requests.append(recorded)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    if self.path.endswith("/embeddings"):
                        self._send(200, {}, json.dumps(_embeddings(body)))
                    elif self.path.endswith("/chat/completions"):
                        with server._slot():
                            self._answer(server._next_reply(recorded), recorded)
                    else:
                        self._send(404, {}, json.dumps({"error": {"message": "no such path"}}))
                except OSError:
                    pass  # the client gave up (timeout test) and closed the socket
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _answer(self, reply: Reply, request: Recorded) -> None:
                if reply.delay_s and server._stopping.wait(reply.delay_s):
                    return
                if reply.raw_body is not None:
                    self._send(reply.status, reply.headers, reply.raw_body)
                    return
                completion = _completion(reply, request.body)
                if server.logprobs == "give" and request.body.get("logprobs"):
                    top = int(request.body.get("top_logprobs") or 0)
                    completion["choices"][0]["logprobs"] = _logprobs(reply, top)
                # Only when reported: it compares the prompt with every earlier one.
                cached = server.cached_tokens(request) if server.cache_report else 0
                if server.cache_report == "openai":
                    completion["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
                elif server.cache_report == "llama.cpp":
                    prompt_n = completion["usage"]["prompt_tokens"] - cached
                    completion["timings"] = {"cache_n": cached, "prompt_n": prompt_n}
                if server.tokens_per_s is not None:
                    completion.setdefault("timings", {}).update(
                        predicted_n=completion["usage"]["completion_tokens"],
                        predicted_per_second=server.tokens_per_s,
                    )
                self._send(reply.status, reply.headers, json.dumps(completion))

            def _send(self, code: int, headers: dict[str, str], payload: str) -> None:
                data = payload.encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _completion(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    prompt_chars = sum(len(m.get("content") or "") for m in body.get("messages", []))
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_chars // 4,
            "completion_tokens": len(reply.content) // 4,
            "total_tokens": prompt_chars // 4 + len(reply.content) // 4,
        },
    }


def _logprobs(reply: Reply, top: int) -> dict[str, Any]:
    """``choices[0].logprobs`` as OpenAI gives it, ``top`` options a token."""
    tokens = reply.tokens if reply.tokens is not None else cut_into_tokens(reply.content)
    assert "".join(token for token, _ in tokens) == reply.content, "tokens spell the reply"
    content = []
    for token, options in tokens:
        own = dict(options).get(token, 0.0)
        content.append(
            {
                "token": token,
                "logprob": own,
                "bytes": list(token.encode()),
                "top_logprobs": [
                    {"token": t, "logprob": lp, "bytes": list(t.encode())}
                    for t, lp in options[:top]
                ],
            }
        )
    return {"content": content, "refusal": None}


def _embeddings(body: dict[str, Any]) -> dict[str, Any]:
    inputs = body.get("input", [])
    texts = [inputs] if isinstance(inputs, str) else list(inputs)
    data = [
        {"object": "embedding", "index": i, "embedding": embed_words(text)}
        for i, text in enumerate(texts)
    ]
    tokens = sum(len(t.split()) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "scripted"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def embed_words(text: str) -> list[float]:
    """A deterministic bag-of-words vector: texts sharing words point the same way."""
    vector = [0.0] * EMBEDDING_DIM
    for word in re.findall(r"\w+", text.lower()):
        bucket = int(hashlib.sha256(word.encode()).hexdigest(), 16) % EMBEDDING_DIM
        vector[bucket] += 1.0
    return vector


@contextmanager
def scripted_llm_server() -> Iterator[ScriptedLLMServer]:
    server = ScriptedLLMServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


CLAIMS_SECTION = re.compile(r'<untrusted kind="claims">\n(.*?)\n</untrusted>', re.DOTALL)
CLAIM_LINE = re.compile(r"^(c\d+): (.*)$", re.MULTILINE)


def graded_claims(request: Recorded) -> dict[str, str]:
    """The claims a grading prompt asks about, by id, in order."""
    section = CLAIMS_SECTION.search(request.user_text)
    return dict(CLAIM_LINE.findall(section.group(1))) if section else {}


def claim_ids(request: Recorded) -> list[str]:
    """The claim ids a grading prompt asks about, in order."""
    return list(graded_claims(request))


def grades_reply(
    grades: Mapping[str, int], weighed: Mapping[str, Mapping[int, float]] | None = None
) -> Reply:
    """``{"c1": 5, "c2": 4}`` as a model writes it, one token a grade; where ``weighed`` gives a
    key's probabilities of the grades, they are that token's options."""
    pieces: list[TokenOptions] = [("{", (("{", 0.0),))]
    for n, (key, grade) in enumerate(grades.items()):
        for piece in (', "' if n else '"', *re.findall(r"\d|\D+", key), '":', " "):
            pieces.append((piece, ((piece, 0.0),)))
        chances = (weighed or {}).get(key, {grade: 1.0})
        options = sorted(
            ((str(g), math.log(p)) for g, p in chances.items() if p > 0),
            key=lambda option: -option[1],
        )
        pieces.append((str(grade), tuple(options)))
    pieces.append(("}", (("}", 0.0),)))
    return Reply(content="".join(p for p, _ in pieces), tokens=tuple(pieces))


def grades_responder(
    grade: int = 5,
    *,
    skip: frozenset[str] = frozenset(),
    weighed: Mapping[int, float] | None = None,
) -> Callable[[Recorded], Reply]:
    """Answers a grading call with ``grade`` for each claim id asked (except ``skip``); with
    ``weighed``, those are the probabilities the model gave each grade there."""

    def respond(request: Recorded) -> Reply:
        ids = [cid for cid in claim_ids(request) if cid not in skip]
        grades = dict.fromkeys(ids, grade)
        return grades_reply(grades, dict.fromkeys(ids, weighed) if weighed else None)

    return respond
