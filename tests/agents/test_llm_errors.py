"""Foreign exceptions are translated at the edge: every kind maps to one of ours, cause kept."""

from __future__ import annotations

import email.utils
import time

import httpx
import openai
import pytest

from aclarai.agents.llm.errors import (
    OutOfBudget,
    failed_score,
    overloaded,
    refuses_logprobs,
    retry_after_s,
    translate_error,
)
from aclarai.parsers import SCORE_NAMES, EvaluationError, EvaluatorUnavailable, TransientError

REQUEST = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")


def _response(code: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(code, headers=headers or {}, request=REQUEST)


def _status_error(cls: type[openai.APIStatusError], code: int) -> openai.APIStatusError:
    return cls(f"HTTP {code}", response=_response(code), body=None)


TRANSIENT: list[BaseException] = [
    openai.APITimeoutError(REQUEST),
    openai.APIConnectionError(request=REQUEST),
    _status_error(openai.RateLimitError, 429),
    _status_error(openai.InternalServerError, 500),
    _status_error(openai.InternalServerError, 503),
    _status_error(openai.APIStatusError, 408),
    _status_error(openai.ConflictError, 409),
    httpx.ConnectTimeout("slow", request=REQUEST),
    httpx.ConnectError("refused", request=REQUEST),
]
PERMANENT: list[BaseException] = [
    _status_error(openai.BadRequestError, 400),
    _status_error(openai.AuthenticationError, 401),
    _status_error(openai.PermissionDeniedError, 403),
    _status_error(openai.NotFoundError, 404),
    _status_error(openai.UnprocessableEntityError, 422),
    openai.APIResponseValidationError(response=_response(200), body=None),
    ValueError("malformed reply"),
]


@pytest.mark.parametrize("error", TRANSIENT, ids=lambda e: type(e).__name__)
def test_transient_failures_become_evaluator_unavailable(error: BaseException) -> None:
    mapped = translate_error(error)

    assert isinstance(mapped, EvaluatorUnavailable)
    assert isinstance(mapped, TransientError)


@pytest.mark.parametrize("error", PERMANENT, ids=lambda e: type(e).__name__)
def test_other_failures_become_evaluation_error(error: BaseException) -> None:
    mapped = translate_error(error)

    assert isinstance(mapped, EvaluationError)
    assert not isinstance(mapped, TransientError)


def test_ours_pass_through_unchanged() -> None:
    error = EvaluatorUnavailable("down", retry_after=3.0)

    assert translate_error(error) is error


def test_rate_limit_keeps_retry_after() -> None:
    error = openai.RateLimitError(
        "slow down", response=_response(429, {"retry-after": "7"}), body=None
    )

    mapped = translate_error(error)

    assert isinstance(mapped, EvaluatorUnavailable)
    assert mapped.retry_after == 7.0
    assert "429" in str(mapped)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after": "100000"}, 300.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_parsing(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_s(_response(429, headers)) == expected


def test_retry_after_as_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)

    seconds = retry_after_s(_response(429, {"retry-after": when}))

    assert seconds is not None
    assert 25 <= seconds <= 31


def test_a_timeout_within_a_short_budget_is_out_of_budget() -> None:
    mapped = translate_error(openai.APITimeoutError(REQUEST), short_budget=True)

    assert isinstance(mapped, OutOfBudget)
    assert isinstance(translate_error(openai.APITimeoutError(REQUEST)), EvaluatorUnavailable)
    assert not isinstance(translate_error(openai.APITimeoutError(REQUEST)), OutOfBudget)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (openai.APITimeoutError(REQUEST), True),
        (httpx.ReadTimeout("slow", request=REQUEST), True),
        (_status_error(openai.RateLimitError, 429), True),
        (_status_error(openai.InternalServerError, 503), False),
        (openai.APIConnectionError(request=REQUEST), False),
    ],
    ids=lambda e: type(e).__name__,
)
def test_a_timeout_or_429_says_the_server_is_overloaded(
    error: BaseException, expected: bool
) -> None:
    assert overloaded(error) is expected


def test_a_refusal_naming_logprobs_is_told_from_other_refusals() -> None:
    def refusal(message: str) -> openai.APIStatusError:
        return openai.BadRequestError(message, response=_response(400), body=None)

    assert refuses_logprobs(refusal("logprobs is not supported with this model"))
    assert not refuses_logprobs(refusal("temperature is out of range"))
    assert not refuses_logprobs(ValueError("logprobs"))


def test_a_failed_evaluation_scores_nothing_and_says_why() -> None:
    down = failed_score(EvaluatorUnavailable("down"))
    never = failed_score(None)

    assert all(getattr(down, name) is None for name in SCORE_NAMES)
    assert down.unavailable
    assert never.status == "not_evaluated"
    assert not never.unavailable
