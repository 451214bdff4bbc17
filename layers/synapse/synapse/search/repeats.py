"""Memories that know when they repeat: a write whose content means nearly what another memory of the
mind says, under another key, is answered with those memories (`similar`), so the agent updates the
one it meant instead of keeping two versions of a fact.

Read from the mind's published index generation (read-only, as search reads it: EFS in AWS) and its
vector matrix; the model is loaded on the first write that needs it, never at import, so the store
functions' cold start is unchanged. A mind without an index, or an index without vectors yet, has
nothing to compare with: no `similar`. The memory itself (the index may hold an older version) is
never its own repeat.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from synapse.core.observability import logger
from synapse.memory.kinds import Memory
from synapse.search import relations, schema, vectors
from synapse.search.readers import reader

SIMILAR_THRESHOLD = vectors.REPEAT_SIMILARITY
MAX_SIMILAR = 3
CANDIDATES = 10  # the nearest memories `relations` weighs (a write names at most MAX_SIMILAR)


def _served(memory: Memory) -> bool:
    """The model reads English: texts in other languages look alike to it, whatever they say."""
    return vectors.serves(memory.content)


def similar_to(mind_id: str, memories: Sequence[Memory]) -> list[list[dict[str, Any]]]:
    """For each memory (all of `mind_id`), up to MAX_SIMILAR `{id, key, similarity, relation}` of
    other memories of the mind's index it may replace (`relations`), most similar first."""
    found: list[list[dict[str, Any]]] = [[] for _ in memories]
    wanted = [at for at, memory in enumerate(memories) if _served(memory)]
    if not wanted:
        return found
    try:
        db = reader(mind_id)
        matrix = vectors.matrix_of(db) if db is not None else None
        if db is None or matrix is None or not len(matrix.ids):
            return found
        model = vectors.embedder()
        if model is None:
            return found
        texts = [
            vectors.embedded_text(m.key, m.content, ", ".join(m.tags))
            for m in (memories[at] for at in wanted)
        ]
        embedded = model.embed(texts)
    except Exception:  # a write never fails for its hint: it is stored, without `similar`
        logger.exception("similar memories could not be looked up", extra={"mind_id": mind_id})
        return found
    import numpy as np

    scores = np.asarray(matrix.vectors @ np.asarray(embedded, dtype=np.float32).T, dtype=np.float32)
    near: list[list[tuple[str, float]]] = [[] for _ in memories]
    for column, at in enumerate(wanted):
        memory = memories[at]
        column_scores = scores[:, column]
        take = min(len(column_scores), CANDIDATES + len(memories) + 1)
        top = (
            np.argpartition(-column_scores, take - 1)[:take] if take < len(column_scores) else np.arange(take)
        )
        for row in sorted(top.tolist(), key=lambda r: -float(column_scores[r])):
            similarity = float(column_scores[row])
            if similarity < relations.CANDIDATE_FLOOR:
                break
            if matrix.ids[row] != memory.id:
                near[at].append((matrix.ids[row], similarity))
    texts_of = _current_texts(db, {memory_id for hints in near for memory_id, _ in hints})
    for at in wanted:
        candidates = [
            relations.Candidate(memory_id, *texts_of[memory_id], similarity)
            for memory_id, similarity in near[at]
            if memory_id in texts_of
        ]
        found[at] = relations.labelled(memories[at].key, memories[at].content, candidates, MAX_SIMILAR)
    return found


def _current_texts(db: Any, ids: set[str]) -> dict[str, tuple[str, str]]:
    """(key, content) of the memories the index holds live and not replaced, by id: a replaced one is
    not named again (it was already)."""
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    current = " AND d.superseded_by IS NULL" if schema.has_superseded_column(db) else ""
    sql = _TEXTS_SQL.format(marks=marks, current=current)
    return {memory_id: (key, content) for memory_id, key, content in db.execute(sql, sorted(ids))}


_TEXTS_SQL = (
    "SELECT d.id, d.key, coalesce(f.raw_content, f.content) FROM docs d JOIN fts f ON f.rowid = d.rowid"
    " WHERE d.deleted = 0 AND d.id IN ({marks}){current}"
)
