"""Memories that know when they repeat: a write whose content means nearly what another memory of the
mind says, under another key, is answered with those memories (`similar`), so the agent updates the
one it meant instead of keeping two versions of a fact.

Read from the mind's published index generation (read-only, as search reads it: EFS in AWS) and its
vector matrix; the model is loaded on the first write that needs it, never at import, so the store
functions' cold start is unchanged. A mind without an index, or an index without vectors yet, has
no memories to compare with. The memory itself (the index may hold an older version) is never its
own repeat.

A mind without an index yet (its first writes) gets no `similar`, and nothing is embedded on its
write path. What a write embeds is kept in the process a while (`vectors.embedded_once`): an
indexer in the same process (the local runner) takes those vectors instead of embedding the texts
again; on AWS, where the indexer is another function, it embeds them itself (CPU is ~40x cheaper
than carrying the vector in the item would be in write units: docs/search.md).

Memories written together (one batch) are compared with each other here, not through the index: the
indexer may or may not have published some of them by the time the answer is made, and the answer
must not depend on that race. A batch-mate is named only when it says the same thing again
(`BATCH_MATE_SIMILARITY`): the turns of one conversation, written together, are about one topic
(81 of the first 100 turns of bench/data/conversation.json have a turn at cosine >= 0.6) and none
of them is news to the writer that sent them all; the same fact sent twice under two keys is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from synapse import embedding
from synapse.core.observability import logger
from synapse.index import schema, vectors
from synapse.index.readers import reader
from synapse.memory.changes import WriteFields
from synapse.memory.kinds import Memory
from synapse.search import relations

SIMILAR_THRESHOLD = vectors.REPEAT_SIMILARITY
# Cosine from which two memories of one batch say the same thing again (an exact or near-verbatim
# restatement): of the labelled restatements (bench/data/similar_pairs.json) only the near-verbatim
# reach it, and no two turns of bench/data/conversation.json do (its closest pair: 0.92).
BATCH_MATE_SIMILARITY = 0.95
MAX_SIMILAR = 3
CANDIDATES = 10  # the nearest memories `relations` weighs (a write names at most MAX_SIMILAR)
# Read from the index beyond CANDIDATES: rows of memories removed or replaced since, which the
# matrix may still hold (their texts are not looked up, so they are not named).
SPARE_CANDIDATES = 2


def _text(memory: Memory) -> str:
    return vectors.embedded_text(memory.key, memory.content, ", ".join(memory.tags))


def _served(memory: Memory) -> bool:
    """The model reads English: texts in other languages look alike to it, whatever they say."""
    return vectors.serves(memory.content)


def _similar_to(mind_id: str, memories: Sequence[Memory]) -> list[list[dict[str, Any]] | None]:
    """For each memory (all of `mind_id`, written together, in order), up to MAX_SIMILAR
    `{id, key, similarity, relation}`, most similar first: other memories of the mind's index it may
    replace (`relations`: the batch's own memories excepted), and earlier batch-mates that say the
    same again. None for a memory whose repeats could not be looked up (the model or the index
    failed: logged, counted)."""
    found: list[list[dict[str, Any]] | None] = [[] for _ in memories]
    wanted = [at for at, memory in enumerate(memories) if _served(memory)]
    if not wanted:
        return found
    try:
        db = reader(mind_id)
        model = vectors.embedder() if db is not None else None
        if db is None or model is None:  # a mind's first writes: nothing to compare with, nothing embedded
            return found
        embedded = vectors.embedded_once(model, [_text(memories[at]) for at in wanted])
        matrix = vectors.matrix_of(db)
    except Exception as error:  # a write never fails for its hint: it is stored, without `similar`
        if not isinstance(error, embedding.EmbeddingError):
            logger.exception("similar memories could not be looked up", extra={"mind_id": mind_id})
        vectors.model_failed(vectors.SIMILAR_UNAVAILABLE, error, len(wanted), mind_id=mind_id)
        failed = set(wanted)
        return [None if at in failed else [] for at in range(len(memories))]
    import numpy as np

    queries = np.asarray(embedded, dtype=np.float32)
    batch_ids = {memory.id for memory in memories}
    candidates: list[list[tuple[float, str, str]]] = [[] for _ in memories]  # (similarity, id, key)
    if matrix is not None and len(matrix.ids):
        _from_index(matrix, queries, wanted, batch_ids, candidates)
    _from_batch(memories, queries, wanted, candidates)
    texts = _current_texts(
        db, {other for found_here in candidates for _, other, key in found_here if not key}
    )
    texts.update({memory.id: (memory.key, memory.content) for memory in memories})
    for at in wanted:
        weighed = [
            relations.Candidate(other, *texts[other], similarity)
            for similarity, other, _ in candidates[at]
            if other in texts
        ]
        found[at] = relations.labelled(memories[at].key, memories[at].content, weighed, MAX_SIMILAR)
    return found


# Threads that embed a batch's texts while its DynamoDB transactions run (`embed_ahead`): as many as
# the local runner serves requests at once (a Lambda serves one).
AHEAD_THREADS = 4
_workers: list[ThreadPoolExecutor] = []


def embed_ahead(mind_id: str, writes: Sequence[WriteFields]) -> Callable[[], None]:
    """Start embedding the texts `writes` will store (what `similar_to` compares) on a worker thread,
    while the store writes them; returns what waits for it. ONNX Runtime lets go of the GIL while it
    runs, so the transactions go on meanwhile. A mind without an index embeds nothing (as in
    `similar_to`); a failure here is left for `similar_to`, which meets it again and says so."""
    texts = [
        vectors.embedded_text(w.key, w.content, ", ".join(w.tags))
        for w in writes
        if vectors.serves(w.content)
    ]
    if not texts:
        return _nothing
    if not _workers:
        _workers.append(ThreadPoolExecutor(AHEAD_THREADS, thread_name_prefix="synapse-similar-ahead"))
    return _waiting(_workers[0].submit(_embed_if_indexed, mind_id, texts))


def _nothing() -> None:
    return None


def _waiting(future: Future[None]) -> Callable[[], None]:
    def wait() -> None:
        future.exception()  # waits, and raises nothing: `similar_to` meets a failure again and reports it

    return wait


def _embed_if_indexed(mind_id: str, texts: list[str]) -> None:
    if reader(mind_id) is None:
        return
    model = vectors.embedder()
    if model is not None:
        vectors.embedded_once(model, texts)


class _SimilarTo:
    """`similar_to(mind_id, memories)`; `similar_to.ahead(mind_id, writes)` starts on them before they
    are stored (`memory.repeats.started_ahead`)."""

    def __call__(self, mind_id: str, memories: Sequence[Memory], /) -> list[list[dict[str, Any]] | None]:
        return _similar_to(mind_id, memories)

    ahead = staticmethod(embed_ahead)


similar_to = _SimilarTo()


def _from_index(
    matrix: vectors.Matrix,
    queries: Any,
    wanted: list[int],
    batch_ids: set[str],
    candidates: list[list[tuple[float, str, str]]],
) -> None:
    """The index's nearest memories (CANDIDATES and SPARE_CANDIDATES) from
    `relations.CANDIDATE_FLOOR`, the batch's own left out (their texts looked up later): the whole
    batch in one matrix product, the batch's own rows masked before the nearest are taken, so each
    memory's `relations` weighs a dozen candidates, not a batch more."""
    import numpy as np

    scores = np.asarray(matrix.vectors @ queries.T, dtype=np.float32)
    own = [row for row in map(matrix.row_of, batch_ids) if row is not None]
    if own:
        scores[own, :] = -np.inf
    take = min(len(matrix.ids), CANDIDATES + SPARE_CANDIDATES)
    for column, at in enumerate(wanted):
        column_scores = scores[:, column]
        top = np.arange(take) if take == len(column_scores) else np.argpartition(-column_scores, take)[:take]
        for row in top.tolist():
            similarity = float(column_scores[row])
            if similarity >= relations.CANDIDATE_FLOOR:
                candidates[at].append((similarity, matrix.ids[row], ""))


Candidates = list[list[tuple[float, str, str]]]  # per memory: (similarity, id, key or "" to look up)


def _from_batch(memories: Sequence[Memory], queries: Any, wanted: list[int], candidates: Candidates) -> None:
    """Earlier batch-mates that say the same again (BATCH_MATE_SIMILARITY), named on the later one:
    as if the batch had been written one memory after another."""
    if len(wanted) < 2:
        return
    scores = queries @ queries.T
    for column, at in enumerate(wanted):
        for earlier in range(column):
            mate = memories[wanted[earlier]]
            similarity = float(scores[column, earlier])
            if similarity >= BATCH_MATE_SIMILARITY and mate.id != memories[at].id:
                candidates[at].append((similarity, mate.id, mate.key))


def _current_texts(db: Any, ids: set[str]) -> dict[str, tuple[str, str]]:
    """(key, content) of the memories the index holds live and not replaced, by id: a replaced one is
    not named again (it was already), a deleted one not at all."""
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
