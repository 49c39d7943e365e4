"""``aclarai claims``: the dashboard's claim lists on the command line, or as JSON lines."""

from __future__ import annotations

import json
from pathlib import Path

from aclarai.daemon.config import Config
from aclarai.daemon.factory import QUEUE_FILE, build_store, build_vault
from aclarai.daemon.reports.dashboard import claim_ref
from aclarai.parsers import AclaraiError, ClaimRef, named_scores, shown_threshold

CLAIM_TEXT_SHOWN = 80


def list_claims(
    config: Config,
    vault_root: Path,
    *,
    below: float | None = None,
    note: str | None = None,
    failed: bool = False,
) -> list[ClaimRef]:
    """The claims below ``below`` (default ``threshold.claim_quality``) as their quality is
    shown (two decimals), worst first, or with ``failed`` those whose evaluation left a null
    score, in file order.

    Args:
        note: Only this note's claims: a path inside the vault, or relative to it.

    Raises:
        AclaraiError: the vault was never synced, or ``note`` is outside it.
    """
    state_dir = config.state_dir_for(vault_root)
    if not (state_dir / QUEUE_FILE).exists():
        raise AclaraiError("no state yet: run `aclarai resync` first")
    rel = None if note is None else _note_rel(config, vault_root, note)
    threshold = shown_threshold(config.threshold.claim_quality if below is None else below)
    store = build_store(config, state_dir)
    try:
        if failed:
            claims = store.failed_claims(file=rel)
        else:
            claims = store.low_quality_claims(threshold, None, file=rel)
        blocks = store.get_blocks({c.block_id for c in claims})
    finally:
        store.close()
    return [claim_ref(c, blocks.get(c.block_id)) for c in claims]


def _note_rel(config: Config, vault_root: Path, note: str) -> str:
    """A note given on the command line as its vault-relative path (``.md`` optional)."""
    vault = build_vault(config, vault_root)
    given = Path(note)
    if given.exists():
        rel = vault.rel(given)
        if rel is None:
            raise AclaraiError(f"{note} is not inside the vault {vault.root}")
        return rel
    rel = given.as_posix()
    return rel if rel.endswith(".md") else rel + ".md"


def format_claim(ref: ClaimRef) -> str:
    """One line: quality, the scores, where, the claim (and the status of a failure)."""
    scores = " ".join(_score(v) for v in named_scores(ref).values())
    line = f"{_score(ref.quality)}  [{scores}]  {ref.file}#^{ref.block_id}  {shorten(ref.text)}"
    if ref.quality is None:
        line += f"  ({ref.status})"
    return line


def claim_json(ref: ClaimRef) -> str:
    """One JSON line for scripts."""
    return json.dumps(
        {
            "claim_id": ref.claim_id,
            "claim": ref.text,
            "file": ref.file,
            "block_id": ref.block_id,
            "quality": ref.quality,
            **named_scores(ref),
            "verdict": ref.verdict,
            "justification": ref.justification,
            "status": ref.status,
        },
        ensure_ascii=False,
    )


def _score(value: float | None) -> str:
    return "null" if value is None else f"{value:.2f}"


def shorten(text: str, limit: int = CLAIM_TEXT_SHOWN) -> str:
    """One line of at most ``limit`` characters, whitespace folded: a listing stays a table."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
