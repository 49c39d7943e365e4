"""The evaluation service: the HTTP API (:mod:`.api`), the Redis Stream consumer
(:mod:`.consume`), the MCP server (:mod:`.mcp`), and ``aclarai evaluate`` and ``aclarai
validate`` over JSON lines (:mod:`.batch_eval`, :mod:`.answer_batch`, :mod:`.validate`, one
reader in :mod:`.jsonl`), all over one :class:`ServiceCore` (:mod:`.core`)."""

from aclarai.daemon.service.core import (
    EvaluateRequest,
    EvaluateResponse,
    ServiceCore,
    assemble_core,
    build_service_core,
    parse_evaluate_payload,
)

__all__ = [
    "EvaluateRequest",
    "EvaluateResponse",
    "ServiceCore",
    "assemble_core",
    "build_service_core",
    "parse_evaluate_payload",
]
