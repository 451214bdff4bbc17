"""A stream batch's texts embedded on a thread of their own while its minds are written.

The indexer's minds spend most of a batch waiting on the file system (EFS round trips, fsyncs), and
ONNX Runtime lets go of the GIL while it computes: so the batch's texts are embedded meanwhile, not
before the minds start, and each mind's writer takes its vectors when it writes them (`take`),
waiting only for those not ready yet. The texts come in the order the writers will want them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

from synapse.core.observability import in_this_invocation, logger
from synapse.embedding.errors import EmbeddingError


class Model(Protocol):
    def embed(self, texts: Sequence[str]) -> Any: ...


# Texts a stream batch embeds on its own thread (`embedded_ahead`), a run at a time, in the order the
# minds' writers will want them: one run costs ~3 ms whatever its size, so runs of a few texts are
# nearly as cheap a text as one call for the batch, and the first minds need not wait for the last.
AHEAD_RUN = 16


class Ahead:
    """A stream batch's texts embedded on a thread while its minds' writers wait on the file system
    (ONNX Runtime lets go of the GIL): a writer takes its vectors as they are ready (`take`)."""

    def __init__(
        self, model: Model, wanted: list[tuple[bytes, str]], ready: dict[bytes, Any] | None = None
    ) -> None:
        self._ready: dict[bytes, Any] = dict(ready or {})  # vectors known already (carried by the items)
        self._planned = {digest for digest, _ in wanted}
        self._running = True
        self._stop = False
        self._changed = threading.Condition()
        work = in_this_invocation(self._embed)
        self._thread = threading.Thread(target=work, args=(model, wanted), daemon=True)
        self._thread.name = "synapse-embed-ahead"
        self._thread.start()

    def _embed(self, model: Model, wanted: list[tuple[bytes, str]]) -> None:
        try:
            for start in range(0, len(wanted), AHEAD_RUN):
                if self._stop:
                    break
                run = wanted[start : start + AHEAD_RUN]
                embedded = model.embed([text for _, text in run])
                with self._changed:
                    self._ready.update(zip((digest for digest, _ in run), embedded, strict=True))
                    self._changed.notify_all()
        except EmbeddingError:  # the model failed: each mind's writer says so (and defers its vectors)
            pass
        except Exception:  # each mind then embeds its own (and fails on its own, if it must)
            logger.exception("embedding a stream batch ahead failed")
        finally:
            with self._changed:
                self._running = False
                self._changed.notify_all()

    def take(self, digest: bytes) -> Any | None:
        """The text's vector once embedded (None: not one of the batch's, or its embedding failed)."""
        with self._changed:
            while digest in self._planned and digest not in self._ready and self._running:
                self._changed.wait()
            return self._ready.get(digest)

    def close(self) -> None:
        self._stop = True
        self._thread.join()
