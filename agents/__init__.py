"""Claim extraction and evaluation behind one evaluator interface, offline or LLM-backed."""

from aclarai.agents.answer_eval import (
    AnswerEvalSettings,
    AnswerEvaluation,
    AnswerEvaluator,
    Interaction,
    Judge,
    Judgement,
    Stage,
)
from aclarai.agents.base import (
    VERDICT_LABELS,
    Claim,
    ClaimExtractor,
    EvalItem,
    Evaluator,
    ExtractionInput,
    Score,
    Utterance,
    claim_id,
)
from aclarai.agents.cache import ResultCache, cache_key
from aclarai.agents.embeddings import Embedder, HashingEmbedder, OpenAIEmbedder
from aclarai.agents.judge_specs import JudgeSpec, llm_judges, load_judge_specs, offline_judges
from aclarai.agents.llm import LLMClaimExtractor, LLMEvaluator, RoleModels
from aclarai.agents.llm_client import EndpointSettings, LLMClient
from aclarai.agents.llm_limits import UsageCounters
from aclarai.agents.llm_schemas import UnparseableOutput
from aclarai.agents.nli_qa import NLIQAPipeline, PairScore, QAItem, QAResult, split_statements
from aclarai.agents.offline import OfflineEvaluator
from aclarai.agents.offline_extractor import OfflineClaimExtractor
from aclarai.agents.prompts import PromptLibrary, delimit
from aclarai.agents.pronouns import LLMPronounResolver, RuleBasedPronounResolver, replace_pronouns
from aclarai.agents.refusal import is_refusal, is_refusal_sentence
from aclarai.agents.tools import Tool, ToolFactory, build_tool_factory
from aclarai.agents.validation import (
    VERDICT_ORDER,
    AnswerAgreement,
    ClaimAgreement,
    answer_agreement,
    claim_agreement,
)
from aclarai.agents.vector_index import SearchHit, VectorIndex
from aclarai.agents.verify import (
    EvaluatorVerifier,
    LLMVerifier,
    Verdict,
    Verifier,
    parse_verdict,
    verify_claims,
)

__all__ = [
    "VERDICT_LABELS",
    "VERDICT_ORDER",
    "AnswerAgreement",
    "AnswerEvalSettings",
    "AnswerEvaluation",
    "AnswerEvaluator",
    "Claim",
    "ClaimAgreement",
    "ClaimExtractor",
    "Embedder",
    "EndpointSettings",
    "EvalItem",
    "Evaluator",
    "EvaluatorVerifier",
    "ExtractionInput",
    "HashingEmbedder",
    "Interaction",
    "Judge",
    "JudgeSpec",
    "Judgement",
    "LLMClaimExtractor",
    "LLMClient",
    "LLMEvaluator",
    "LLMPronounResolver",
    "LLMVerifier",
    "NLIQAPipeline",
    "OfflineClaimExtractor",
    "OfflineEvaluator",
    "OpenAIEmbedder",
    "PairScore",
    "PromptLibrary",
    "QAItem",
    "QAResult",
    "ResultCache",
    "RoleModels",
    "RuleBasedPronounResolver",
    "Score",
    "SearchHit",
    "Stage",
    "Tool",
    "ToolFactory",
    "UnparseableOutput",
    "UsageCounters",
    "Utterance",
    "VectorIndex",
    "Verdict",
    "Verifier",
    "answer_agreement",
    "build_tool_factory",
    "cache_key",
    "claim_agreement",
    "claim_id",
    "delimit",
    "is_refusal",
    "is_refusal_sentence",
    "llm_judges",
    "load_judge_specs",
    "offline_judges",
    "parse_verdict",
    "replace_pronouns",
    "split_statements",
    "verify_claims",
]
