"""Text → vectors for search by meaning: one small interface, one model that works everywhere.

    from synapse.embedding import default_embedder, embed_query, serves
    vectors = default_embedder().embed(["Wife is Anna", "Drives a Tesla"])  # (2, 384) float32, unit rows
    query = embed_query("who is his partner")                             # (384,), cached per process
    cosine = vectors @ query                                              # rows are L2-normalised

Contract for callers (the hybrid ranking, the indexer, rebuild):
- `Embedder.embed(texts)` returns a float32 array of shape (len(texts), dimensions), every row of
  unit length, so a dot product is the cosine similarity; what is stored is embedded with it.
  `Embedder.embed_query(text)` embeds a question (MiniLM: the same weights computed in int8, ~2.3x
  faster, within a cosine of ~0.99; see minilm.py). Vectors of different `name`s are not
  comparable: store `name` beside the vectors and re-embed when it changes.
- `serves(text)` says whether the model understands text's language. The model is all-MiniLM-L6-v2,
  trained on English only: for text in another language (German, Russian, Chinese, …) its vector is
  near-noise, so a caller must not let the semantic side rank such a query (use lexical alone);
  memories in other languages may be embedded, they just rarely come up through semantic search.
- Loading is lazy: importing this package imports neither numpy nor onnxruntime; `default_embedder()`
  loads numpy and the vocabulary; the first `embed` loads the stored texts' model (~0.2 s of CPU), the
  first `embed_query` the questions' model (~0.13 s), each sha256-checked, once per process,
  thread-safely. Questions run on one thread, stored texts on the process's CPUs (minilm.threads),
  and importing this package pins
  numpy's BLAS to one thread (OMP/OPENBLAS/MKL_NUM_THREADS, unless already set): import it before
  numpy so a matrix product over stored vectors does not fight for the CPU.
- If the model is not installed, `default_embedder()` raises `ModelUnavailable`; a model file that is
  not the pinned one raises `ModelIntegrityError` where it is first used; both are `EmbeddingError`.
  A caller may degrade to lexical search on `ModelUnavailable`, but should let `ModelIntegrityError` be loud.
- Another model (e.g. Bedrock Titan V2 on AWS) replaces this one by implementing `Embedder`.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from synapse.embedding.errors import EmbeddingError, ModelIntegrityError, ModelUnavailable
from synapse.embedding.languages import serves

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "Embedder",
    "EmbeddingError",
    "ModelIntegrityError",
    "ModelUnavailable",
    "default_embedder",
    "embed_query",
    "serves",
]


class Embedder(Protocol):
    """What the rest of Synapse needs of an embedding model."""

    name: str  # identifies the vector space: vectors of two names never mix
    dimensions: int

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """(len(texts), dimensions) float32, each row L2-normalised."""
        ...

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """A question's vector, (dimensions,), L2-normalised: compared with stored vectors, never stored,
        so it may come from a faster approximation of the same model (within a cosine of ~0.99)."""
        ...


# One thread for numpy's BLAS and OpenMP pools, set before anything imports numpy (this package is
# imported at module level by what embeds, numpy only on first use): with two threads on a busy 2-core
# machine a matrix product of the vectors ran ~8x slower, and a Lambda at 512 MB has 0.29 vCPU.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

_lock = threading.Lock()
_loaded: list[Embedder] = []


def default_embedder() -> Embedder:
    """The process's embedder, loaded on the first call (raises EmbeddingError if it cannot be)."""
    if not _loaded:
        with _lock:
            if not _loaded:
                # the model's code (its tokenizer's patterns) loads with the model, not with the package
                from synapse.embedding.minilm import MiniLM

                _loaded.append(MiniLM())
    return _loaded[0]


@functools.lru_cache(maxsize=1024)
def embed_query(text: str) -> NDArray[np.float32]:
    """text's vector, shape (dimensions,), read-only; repeated queries are answered from a cache."""
    vector: NDArray[np.float32] = default_embedder().embed_query(text)
    vector.flags.writeable = False
    return vector
