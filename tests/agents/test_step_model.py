"""The learned step model: what it ships, how it scores, and that only the rules' open cases
reach it."""

from __future__ import annotations

import math

import pytest

from aclarai.agents.offline.not_claims import INSTRUCTION, not_a_claim
from aclarai.agents.offline.step_model import (
    LANGUAGES,
    StepModel,
    is_likely_step,
    shipped_model,
    step_features,
)


def test_the_shipped_model_has_a_fitted_model_for_each_language() -> None:
    model = shipped_model()
    assert sorted(model.models) == sorted(LANGUAGES)
    for weights, intercept, threshold in model.models.values():
        assert len(weights) > 100
        assert all(math.isfinite(w) for w in weights.values())
        assert math.isfinite(intercept)
        assert 0.5 <= threshold <= 0.95


def test_a_model_scores_the_logistic_of_its_weighted_features() -> None:
    features = step_features("地図を用意する。", "ja")
    weights = dict.fromkeys(features, 0.0) | {"ends in る": 2.0}
    model = StepModel(
        {"languages": {"ja": {"weights": weights, "intercept": -1.0, "threshold": 0.7}}}
    )
    assert model.probability("地図を用意する。", "ja") == pytest.approx(1 / (1 + math.exp(-1.0)))
    assert model.is_step("地図を用意する。", "ja")
    assert model.probability("地図を用意した。", "ja") == pytest.approx(1 / (1 + math.exp(1.0)))
    assert not model.is_step("地図を用意した。", "ja")
    assert model.probability("准备地图。", "zh") is None
    assert not model.is_step("准备地图。", "zh")


@pytest.mark.parametrize("step", ["地図を用意する。", "宿を予約する。", "酒場の噂を三つ考える。"])
def test_a_plain_form_to_do_the_rules_leave_open_is_a_step_by_the_model(step: str) -> None:
    assert not_a_claim(step, "ja", learned=False) is None
    assert not_a_claim(step, "ja") == INSTRUCTION


@pytest.mark.parametrize(
    ("said", "lang"),
    [
        ("東京の人口は約1400万人だ。", "ja"),
        ("会議は3時に始まる。", "ja"),
        ("雨の日は電車が遅れる。", "ja"),
        ("从 NOAA CO-OPS API 获取高潮和低潮预测。", "zh"),
        ("支付集成没有出现任何故障。", "zh"),
    ],
)
def test_statements_the_rules_leave_open_stay_open(said: str, lang: str) -> None:
    assert not_a_claim(said, lang) is None


@pytest.mark.parametrize(
    ("habit", "lang"),
    [
        ("毎年春に庭の草を刈る。", "ja"),
        ("毎週金曜日にチームで振り返りを行う。", "ja"),
        ("毎月の初めに家計簿をつける。", "ja"),
        ("每周五和团队一起复盘上周的工单。", "zh"),
    ],
)
def test_a_habit_is_never_a_step_to_the_model(habit: str, lang: str) -> None:
    assert not_a_claim(habit, lang) is None


def test_the_model_is_not_asked_about_other_languages() -> None:
    assert shipped_model().probability("Die Bahn fährt um acht.", "de") is None
    assert not is_likely_step("Die Bahn fährt um acht.", "de")


@pytest.mark.parametrize(
    "model",
    [
        {"intercept": 0.0, "threshold": 0.7},
        {"weights": {"length": "heavy"}, "intercept": 0.0, "threshold": 0.7},
        {"weights": {}, "intercept": 0.0},
        {"weights": [], "intercept": 0.0, "threshold": 0.7},
    ],
)
def test_malformed_parameters_are_one_clear_error(model: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="step model parameters for 'ja' are malformed"):
        StepModel({"languages": {"ja": model}})
