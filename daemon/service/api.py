"""The HTTP API of the evaluation service (``aclarai serve``).

Routes, all JSON: ``GET /api/v1/health``, ``POST /api/v1/evaluate`` (verdict on an agent's answer),
``POST /api/v1/nli`` (the NLI QA pipeline), ``POST /api/v1/verify`` (``verify_claims``), and over
the vault the service was started with: ``GET /api/v1/search`` (its graded blocks that answer a
query, as ``aclarai search --json``) and ``POST /api/v1/check`` (is an answer consistent with it,
as ``aclarai check --json``). The OpenAPI schema is at ``/openapi.json``. Bad input is always a
4xx naming the field: 400 for a body that is not JSON, 413 for a body over
``service.max_body_bytes`` (counted before anything parses it), 415 for a body declared as
something other than JSON, 422 for missing fields, wrong types, a blank query, question or answer
and a ``limit`` out of 1..100, 401 without the bearer token when one is configured. A service
started without a vault answers the two vault routes 409 (the request conflicts with how the
service runs: nothing to search), ``{"detail": "no vault: ..."}``.
The handlers are plain functions, so FastAPI runs the blocking core (and the vault's search,
which is thread-safe) in its worker threads.

Exposure: with a token (``service.token_env``) every route but health needs it, the schema and
the docs pages (``/openapi.json``, ``/docs``, ``/redoc``) included; the scheme name is
case-insensitive (``bearer`` works). Without one, :func:`serve` binds a loopback address with a
one-line warning, and refuses any other address unless told ``allow_no_token``
(``aclarai serve --insecure-no-token``).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, Literal

import uvicorn
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, create_model

from aclarai.daemon.config import Config
from aclarai.daemon.search.engine import MAX_LIMIT, SearchFilter
from aclarai.daemon.search.query import MAX_QUERY_CHARS
from aclarai.daemon.search.session import VaultSearch
from aclarai.daemon.service.check import MAX_TEXT_CHARS, check_answer
from aclarai.daemon.service.core import (
    MODEL_RETRY_AFTER_S,
    EvaluateRequest,
    EvaluateResponse,
    NLIRequest,
    NLIResponse,
    NonBlank,
    ServiceCore,
    StageOut,
    VerifyRequest,
    VerifyResponse,
    build_service_core,
)
from aclarai.parsers import SCORE_NAMES, ConfigError, TransientError

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_JSON_TYPE = (b"content-type", b"application/json")

MAX_HEAD_BYTES = 256 * 1024
"""About the largest request line and headers uvicorn buffers (its own default is 16 KiB): room
for a long ``GET /api/v1/search?q=`` (the search reads the query's first ``MAX_QUERY_CHARS``
characters); uvicorn refuses a head it cannot fit with 400 before the app sees it."""

_NOT_BLANK = r"[^\s\x1c-\x1f]"
"""The pattern of :data:`NonBlank`: a text that fails it is reported as blank."""

NO_VAULT = "no vault: start the service with --vault or set vault.path"
NO_VAULT_STATUS = 409


class ErrorOut(BaseModel):
    detail: str
    """What was wrong, naming the field (``interaction.answer: Field required``)."""


class HealthOut(BaseModel):
    status: str
    version: str


_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut, "description": text}
    for code, text in (
        (400, "The body is not valid JSON."),
        (401, "Missing or wrong bearer token."),
        (413, "The body exceeds the configured size limit."),
        (415, "The body is declared as something other than JSON."),
        (422, "A field is missing or has the wrong type."),
        (503, "The evaluator is unavailable right now; retry later."),
    )
}
_VAULT_ERRORS: dict[int | str, dict[str, Any]] = {
    **_ERRORS,
    NO_VAULT_STATUS: {
        "model": ErrorOut,
        "description": "The service was started without a vault (`--vault`, `vault.path`).",
    },
}
_SEARCH_ERRORS: dict[int | str, dict[str, Any]] = {
    code: _VAULT_ERRORS[code] for code in (400, 401, NO_VAULT_STATUS, 413, 422)
}


def _scores() -> dict[str, Any]:
    # Read from SCORE_NAMES: the list of scores is written out in one place only.
    return {
        name: (float | None, Field(None, description="0..1; null: failed.")) for name in SCORE_NAMES
    }


_OUT = ConfigDict(frozen=True)

ClaimOut: Any = create_model(
    "ClaimOut",
    __config__=_OUT,
    claim=(str, ...),
    **_scores(),
    quality=(float | None, Field(None, description="Geometric mean of the scores.")),
    status=(str | None, Field(None, description="``ok``, why a score is null, or null.")),
)
HitOut: Any = create_model(
    "HitOut",
    __config__=_OUT,
    file=(str, Field(description="The note, relative to the vault.")),
    block_id=(str, Field(description="The id a link names (``^anchor``).")),
    link=(str, Field(description="``[[note#^block-id]]``, a link that jumps to the block.")),
    claim=(str | None, Field(description="Of its claims, the one closest to the query.")),
    **_scores(),
    quality=(float | None, ...),
    score=(float, Field(description="Relevance to the query, 0..1.")),
    text=(str, Field(description="The block as a reader sees it.")),
    about=(str, Field(description="The note's title, aliases and headings.")),
    claims=(list[ClaimOut], ...),
)


class SearchOut(BaseModel):
    model_config = _OUT

    hits: list[HitOut]
    """Best first, as ``aclarai search --json`` prints them."""
    blocks: int
    """Blocks in the index."""
    unembedded: int
    """Blocks without a vector yet: found by their words only."""
    note: str
    """Why the result is empty, for a person; empty otherwise."""


class CheckIn(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    question: Annotated[NonBlank, Field(max_length=MAX_TEXT_CHARS)]
    answer: Annotated[NonBlank, Field(max_length=MAX_TEXT_CHARS)]


class CitedClaimOut(BaseModel):
    model_config = _OUT

    claim: str
    quality: float | None


class CitationOut(BaseModel):
    model_config = _OUT

    file: str
    block_id: str
    link: str
    text: str
    score: float
    claims: list[CitedClaimOut]


class CheckOut(BaseModel):
    model_config = _OUT

    verdict: Literal["pass", "review", "fail", "no_evidence"]
    """``no_evidence``: no block is relevant enough to judge the answer by."""
    confidence: float | None
    reason: str
    citations: list[CitationOut]
    """The blocks the answer was judged against."""
    stages: list[StageOut]
    """The evaluation's stages, as ``/api/v1/evaluate`` gives them; empty for ``no_evidence``."""


