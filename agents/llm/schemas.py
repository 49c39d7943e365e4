"""The JSON shapes the prompts ask for, and the tolerant reader of model replies.

A reply that does not validate is a failed call (:class:`UnparseableOutput`), never a 0.

Lists of texts accept blank entries (models emit them) and callers drop them, so one stray ``""``
does not throw away a whole reply.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
)

from aclarai.parsers import UnparseableOutput

T = TypeVar("T", bound=BaseModel)

Unit = Annotated[float, Field(ge=0.0, le=1.0)]
EntailmentLabel = Literal["entailed", "partial", "not_entailed"]

ENTAILMENT_VALUES: dict[str, float] = {"entailed": 1.0, "partial": 0.5, "not_entailed": 0.0}
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.DOTALL)


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ExtractionOut(_Out):
    """The claims a block states, each one self-contained sentence."""

    claims: list[str]


def _as_grade(value: Any) -> Any:
    """A grade written ``"4"`` or ``4.0`` (small models in text mode do) read as 4; anything
    else is left for the schema to refuse."""
    if isinstance(value, str) and value.strip().replace(".", "", 1).isdigit():
        value = float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Grade = Annotated[Literal[1, 2, 3, 4, 5], BeforeValidator(_as_grade)]


@functools.cache
def grades_schema(count: int) -> type[BaseModel]:
    """``{"c1": grade, …, "cN": grade}``: one grade of 1 to 5 per claim, every id required, so a
    constrained server cannot skip a claim and a grade is one token."""
    fields: dict[str, Any] = {f"c{n}": (Grade, ...) for n in range(1, count + 1)}
    return create_model(f"Grades{count}", __base__=_Out, **fields)


class EntailmentOut(_Out):
    entailment: EntailmentLabel
    reason: str = ""


class CoverageOut(_Out):
    coverage_score: Unit
    omitted: list[str] = []


class DecontextualizationOut(_Out):
    decontextualization_score: Unit
    reason: str = ""


class JudgeOut(_Out):
    """An answer judge's reply (relevance, faithfulness, coherence)."""

    score: Unit
    reason: str = ""


def parse_json_output(text: str, schema: type[T]) -> T:
    """Read a model's reply as ``schema``: code fences stripped, surrounding prose ignored.

    Raises:
        UnparseableOutput: no JSON object in the text, or it does not validate.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    last_error = "no JSON object found"
    for candidate in candidates:
        for start in (i for i, ch in enumerate(candidate) if ch == "{"):
            try:
                obj, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                continue
            try:
                return schema.model_validate(obj)
            except ValidationError as exc:
                last_error = _short_validation_error(exc)
                break
    raise UnparseableOutput(f"reply is not a valid {schema.__name__}: {last_error}")


@functools.cache
def json_schema_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The ``response_format`` that asks a server to decode ``schema`` and nothing else.

    The shape llama-index gives ``OpenAILike`` for structured output (OpenAI's ``json_schema``,
    which vLLM, Ollama and llama.cpp's server also read): a strict schema in which every object
    lists all its properties as required and forbids others. Keywords OpenAI's strict mode
    refuses (string lengths, defaults, titles) are left out; the reply is validated by the
    pydantic model anyway.
    """
    return {
        "type": "json_schema",
        "json_schema": {
            "name": re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__),
            "schema": _strict(schema.model_json_schema()),
            "strict": True,
        },
    }


@functools.cache
def schema_hint(schema: type[BaseModel]) -> str:
    """The schema as prompt text, for servers that cannot be given it as ``response_format``."""
    body = json.dumps(json_schema_format(schema)["json_schema"]["schema"], separators=(",", ":"))
    return f"Reply with only one JSON object that validates against this JSON Schema: {body}"


_DROPPED_KEYWORDS = frozenset({"title", "default", "minLength", "maxLength", "description"})


def _strict(node: Any) -> Any:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {
        key: (
            {name: _strict(sub) for name, sub in value.items()}
            if key in ("properties", "$defs")
            else _strict(value)
        )
        for key, value in node.items()
        if key not in _DROPPED_KEYWORDS
    }
    if out.get("type") == "object" and "properties" in out:
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    return out


def _short_validation_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "(root)"
    return f"{where}: {first['msg']}"
