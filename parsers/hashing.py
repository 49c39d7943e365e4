"""Content hashes: what makes a block dirty."""

from __future__ import annotations

import hashlib
import unicodedata


def normalize_text(text: str) -> str:
    """NFC-normalised text with every run of whitespace collapsed to one space."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def content_hash(text: str) -> str:
    """sha256 (hex) of the normalised text: edits to whitespace alone never make a block dirty."""
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()
