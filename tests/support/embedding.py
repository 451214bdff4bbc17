"""A deterministic stand-in for the embedding model, for tests that are about the index's mechanics
(version gating, upgrades, reuse), not about meaning: a bag of words, each word (or the concept a
few synonyms share) a fixed random unit vector, summed and normalised. Tests about meaning use the
real model (`synapse.embedding`)."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from synapse.index import vectors

DIMS = 384
# Words that mean the same to the fake: a paraphrase shares no word with its memory, only a concept.
CONCEPTS = {
    "wife": "spouse",
    "partner": "spouse",
    "husband": "spouse",
    "married": "spouse",
    "dog": "pet",
    "retriever": "pet",
    "pet": "pet",
    "car": "vehicle",
    "drive": "vehicle",
    "drives": "vehicle",
    "tesla": "vehicle",
    "bmw": "vehicle",
}
_WORD = re.compile(r"[a-z0-9]+")


def _unit(name: str) -> np.ndarray:
    vector = np.random.default_rng(zlib.crc32(name.encode())).standard_normal(DIMS).astype(np.float32)
    return vector / np.linalg.norm(vector)


class FakeEmbedder:
    name = "fake-bag-of-words-1"

    def __init__(self) -> None:
        self.embedded: list[str] = []  # every text embedded, in order (what a test counts)

    def _one(self, text: str) -> np.ndarray:
        words = _WORD.findall(text.lower())
        total = np.zeros(DIMS, dtype=np.float32)
        for word in words:
            total += _unit(CONCEPTS.get(word, word))
        norm = float(np.linalg.norm(total))
        return total / norm if norm else _unit("")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        if not texts:
            return np.zeros((0, DIMS), dtype=np.float32)
        return np.stack([self._one(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


@pytest.fixture(name="fake_embedder")
def fake_embedder_fixture() -> Iterator[FakeEmbedder]:
    fake = FakeEmbedder()
    vectors._recent.clear()  # what an earlier test embedded (by write or indexer) is not this one's
    vectors.use_embedder(fake)
    yield fake
    vectors.use_embedder(None)
