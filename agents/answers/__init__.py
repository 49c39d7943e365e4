"""Answer grading for the evaluation service: the staged evaluator, its judges (built in
and from YAML), the statement-level NLI pipeline, refusal flags and pronoun resolution."""

from aclarai.agents.answers.evaluator import (
    AnswerEvalSettings,
    AnswerEvaluation,
    AnswerEvaluator,
    AnswerVerdict,
    Interaction,
    Judge,
    Judgement,
    Stage,
)
from aclarai.agents.answers.judge_specs import (
    JudgeSpec,
    llm_judges,
    load_judge_specs,
    offline_judges,
)
from aclarai.agents.answers.nli_qa import (
    NLIQAPipeline,
    PairScore,
    QAItem,
    QAResult,
    split_statements,
)
from aclarai.agents.answers.pronouns import (
    LLMPronounResolver,
    RuleBasedPronounResolver,
    replace_pronouns,
)
from aclarai.agents.answers.refusal import is_refusal, is_refusal_sentence

__all__ = [
    "AnswerEvalSettings",
    "AnswerEvaluation",
    "AnswerEvaluator",
    "AnswerVerdict",
    "Interaction",
    "Judge",
    "JudgeSpec",
    "Judgement",
    "LLMPronounResolver",
    "NLIQAPipeline",
    "PairScore",
    "QAItem",
    "QAResult",
    "RuleBasedPronounResolver",
    "Stage",
    "is_refusal",
    "is_refusal_sentence",
    "llm_judges",
    "load_judge_specs",
    "offline_judges",
    "replace_pronouns",
    "split_statements",
]
