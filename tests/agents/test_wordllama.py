"""WordLlama, search's offline embedder: its weights come from its own wheel, never the network."""

from __future__ import annotations

import numpy as np
import pytest

from aclarai.agents import WordLlamaEmbedder


def test_it_loads_from_its_package_with_the_network_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    import requests

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a download was attempted: {args}")

    monkeypatch.setattr(requests, "get", refuse)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.cache/wordllama to fall back on
    embedder = WordLlamaEmbedder()

    vectors = embedder.embed_batch(["cheaper price for schools", "discount for students", ""])
    assert vectors.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-5)
    assert not vectors[2].any(), "an empty text is a zero row"
    assert embedder.embed_batch([]).shape == (0, 256)


def test_related_texts_are_closer_than_unrelated_ones() -> None:
    embedder = WordLlamaEmbedder()
    query, near, far = embedder.embed_batch(
        [
            "cheaper price for schools and charities",
            "Students and nonprofits get 40% off the annual plan.",
            "The ferry leaves the harbour at nine.",
        ]
    )
    assert float(query @ near) > float(query @ far) + 0.1
