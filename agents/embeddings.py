"""Text embeddings: from the model endpoint, or a deterministic offline one.

Both return L2-normalised float32 rows, so a dot product is the cosine similarity.
:class:`HashingEmbedder` needs nothing (no weights, no network): hashed word and character n-gram
counts, good enough to find the utterances that share a claim's names and wording.
"""

from __future__ import annotations

import logging
import re
import zlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from aclarai.agents.cache import ResultCache, cache_key
from aclarai.agents.llm.client import LLMClient
from aclarai.parsers import EvaluationError, normalize_text

logger = logging.getLogger(__name__)

_WORD = re.compile(r"\w+")


class Embedder(ABC):
    """Turns texts into unit vectors; ``name`` identifies the vector space."""

    name: str = "abstract"

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """A ``(len(texts), dim)`` float32 array of unit rows (zero rows for empty texts)."""

    def embed(self, text: str) -> np.ndarray:
        return self.embed_batch([text])[0]


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; all-zero rows stay zero."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


class HashingEmbedder(Embedder):
    """Signed feature hashing of words and character n-grams (CRC32, so stable across runs).

    Args:
        dim: vector size.
        ngram_min: shortest character n-gram.
        ngram_max: longest character n-gram.
    """

    def __init__(self, dim: int = 1024, ngram_min: int = 3, ngram_max: int = 5) -> None:
        if dim < 8 or not 1 <= ngram_min <= ngram_max:
            raise ValueError("need dim >= 8 and 1 <= ngram_min <= ngram_max")
        self.dim = dim
        self._ngrams = range(ngram_min, ngram_max + 1)
        self.name = f"hashing-{dim}-{ngram_min}-{ngram_max}"

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        matrix = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in self._features(text):
                digest = zlib.crc32(feature.encode())
                sign = 1.0 if digest & 0x80000000 else -1.0
                matrix[row, digest % self.dim] += sign * weight
        return normalize_rows(matrix)

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = _WORD.findall(normalize_text(text).lower())
        # Whole words weigh more than their fragments: shared names and numbers matter most.
        features = [(f"w:{word}", 2.0) for word in words]
        for word in words:
            padded = f" {word} "
            for n in self._ngrams:
                features.extend((f"c:{padded[i : i + n]}", 1.0) for i in range(len(padded) - n + 1))
        return features


class OpenAIEmbedder(Embedder):
    """Embeddings from the endpoint's ``/embeddings``, cached by (model, text).

    Args:
        client: the endpoint's client (its limits, retries and counters apply).
        model: the embedding model name.
        batch_size: texts per request.
        cache: where vectors are kept between runs; none by default.
    """

    def __init__(
        self,
        client: LLMClient,
        model: str,
        *,
        batch_size: int = 64,
        cache: ResultCache | None = None,
    ) -> None:
        self._client = client
        self._model = model
        self._batch_size = batch_size
        self._cache = cache
        self.name = self.name_for(model)

    @staticmethod
    def name_for(model: str) -> str:
        """The name of the vectors of ``model``."""
        return f"openai:{model}"

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``.

        Raises:
            EvaluatorUnavailable: the endpoint could not be reached.
            EvaluationError: it refused, or answered vectors of differing sizes.
        """
        vectors: list[list[float] | None] = [None] * len(texts)
        keys = [cache_key("embedding", self._model, text) for text in texts]
        missing: list[int] = []
        for i, key in enumerate(keys):
            stored = self._cache.get(key) if self._cache is not None else None
            if isinstance(stored, list):
                vectors[i] = stored
                self._client.usage.add(cache_hits=1)
            else:
                missing.append(i)
        for start in range(0, len(missing), self._batch_size):
            chunk = missing[start : start + self._batch_size]
            fresh = self._client.embed(self._model, [texts[i] for i in chunk])
            for i, vector in zip(chunk, fresh, strict=True):
                vectors[i] = vector
                if self._cache is not None:
                    self._cache.put(keys[i], vector)
        if not vectors:
            return np.zeros((0, 1), dtype=np.float32)
        sizes = {len(v) for v in vectors if v is not None}
        if len(sizes) != 1:
            raise EvaluationError(
                f"embedding model {self._model} returned vectors of sizes {sizes}"
            )
        return normalize_rows(np.asarray(vectors, dtype=np.float32))


class WordLlamaEmbedder(Embedder):
    """WordLlama's static token embeddings (256 dimensions), whose weights ship inside its
    wheel: meaning without a model server, and nothing fetched at run time.

    The loader is given its own package folder as the cache and downloads are turned off, so a
    missing file is an error here, never a download.
    """

    name = "wordllama-l2_supercat-256"

    def __init__(self) -> None:
        import wordllama

        folder = Path(wordllama.__file__).parent
        try:
            self._model = wordllama.WordLlama.load(
                "l2_supercat", cache_dir=folder, dim=256, disable_download=True
            )
        except (FileNotFoundError, ValueError) as exc:
            raise EvaluationError(f"the wordllama package lacks its weights: {exc}") from exc

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 256), dtype=np.float32)
        vectors = np.asarray(self._model.embed(list(texts)), dtype=np.float32)
        return normalize_rows(vectors)