def create_app(config: Config, core: ServiceCore, vault: VaultSearch | None = None) -> FastAPI:
    """The FastAPI application over ``core``.

    Args:
        config: its ``service`` section gives the body limit and the token's variable name.
        core: the evaluation objects; the caller closes it.
        vault: the vault ``/api/v1/search`` and ``/api/v1/check`` work on; the caller closes it.
            Without one, both answer 409 with ``{"detail": NO_VAULT}``.

    Raises:
        ConfigError: ``service.token_env`` names a variable that is not set.
    """
    token = _token(config)
    # With a token, FastAPI's own open schema and docs routes are replaced by guarded ones.
    app = FastAPI(
        title="aclarai evaluation service",
        version=version("aclarai"),
        description="Verdicts on AI agents' answers, NLI QA checks and claim verification.",
        openapi_url=None if token else "/openapi.json",
        docs_url=None if token else "/docs",
        redoc_url=None if token else "/redoc",
    )
    app.add_middleware(JsonBodyGuard, max_bytes=config.service.max_body_bytes)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(TransientError, _unavailable)
    guard = [Depends(_bearer_guard(token))] if token else []
    if guard:
        _add_guarded_docs(app, guard)

    @app.get("/api/v1/health", response_model=HealthOut)
    def health() -> HealthOut:
        return HealthOut(status="ok", version=version("aclarai"))

    @app.post(
        "/api/v1/evaluate", response_model=EvaluateResponse, responses=_ERRORS, dependencies=guard
    )
    def evaluate(request: EvaluateRequest) -> EvaluateResponse:
        return core.evaluate(request)

    @app.post("/api/v1/nli", response_model=NLIResponse, responses=_ERRORS, dependencies=guard)
    def nli(request: NLIRequest) -> NLIResponse:
        return core.check_qa(request)

    @app.post(
        "/api/v1/verify", response_model=VerifyResponse, responses=_ERRORS, dependencies=guard
    )
    def verify(request: VerifyRequest) -> VerifyResponse:
        return core.verify(request)

    def opened() -> VaultSearch:
        if vault is None:
            raise HTTPException(status_code=NO_VAULT_STATUS, detail=NO_VAULT)
        return vault

    @app.get(
        "/api/v1/search", response_model=SearchOut, responses=_SEARCH_ERRORS, dependencies=guard
    )
    def search(
        q: Annotated[
            NonBlank,
            Query(description=f"What to look for; its first {MAX_QUERY_CHARS} characters count."),
        ],
        limit: Annotated[
            int | None, Query(ge=1, le=MAX_LIMIT, description="At most this many hits.")
        ] = None,
        min_quality: Annotated[
            float | None, Query(ge=0, le=1, description="Only claims of this quality or more.")
        ] = None,
        include_null: Annotated[
            bool, Query(description="Keep failed (null) grades under min_quality.")
        ] = False,
        scope: Annotated[str, Query(alias="in", description="Only this note or folder.")] = "",
    ) -> dict[str, Any]:
        where = SearchFilter(min_quality, include_null or None, scope)
        result = opened().search(q, limit=limit, where=where)
        return {
            "hits": [hit.as_dict() for hit in result.hits],
            "blocks": result.blocks,
            "unembedded": result.unembedded,
            "note": result.note,
        }

    @app.post("/api/v1/check", response_model=CheckOut, responses=_VAULT_ERRORS, dependencies=guard)
    def check(request: CheckIn) -> dict[str, Any]:
        return check_answer(opened(), core, request.question, request.answer).as_dict()

    return app


