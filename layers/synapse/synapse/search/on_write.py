"""`similar` for the write handlers (POST /memory, /memory/batch, hooks), which import this module at
cold start: the index's modules (sqlite3, the readers, numpy) and the model load on the first write
that asks, not with the handler, so the store functions' cold import stays what it was."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from synapse.memory.changes import WriteFields
from synapse.memory.kinds import Memory


class _SimilarTo:
    """`search.repeats.similar_to` (and its `ahead`), imported on the first call."""

    def __call__(self, mind_id: str, memories: Sequence[Memory], /) -> list[list[dict[str, Any]] | None]:
        from synapse.search import repeats

        return repeats.similar_to(mind_id, memories)

    @staticmethod
    def ahead(mind_id: str, writes: Sequence[WriteFields]) -> Callable[[], None]:
        from synapse.search import repeats

        return repeats.embed_ahead(mind_id, writes)


similar_to = _SimilarTo()
