"""The model-backed side: the OpenAI-compatible client (structured output, limits, usage),
its prompt library and the LLM claim extractor and evaluator."""

from aclarai.agents.llm.agents import (
    LLMClaimExtractor,
    LLMEvaluator,
    RoleModels,
)
from aclarai.agents.llm.client import EndpointSettings, LLMClient
from aclarai.agents.llm.limits import UsageCounters
from aclarai.agents.llm.prompts import PromptLibrary, delimit
from aclarai.agents.llm.schemas import UnparseableOutput

__all__ = [
    "EndpointSettings",
    "LLMClaimExtractor",
    "LLMClient",
    "LLMEvaluator",
    "PromptLibrary",
    "RoleModels",
    "UnparseableOutput",
    "UsageCounters",
    "delimit",
]