def _add_guarded_docs(app: FastAPI, guard: list[Any]) -> None:
    title = app.title

    @app.get("/openapi.json", include_in_schema=False, dependencies=guard)
    def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=guard)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title=title)

    @app.get("/redoc", include_in_schema=False, dependencies=guard)
    def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url="/openapi.json", title=title)


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the service on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(config: Config, host: str, *, allow_no_token: bool = False) -> None:
    """Refuse to serve without a token beyond loopback unless ``allow_no_token``; warn when
    serving without one at all.

    Raises:
        ConfigError: no ``service.token_env`` and ``host`` is not a loopback address.
    """
    if config.service.token_env:
        return
    if is_loopback(host):
        logger.warning("no token (service.token_env): any process on this machine can call the API")
        return
    if not allow_no_token:
        raise ConfigError(
            f"refusing to serve on {host} without a token: anyone who can reach it could call "
            "the API. Set service.token_env, bind 127.0.0.1, or pass --insecure-no-token",
            key="service.token_env",
        )
    logger.warning("serving on %s without a token: anyone who can reach it can call the API", host)


def build_server(app: FastAPI, host: str, port: int) -> uvicorn.Server:
    """A uvicorn server for ``app`` that leaves logging to the caller (the CLI)."""
    return uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_config=None,
            access_log=False,
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        )
    )


def serve(
    config: Config,
    host: str | None = None,
    port: int | None = None,
    *,
    core: ServiceCore | None = None,
    allow_no_token: bool = False,
) -> None:
    """Serve the API until SIGTERM or SIGINT.

    Args:
        config: the configuration; ``service.host`` and ``service.port`` unless overridden.
        host: the address to bind (default ``service.host``, 127.0.0.1).
        port: the port (default ``service.port``, 18081).
        core: the evaluation objects; built from ``config`` when ``None``.
        allow_no_token: serve a non-loopback address without a token (see the module doc).

    The vault of ``/api/v1/search`` and ``/api/v1/check`` is ``vault.path`` (``aclarai serve
    --vault`` sets it), opened once and closed on shutdown; with none, those routes answer 409.

    Raises:
        ConfigError: no token for a non-loopback address, or its variable is not set.
        AclaraiError: ``vault.path`` names a vault that was never synced (no state yet).
    """
    bind_host = host or config.service.host
    bind_port = config.service.port if port is None else port
    check_exposure(config, bind_host, allow_no_token=allow_no_token)
    vault = VaultSearch(config, Path(config.vault.path).expanduser()) if config.vault.path else None
    own = core is None
    try:
        core = core or build_service_core(config)
        try:
            app = create_app(config, core, vault)
            if vault is not None:
                logger.info("searching the vault %s", vault.vault_root)
            logger.info("serving the evaluation API on http://%s:%d", bind_host, bind_port)
            with _absorb_sigterm():
                build_server(app, bind_host, bind_port).run()
        finally:
            if own:
                core.close()
    finally:
        if vault is not None:
            vault.close()


