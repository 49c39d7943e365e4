"""The answer judges as configured in YAML: which run, with which prompt, weight and model.

The shipped ``agents/answers/judges.yaml`` lists the spec's three judges and two more
(completeness and instruction-following, shipped off); ``service.judges_file`` replaces it with a
user's file.
:func:`offline_judges` and :func:`llm_judges` build the enabled judges for either backend. A judge
with no offline stand-in runs only with a model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path

import yaml

from aclarai.agents.answers.evaluator import Interaction, Judge, Judgement
from aclarai.agents.answers.judges import (
    CoherenceJudge,
    FaithfulnessJudge,
    LLMJudge,
    RelevanceJudge,
)
from aclarai.agents.answers.query_judges import CompletenessJudge, InstructionJudge
from aclarai.agents.base import Evaluator
from aclarai.agents.llm.client import LLMClient
from aclarai.agents.llm.prompts import PromptLibrary
from aclarai.parsers import ConfigError, EvaluationError, EvaluatorUnavailable

logger = logging.getLogger(__name__)

OfflineFactory = Callable[[Evaluator, "float | None"], Judge]

OFFLINE_JUDGES: dict[str, OfflineFactory] = {
    "relevance": lambda evaluator, timeout: RelevanceJudge(timeout_s=timeout),
    "faithfulness": lambda evaluator, timeout: FaithfulnessJudge(evaluator, timeout_s=timeout),
    "coherence": lambda evaluator, timeout: CoherenceJudge(evaluator, timeout_s=timeout),
    "completeness": lambda evaluator, timeout: CompletenessJudge(timeout_s=timeout),
    "instruction_following": lambda evaluator, timeout: InstructionJudge(timeout_s=timeout),
}
"""The offline judges a YAML entry's ``offline`` key may name."""


@dataclass(frozen=True, slots=True)
class JudgeSpec:
    """One entry of the judges file."""

    name: str
    prompt: str
    needs_context: bool = False
    weight: float = 1.0
    model: str | None = None
    retries: int = 0
    offline: str | None = None
    enabled: bool = True


def load_judge_specs(path: Path | None = None) -> list[JudgeSpec]:
    """The judges listed in ``path`` (the shipped file when ``None``), enabled or not.

    Raises:
        ConfigError: unreadable file, or an entry with an unknown or missing key, a bad value or
            a duplicate name; the message names the file and the entry.
    """
    if path is None:
        origin = "aclarai.agents.answers/judges.yaml"
        text = resources.files("aclarai.agents.answers").joinpath("judges.yaml").read_text("utf-8")
    else:
        origin = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the judges file {path}: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{origin}: not valid YAML: {exc}") from exc
    entries = data.get("judges") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ConfigError(f"{origin}: expected a top-level 'judges' list")
    specs = [_spec(entry, origin, n) for n, entry in enumerate(entries, 1)]
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise ConfigError(f"{origin}: judge names must be unique, got {names}")
    return specs


def _spec(entry: object, origin: str, number: int) -> JudgeSpec:
    where = f"{origin}: judge {number}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping")
    known = {f.name for f in fields(JudgeSpec)}
    unknown = sorted(set(entry) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
    for key in ("name", "prompt"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise ConfigError(f"{where}: {key!r} must be a non-empty string")
    weight = entry.get("weight", 1.0)
    if not isinstance(weight, int | float) or isinstance(weight, bool) or weight < 0:
        raise ConfigError(f"{where} ({entry['name']}): weight must be a number ≥ 0")
    retries = entry.get("retries", 0)
    if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= 10:
        raise ConfigError(f"{where} ({entry['name']}): retries must be an integer from 0 to 10")
    offline = entry.get("offline")
    if offline is not None and offline not in OFFLINE_JUDGES:
        raise ConfigError(
            f"{where} ({entry['name']}): offline must be null or one of {', '.join(OFFLINE_JUDGES)}"
        )
    for key in ("needs_context", "enabled"):
        if key in entry and not isinstance(entry[key], bool):
            raise ConfigError(f"{where} ({entry['name']}): {key} must be true or false")
    model = entry.get("model")
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"{where} ({entry['name']}): model must be a string or null")
    return JudgeSpec(
        name=entry["name"],
        prompt=entry["prompt"],
        needs_context=entry.get("needs_context", False),
        weight=float(weight),
        model=model,
        retries=retries,
        offline=offline,
        enabled=entry.get("enabled", True),
    )


class _ConfiguredJudge(Judge):
    """A judge as its entry configures it: name, weight, the context check and retries."""

    def __init__(self, spec: JudgeSpec, inner: Judge):
        self.name = spec.name
        self.weight = spec.weight
        self.timeout_s = inner.timeout_s
        self._spec = spec
        self._inner = inner

    def judge(self, interaction: Interaction) -> Judgement:
        if self._spec.needs_context and not interaction.context.strip():
            raise EvaluationError(f"{self.name} needs the context, and none was given")
        for attempt in range(self._spec.retries + 1):
            try:
                return self._inner.judge(interaction)
            except EvaluatorUnavailable:
                raise
            except EvaluationError as exc:
                if attempt == self._spec.retries:
                    raise
                logger.info("%s: %s; trying again", self.name, exc)
        raise AssertionError("unreachable")


def offline_judges(
    evaluator: Evaluator,
    specs: Sequence[JudgeSpec] | None = None,
    *,
    timeout_s: float | None = None,
) -> list[Judge]:
    """The enabled judges that have an offline stand-in (the shipped file when ``specs`` is
    ``None``); ``evaluator`` scores entailment for faithfulness and coherence."""
    chosen = [s for s in (load_judge_specs() if specs is None else specs) if s.enabled]
    return [
        _ConfiguredJudge(spec, OFFLINE_JUDGES[spec.offline](evaluator, timeout_s))
        for spec in chosen
        if spec.offline is not None
    ]


def llm_judges(
    client: LLMClient,
    prompts: PromptLibrary,
    model: str,
    specs: Sequence[JudgeSpec] | None = None,
    *,
    timeout_s: float | None = None,
) -> list[Judge]:
    """The enabled judges as LLM calls, each with its own prompt and (optionally) model.

    Raises:
        ConfigError: an enabled judge names a prompt that exists neither shipped nor overridden.
    """
    chosen = [s for s in (load_judge_specs() if specs is None else specs) if s.enabled]
    for spec in chosen:
        prompts.get(spec.prompt)
    return [
        _ConfiguredJudge(
            spec,
            LLMJudge(
                spec.name,
                spec.prompt,
                client,
                prompts,
                spec.model or model,
                timeout_s=timeout_s,
            ),
        )
        for spec in chosen
    ]
