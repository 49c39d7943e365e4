"""What an endpoint taught a client: the output mode it accepts, its context size, whether it
gives ``logprobs`` and how fast it writes; kept per endpoint in a JSON file of the daemon's state
folder, so that every client of that endpoint after it starts from what was learned (see
:mod:`.client`)."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from aclarai.parsers import EvaluationError

logger = logging.getLogger(__name__)

OutputMode = Literal["json_schema", "json_object", "text"]
OUTPUT_MODES: tuple[OutputMode, ...] = ("json_schema", "json_object", "text")


class EndpointMemory:
    """One endpoint's learned facts, thread-safe, saved to ``state_path`` as they change."""

    def __init__(self, api_base: str, state_path: Path | None) -> None:
        self._api_base = api_base
        self._state_path = state_path
        self._lock = threading.Lock()
        known = _load(state_path).get(api_base, {})
        mode = known.get("mode")
        size = known.get("context_tokens")
        self.mode: OutputMode = mode if mode in OUTPUT_MODES else "json_schema"
        self.context_tokens: int | None = size if isinstance(size, int) and size > 0 else None
        refused = known.get("logprobs_refused")
        self._no_logprobs: set[str] = (
            {str(m) for m in refused} if isinstance(refused, list) else set()
        )
        speed = known.get("tokens_per_s")
        self.tokens_per_s: float | None = (
            float(speed) if isinstance(speed, int | float) and speed > 0 else None
        )

    def takes_logprobs(self, model: str) -> bool:
        """Whether ``model`` may be asked for ``logprobs`` (not refused yet)."""
        return model not in self._no_logprobs

    def step_down(self, refused: OutputMode, exc: EvaluationError) -> None:
        """The endpoint refused ``refused``: use the next mode from now on, and remember it."""
        with self._lock:
            if self.mode != refused:
                return  # another thread stepped down already
            self.mode = OUTPUT_MODES[OUTPUT_MODES.index(refused) + 1]
            mode = self.mode
        logger.warning(
            "endpoint %s does not accept response_format %s (%s); asking with %s from now on",
            self._api_base,
            refused,
            exc,
            "json_object and the schema in the prompt"
            if mode == "json_object"
            else "the schema in the prompt and tolerant parsing",
        )
        self._save("mode", mode)

    def forget_logprobs(self, model: str, exc: EvaluationError) -> None:
        """``model`` refused ``logprobs``: ask it without them from now on."""
        with self._lock:
            if model in self._no_logprobs:
                return
            self._no_logprobs.add(model)
            refused = sorted(self._no_logprobs)
        logger.warning(
            "model %s at %s does not give logprobs (%s); its grades are read as written now",
            model,
            self._api_base,
            exc,
        )
        self._save("logprobs_refused", refused)

    def learn_context(self, tokens: int | None) -> None:
        """The model's context size, as the server said it."""
        if tokens is None or tokens == self.context_tokens:
            return
        with self._lock:
            self.context_tokens = tokens
        logger.info("endpoint %s: the model's context is %d tokens", self._api_base, tokens)
        self._save("context_tokens", tokens)

    def learn_speed(self, tokens_per_s: float | None) -> None:
        """A reply was written at ``tokens_per_s`` (``None``: unknown): the slowest speed seen is
        what a reply is given time for, so that a busy day does not time out what a quiet one
        wrote."""
        if tokens_per_s is None:
            return
        with self._lock:
            if self.tokens_per_s is not None and tokens_per_s >= self.tokens_per_s:
                return
            self.tokens_per_s = tokens_per_s
        logger.info("endpoint %s writes %.1f tokens/s", self._api_base, tokens_per_s)
        self._save("tokens_per_s", tokens_per_s, keep=min)

    def _save(self, field: str, value: Any, keep: Callable[[Any, Any], Any] | None = None) -> None:
        """Write ``field`` of this endpoint's entry, keeping what other processes wrote;
        ``keep`` chooses between the value saved and ``value`` (two processes that learned
        different speeds)."""
        if self._state_path is None:
            return
        with self._lock:
            known = _load(self._state_path)
            entry = known.get(self._api_base, {})
            saved = entry.get(field)
            if keep is not None and isinstance(saved, int | float):
                value = keep(saved, value)
            known[self._api_base] = {**entry, field: value}
            path = self._state_path
            temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                temp.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")
                temp.replace(path)
            except OSError as exc:
                logger.warning("cannot remember what endpoint %s supports: %s", self._api_base, exc)


def _load(state_path: Path | None) -> dict[str, dict[str, Any]]:
    if state_path is None:
        return {}
    try:
        raw = json.loads(state_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {base: entry for base, entry in raw.items() if isinstance(entry, dict)}