@contextmanager
def _absorb_sigterm() -> Iterator[None]:
    """Let ``serve`` return after a SIGTERM shutdown instead of dying of the signal.

    uvicorn shuts down gracefully on SIGTERM, then raises the signal again once its own handler
    is gone; a handler of ours receives it, so the core is closed and the CLI exits with 0.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class JsonBodyGuard:
    """ASGI middleware: check a request body's size and type before the app reads it.

    A body over ``max_bytes`` is refused with 413: the declared ``Content-Length`` is checked
    first, and a chunked body is counted as it arrives. A body declared as anything but JSON is
    refused with 415; one with no ``Content-Type`` is read as JSON. The accepted body is then
    replayed to the app.
    """

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                await _send_error(send, 400, "content-length: not a number")
                return
            if int(declared) > self.max_bytes:
                await _send_error(send, 413, self._too_large(int(declared)))
                return
        if scope["method"] in ("POST", "PUT", "PATCH"):
            kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if not kind:
                scope = {**scope, "headers": [*scope["headers"], _JSON_TYPE]}
            elif kind != b"application/json" and not kind.endswith(b"+json"):
                detail = f"content-type: expected application/json, got {kind.decode('latin-1')}"
                await _send_error(send, 415, detail)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _send_error(send, 413, self._too_large(size))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def _too_large(self, size: int) -> str:
        return f"body: {size} bytes or more, over the limit of {self.max_bytes} bytes"


async def _send_error(send: Send, status: int, detail: str) -> None:
    response = JSONResponse({"detail": detail}, status_code=status)
    body = response.body
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _token(config: Config) -> str | None:
    name = config.service.token_env
    if not name:
        return None
    token = config.secret(name)
    if not token:
        raise ConfigError(
            f"service.token_env names {name}, but that variable is not set",
            key="service.token_env",
        )
    return token


def _bearer_guard(token: str) -> Callable[..., None]:
    scheme = HTTPBearer(auto_error=False, description="The token named by service.token_env.")

    def guard(credentials: HTTPAuthorizationCredentials | None = Depends(scheme)) -> None:  # noqa: B008
        given = credentials.credentials if credentials else ""
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise HTTPException(
                status_code=401,
                detail="authorization: missing or wrong bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )

    return guard


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        first = next(e for e in errors if e.get("type") == "json_invalid")
        where = first.get("ctx", {}).get("error", "malformed")
        return JSONResponse({"detail": f"body: invalid JSON ({where})"}, status_code=400)
    parts = []
    for error in errors[:5]:
        loc = [str(p) for p in error.get("loc", ())]
        if loc and loc[0] == "body":
            loc = loc[1:]
        message = error.get("msg", "invalid")
        if error.get("type") == "string_pattern_mismatch" and (
            error.get("ctx", {}).get("pattern") == _NOT_BLANK
        ):
            message = "must not be blank"
        parts.append(f"{'.'.join(loc) or 'body'}: {message}")
    return JSONResponse({"detail": "; ".join(parts)}, status_code=422)


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    logger.warning("evaluation unavailable for %s: %s", request.url.path, exc)
    retry_after = getattr(exc, "retry_after", None) or MODEL_RETRY_AFTER_S
    headers = {"Retry-After": str(max(1, round(retry_after)))}
    return JSONResponse({"detail": f"evaluator unavailable: {exc}"}, 503, headers=headers)
