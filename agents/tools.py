"""Tools by agent role, as configured under ``tools.agent_tool_mappings``.

A user gives or takes a tool from an agent by editing that mapping; no code changes. Each entry
names a tool, the description shown to the model, and parameters (collection, top-k) that become
the tool's defaults. The factory knows how to build each tool name from a :data:`ToolBuilder`; a
name it has never heard of is a configuration error, while a known tool whose backend is absent
(no index of the vault's utterances) is left out with a log line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aclarai.agents.vector_index import SearchHit, VectorIndex
from aclarai.parsers import ConfigError

logger = logging.getLogger(__name__)

VECTOR_SEARCH = "vector_search_utterances"
KNOWN_TOOLS = frozenset({VECTOR_SEARCH})


class ToolSpecLike(Protocol):
    """One entry of ``tools.agent_tool_mappings.<role>`` (the config's ``ToolSpec`` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def params(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Tool:
    """A callable given to an agent: keyword arguments override the configured ``params``."""

    name: str
    description: str
    run: Callable[..., Any] = field(repr=False)
    params: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, **kwargs: Any) -> Any:
        return self.run(**{**self.params, **kwargs})


ToolBuilder = Callable[[ToolSpecLike], Tool]


class ToolFactory:
    """The tools of each role, built once from the mapping.

    Args:
        mappings: role name (``entailment_agent``…) to its tool specs.
        builders: tool name to the builder that makes it; known tools without a builder are
            left out.

    Raises:
        ConfigError: a mapping names a tool that is neither known nor given a builder.
    """

    def __init__(
        self,
        mappings: Mapping[str, Sequence[ToolSpecLike]],
        builders: Mapping[str, ToolBuilder],
    ) -> None:
        self._tools: dict[str, tuple[Tool, ...]] = {}
        for role, specs in mappings.items():
            built: list[Tool] = []
            for index, spec in enumerate(specs):
                builder = builders.get(spec.name)
                if builder is None:
                    if spec.name not in KNOWN_TOOLS:
                        key = f"tools.agent_tool_mappings.{role}.{index}.name"
                        raise ConfigError(f"unknown tool {spec.name!r} for {role}", key=key)
                    logger.info("tool %s for %s has no backend here; left out", spec.name, role)
                    continue
                built.append(builder(spec))
            self._tools[role] = tuple(built)

    def tools_for(self, role: str) -> tuple[Tool, ...]:
        """The tools configured for ``role`` (none for a role the mapping does not name)."""
        return self._tools.get(role, ())

    def tool(self, role: str, name: str) -> Tool | None:
        """``role``'s tool called ``name``, if it has one."""
        return next((t for t in self.tools_for(role) if t.name == name), None)


def vector_search_builder(indexes: Mapping[str, VectorIndex]) -> ToolBuilder:
    """Builds ``vector_search_utterances`` over the index named by the ``collection`` param.

    The tool is called as ``tool(query=..., top_k=..., exclude=...)`` and returns
    :class:`SearchHit` s.
    """

    def build(spec: ToolSpecLike) -> Tool:
        collection = str(spec.params.get("collection", "utterances"))
        index = indexes.get(collection)
        if index is None:
            raise ConfigError(
                f"tool {spec.name} names collection {collection!r}, which does not exist",
                key="tools.agent_tool_mappings",
            )

        def search(
            query: str, top_k: int = 5, exclude: Sequence[str] = (), **_: Any
        ) -> list[SearchHit]:
            return index.search(query, int(top_k), exclude=frozenset(exclude))

        params = {"top_k": int(spec.params.get("top_k", 5))}
        return Tool(spec.name, spec.description, search, params)

    return build


def build_tool_factory(
    mappings: Mapping[str, Sequence[ToolSpecLike]],
    *,
    utterances: VectorIndex | None = None,
) -> ToolFactory:
    """The usual factory: vector search over ``utterances``.

    Args:
        mappings: ``tools.agent_tool_mappings``.
        utterances: the index of every block, as collection ``utterances``.
    """
    builders: dict[str, ToolBuilder] = {}
    if utterances is not None:
        builders[VECTOR_SEARCH] = vector_search_builder({"utterances": utterances})
    return ToolFactory(mappings, builders)
