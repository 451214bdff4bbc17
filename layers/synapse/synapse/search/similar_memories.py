"""GET /memory/{id}/similar: the memories a stored memory may replace, asked after its write.

A write's answer names them (`similar`), but only the writer sees that answer: the person who
reviews the write later (the console's queue) asks again here. The same look-up as a write's
(`repeats.similar_to`, labelled by `relations`), against the index as it is now, with each memory
read from the table, so the answer carries what a reviewer needs to judge it (its content and
dates) and leaves out what the index still holds but the table no longer does: a memory deleted
or already replaced since the index was published.
"""

from __future__ import annotations

from typing import Any

from synapse.memory import writes
from synapse.search import repeats


def similar_memories(mind_id: str, memory_id: str) -> dict[str, Any]:
    """`{"id", "similar": [{id, key, similarity, relation, memory}]}`, most similar first, or
    `similar_unavailable: true` (and no `similar`) when the model failed; 404 for an unknown id."""
    memory = writes.read_by_id(mind_id, memory_id)
    (found,) = repeats.similar_to(mind_id, [memory])
    if found is None:
        return {"id": memory.id, "similar_unavailable": True}
    shown = []
    for candidate in found:
        current = writes.find_by_id(mind_id, candidate["id"])
        if current is None or current.superseded_by is not None:
            continue  # gone or replaced since the index was published: nothing to decide
        shown.append({**candidate, "memory": current.public()})
    return {"id": memory.id, "similar": shown}
