"""The evaluation service's I/O: the HTTP API, the Redis Stream worker, batch evaluation of
JSON lines and the MCP server, all over one :class:`ServiceCore`."""

from aclarai.daemon.service.core import (
    EvaluateRequest,
    EvaluateResponse,
    ServiceCore,
    assemble_core,
    parse_evaluate_payload,
)

__all__ = [
    "EvaluateRequest",
    "EvaluateResponse",
    "ServiceCore",
    "assemble_core",
    "parse_evaluate_payload",
]
