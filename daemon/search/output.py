"""What ``aclarai search`` prints: text for a person, JSON for a script."""

from __future__ import annotations

import json

from aclarai.daemon.reports.claims import shorten
from aclarai.daemon.search.engine import SearchHit, SearchResult

TEXT_SHOWN = 240


def hit_json(hit: SearchHit) -> str:
    """One JSON line, as ``claims --json`` prints claims."""
    return json.dumps(hit.as_dict(), ensure_ascii=False)


def format_result(result: SearchResult) -> str:
    lines: list[str] = []
    for rank, hit in enumerate(result.hits, 1):
        quality = "—" if hit.quality is None else f"{hit.quality:.2f}"
        lines.append(f"{rank}. {hit.link}  relevance {hit.score:.2f}  quality {quality}")
        if hit.claim is not None:
            lines.append(f"   claim: {hit.claim.claim}")
        lines.append(f"   {shorten(hit.text, TEXT_SHOWN)}")
    if not result.hits:
        lines.append(result.note or "no hits")
    lines += footer(result)
    return "\n".join(lines)


def footer(result: SearchResult) -> list[str]:
    """A line saying the vectors are incomplete, when they are."""
    if not result.unembedded:
        return []
    return [
        f"({result.unembedded} of {result.blocks} blocks have no vector yet and were found by "
        "their words only: `aclarai resync` computes them)"
    ]
