"""Small constructors for store records, shared by the graph tests."""

from __future__ import annotations

from aclarai.graph import BlockRecord, ClaimRecord, FileState, FileSync, ScoreRecord
from aclarai.parsers import content_hash


def block(block_id: str, file: str, text: str, position: int = 0, version: int = 1) -> BlockRecord:
    """A block record whose hash is the real content hash of ``text``."""
    return BlockRecord(block_id, file, text, content_hash(text), version, position)


def note(path: str, *texts: str, mtime_ns: int = 1) -> FileSync:
    """A file whose blocks are ``texts`` in order, with ids ``<stem>-0``, ``<stem>-1``, ..."""
    stem = path.removesuffix(".md")
    blocks = [block(f"{stem}-{i}", path, text, position=i) for i, text in enumerate(texts)]
    return FileSync(FileState(path, mtime_ns, sum(len(t) for t in texts), "f" * 64), blocks)


def file_sync(path: str, *blocks: BlockRecord, mtime_ns: int = 1, size: int = 10) -> FileSync:
    """A file holding exactly these blocks (positions as given in the records)."""
    return FileSync(FileState(path, mtime_ns, size, "a" * 64), list(blocks))


def claim(claim_id: str, block_id: str, text: str | None = None) -> ClaimRecord:
    return ClaimRecord(claim_id, block_id, text or f"claim {claim_id}")


def score(
    claim_id: str,
    block_id: str,
    evaluated_hash: str,
    entailed: float | None = 0.9,
    coverage: float | None = 0.8,
    decontext: float | None = 0.7,
    status: str = "ok",
) -> ScoreRecord:
    return ScoreRecord(
        claim_id=claim_id,
        block_id=block_id,
        evaluated_hash=evaluated_hash,
        entailed_score=entailed,
        coverage_score=coverage,
        decontextualization_score=decontext,
        status=status,
        model="test-model",
    )
