"""`similar` for the write handlers (POST /memory, /memory/batch, hooks), which import this module at
cold start: the index's modules (sqlite3, the readers, numpy) and the model load on the first write
that asks, not with the handler, so the store functions' cold import stays what it was."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from synapse.memory.kinds import Memory


def similar_to(mind_id: str, memories: Sequence[Memory]) -> list[list[dict[str, Any]] | None]:
    """`search.repeats.similar_to`, imported on the first call."""
    from synapse.search import repeats

    return repeats.similar_to(mind_id, memories)
