"""`similar` for the write handlers (POST /memory, /memory/batch, hooks), which import this module at
cold start: the index's modules (sqlite3, the readers, numpy) and the model load on the first write
that asks, not with the handler, so the store functions' cold import stays what it was."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from synapse.memory.kinds import Memory


class _OnWrite:
    """`search.repeats.on_write`, imported on the first call: `similar` after a write commits, and
    the vectors its items carry before (so the indexer does not embed them again)."""

    def __call__(self, mind_id: str, memories: Sequence[Memory]) -> list[list[dict[str, Any]] | None]:
        from synapse.search import repeats

        return repeats.similar_to(mind_id, memories)

    def item_attributes(self, mind_id: str, memories: Sequence[Memory]) -> list[dict[str, Any]]:
        from synapse.search import repeats

        return repeats.item_attributes(mind_id, memories)


similar_to = _OnWrite()
