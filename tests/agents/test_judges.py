"""The answer judges: offline on the real offline scorer, LLM-backed through a scripted server."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator

import pytest

from aclarai.agents import (
    AnswerEvalSettings,
    AnswerEvaluator,
    Interaction,
    LLMClient,
    LLMPronounResolver,
    PromptLibrary,
    llm_judges,
    offline_judges,
)
from aclarai.agents.answers.judges import CoherenceJudge, FaithfulnessJudge, RelevanceJudge
from aclarai.agents.offline.evaluator import OfflineEvaluator
from aclarai.parsers import EvaluationError
from tests.helpers.scripted_llm import Recorded, Reply, ScriptedLLMServer, json_reply, slow, status

CONTEXT = (
    "The Eiffel Tower in Paris is 330 metres tall. It was completed in 1889 for the World's "
    "Fair and was designed by the engineering company of Gustave Eiffel."
)
QUERY = "How tall is the Eiffel Tower?"
GOOD = Interaction(QUERY, CONTEXT, "The Eiffel Tower is 330 metres tall.")


@pytest.fixture(scope="module")
def offline() -> Iterator[OfflineEvaluator]:
    evaluator = OfflineEvaluator()
    yield evaluator
    evaluator.close()


def test_faithfulness_prefers_grounded_answers(offline: OfflineEvaluator) -> None:
    judge = FaithfulnessJudge(offline)
    grounded = judge.judge(Interaction(QUERY, CONTEXT, "The Eiffel Tower is 330 metres tall."))
    invented = judge.judge(
        Interaction(QUERY, CONTEXT, "The Eiffel Tower is 150 metres tall and stands in Rome.")
    )
    assert grounded.score > invented.score
    assert "entailment" in grounded.reason


def test_faithfulness_without_context_fails_instead_of_scoring_zero(
    offline: OfflineEvaluator,
) -> None:
    with pytest.raises(EvaluationError, match="no context"):
        FaithfulnessJudge(offline).judge(Interaction(QUERY, "  ", "It is 330 metres tall."))


def test_relevance_follows_the_query() -> None:
    judge = RelevanceJudge()
    on_topic = judge.judge(Interaction(QUERY, "", "The Eiffel Tower is 330 metres tall."))
    rephrased = judge.judge(Interaction(QUERY, "", "Eiffel's tower has a height of 330 m."))
    off_topic = judge.judge(Interaction(QUERY, "", "Bananas are rich in potassium."))
    assert on_topic.score == 1.0
    assert off_topic.score < 0.2 < rephrased.score


def test_coherence_finds_contradicting_sentences(offline: OfflineEvaluator) -> None:
    judge = CoherenceJudge(offline)
    consistent = judge.judge(
        Interaction(
            QUERY,
            CONTEXT,
            "The Eiffel Tower is 330 metres tall. It was completed in 1889. "
            "Gustave Eiffel's company designed it.",
        )
    )
    numbers = judge.judge(
        Interaction(QUERY, CONTEXT, "The tower is 330 metres tall. The tower is 150 metres tall.")
    )
    negation = judge.judge(
        Interaction(
            "When is the museum open?",
            "",
            "The museum is open on Sundays. The museum is not open on Sundays.",
        )
    )
    single = judge.judge(Interaction(QUERY, CONTEXT, "It is 330 metres tall."))
    assert consistent.score == 1.0
    assert single.score == 1.0
    assert numbers.score < 0.6 and "sentences 1 and 2" in numbers.reason
    assert negation.score < 0.6


def test_offline_judges_give_a_pass_to_a_good_answer(offline: OfflineEvaluator) -> None:
    evaluator = AnswerEvaluator(offline_judges(offline))
    try:
        good = evaluator.evaluate(
            Interaction(QUERY, CONTEXT, "The Eiffel Tower is 330 metres tall.")
        )
        bad = evaluator.evaluate(
            Interaction(QUERY, CONTEXT, "Bananas grow in tropical regions of the world.")
        )
    finally:
        evaluator.close()
    assert good.verdict == "pass"
    assert bad.verdict == "fail"


def _by_judge(scores: dict[str, Reply]) -> Callable[[Recorded], Reply]:
    def respond(request: Recorded) -> Reply:
        for word, reply in scores.items():
            if word in request.user_text:
                return reply
        return status(418, message="unexpected prompt")

    return respond


@pytest.fixture
def llm_evaluator(
    make_client: Callable[..., LLMClient],
) -> Iterator[Callable[..., AnswerEvaluator]]:
    made: list[AnswerEvaluator] = []

    def create(**settings: float) -> AnswerEvaluator:
        client = make_client(max_attempts=2)
        judges = llm_judges(client, PromptLibrary(), "judge-model")
        evaluator = AnswerEvaluator(judges, AnswerEvalSettings(**settings))  # type: ignore[arg-type]
        made.append(evaluator)
        return evaluator

    yield create
    for evaluator in made:
        evaluator.close()


def test_llm_judges_score_from_structured_replies(
    llm_server: ScriptedLLMServer, llm_evaluator: Callable[..., AnswerEvaluator]
) -> None:
    llm_server.responder = _by_judge(
        {
            "RELEVANCE": json_reply({"score": 1.0, "reason": "answers the question"}),
            "FAITHFULNESS": json_reply({"score": 0.8, "reason": "grounded"}),
            "COHERENCE": Reply(content='```json\n{"score": 0.9, "reason": "consistent"}\n```'),
        }
    )
    result = llm_evaluator().evaluate(GOOD)
    judged = {s.name: (s.score, s.reason) for s in result.stages if s.kind == "judge"}
    assert judged == {
        "relevance-judge": (1.0, "answers the question"),
        "faithfulness-judge": (0.8, "grounded"),
        "coherence-judge": (0.9, "consistent"),
    }
    assert len(llm_server.chat_requests) == 3
    for request in llm_server.chat_requests:
        assert '<untrusted kind="answer">' in request.user_text


def test_the_llm_judges_share_their_prompt_up_to_their_question(
    llm_server: ScriptedLLMServer, llm_evaluator: Callable[..., AnswerEvaluator]
) -> None:
    # What repeats comes first: the one system prompt, then the context, query and answer, and
    # only then each judge's question, so that a server's prompt cache reads an event once.
    llm_server.responder = lambda request: json_reply({"score": 1.0, "reason": "fine"})
    llm_evaluator().evaluate(GOOD)
    requests = llm_server.chat_requests
    assert len(requests) == 3
    assert len({r.system_text for r in requests}) == 1
    users = [r.user_text for r in requests]
    shared = users[0][: len(os.path.commonprefix(users))]  # noqa: RUF071 (text, not paths)
    assert shared.index(CONTEXT) < shared.index(QUERY) < shared.index(GOOD.answer)
    questions = {u[len(shared) :].split(":")[0].strip() for u in users}
    assert questions == {"RELEVANCE", "FAITHFULNESS", "COHERENCE"}


def test_an_unparseable_llm_judge_is_left_out(
    llm_server: ScriptedLLMServer, llm_evaluator: Callable[..., AnswerEvaluator]
) -> None:
    llm_server.responder = _by_judge(
        {
            "RELEVANCE": json_reply({"score": 1.0, "reason": "on topic"}),
            "FAITHFULNESS": Reply(content="I think it is pretty faithful, maybe 7/10."),
            "COHERENCE": json_reply({"score": 7, "reason": "out of range"}),
        }
    )
    result = llm_evaluator(pre_check_weight=0.0, judge_weight=1.0).evaluate(GOOD)
    failed = {s.name for s in result.stages if s.score is None}
    assert failed == {"faithfulness-judge", "coherence-judge"}
    assert result.confidence == pytest.approx(1.0)


def test_a_slow_llm_judge_times_out_on_its_own(
    llm_server: ScriptedLLMServer, llm_evaluator: Callable[..., AnswerEvaluator]
) -> None:
    quick = json_reply({"score": 0.9, "reason": "fine"})
    llm_server.responder = _by_judge(
        {
            "RELEVANCE": quick,
            "FAITHFULNESS": slow(3.0, json.dumps({"score": 1.0, "reason": "late"})),
            "COHERENCE": quick,
        }
    )
    started = time.monotonic()
    result = llm_evaluator(judge_timeout_s=0.5).evaluate(GOOD)
    elapsed = time.monotonic() - started
    late = next(s for s in result.stages if s.name == "faithfulness-judge")
    assert late.score is None
    assert elapsed < 2.5
    assert result.verdict == "review"
    assert "capped at review" in result.reason


def test_an_unreachable_endpoint_gives_review(
    llm_server: ScriptedLLMServer, llm_evaluator: Callable[..., AnswerEvaluator]
) -> None:
    llm_server.responder = lambda request: status(500, message="down")
    result = llm_evaluator().evaluate(GOOD)
    assert result.verdict == "review"
    assert result.confidence is None
    assert all(s.score is None for s in result.stages if s.kind == "judge")


def test_llm_pronoun_resolver_uses_the_model_and_falls_back_to_rules(
    llm_server: ScriptedLLMServer, make_client: Callable[..., LLMClient]
) -> None:
    resolver = LLMPronounResolver(make_client(max_attempts=1), model="m", prompts=PromptLibrary())
    llm_server.queue(json_reply({"text": "Einstein was born in Ulm."}))
    assert resolver.resolve("He was born in Ulm.", "Where was Einstein born?") == (
        "Einstein was born in Ulm."
    )
    llm_server.queue(status(500, message="down"))
    assert resolver.resolve("He was born in Ulm.", "Where was Einstein born?") == (
        "Einstein was born in Ulm."
    )
    assert len(llm_server.chat_requests) == 2
