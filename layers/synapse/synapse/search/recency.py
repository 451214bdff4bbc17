"""Of two hits about the same subject, the newer first (issue 42): without any `supersedes`, a fact
and its newer value ("Works at Acme" / "Now works at Globex") can both be found, and the current
one must come first.

One step after fusion, over the page's hits: for each hit, the other hit of the page it is most
`related` to (`relations.score`: cosine weighed with shared key and subject words, the write-time
labelling's rule); when that one ranks above it and is older (`occurred_at`, else `updated_at`),
the newer takes its place, unless it matches at most half as much of the question's words
(`_answers_less`). Best-match searches that ran the meaning side only; a hit related to nothing on
the page keeps its place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from synapse.index import vectors
from synapse.index.vectors import Matrix
from synapse.memory.kinds import Memory
from synapse.search import relations


class _Hit(Protocol):
    @property
    def memory(self) -> Memory: ...
    @property
    def coverage(self) -> float: ...


def _answers_less(newer: _Hit, older: _Hit) -> bool:
    """Whether the newer hit matches the question's words, but at most half as much of them as the
    older: then it is another fact that shares a word, not the older one's new value (an update
    says its value in other words, often none of the question's: it is found by meaning)."""
    return 0 < newer.coverage <= older.coverage / 2


def _when(memory: Memory) -> str:
    return memory.occurred_at or memory.updated_at


# How related two hits of one search must be for the newer to move up: far above a write's
# `related` (RELATED_SCORE). A conversation's turns and a person's facts share names and topics
# without one being the other's newer value: measured (bench/questions.py, hybrid MRR, and
# bench/updates.py, newer above older) at 0.5: conversation 0.664 -> 0.593, stems 0.852 -> 0.791,
# updates 0.30 -> 0.79; at 0.8: conversation 0.614; at 1.0: conversation and paraphrases unchanged,
# stems 0.845, updates unchanged (0.30). Until a rule separates them, the sets that exist win: the
# step moves only near-certain pairs, and `supersedes` is how a replaced fact leaves search.
RECENCY_SCORE = 1.0


def _partner(at: int, memories: Sequence[Memory], cosines: list[list[float]]) -> int | None:
    """The hit `at` is most related to, if any is (RECENCY_SCORE or a repeat's cosine)."""
    mine = memories[at]
    best, best_score = None, RECENCY_SCORE
    for other, memory in enumerate(memories):
        if other == at:
            continue
        candidate = relations.Candidate(memory.id, memory.key, memory.content, cosines[at][other])
        value = relations.score(mine.key, mine.content, candidate)
        if value >= best_score or candidate.similarity >= relations.REPEAT_SIMILARITY:
            best, best_score = other, max(value, best_score)
    return best


def newer_related_first[H: _Hit](hits: list[H], matrix: Matrix | None) -> list[H]:
    """`hits` with each newer hit moved above the older hit it is most related to."""
    rows = [matrix.row_of(h.memory.id) for h in hits] if matrix is not None else []
    if matrix is None or len(hits) < 2 or any(r is None for r in rows):
        return hits
    block = matrix.vectors[[r for r in rows if r is not None]]
    cosines = (block @ block.T).tolist()
    memories = [h.memory for h in hits]
    order = list(range(len(hits)))
    for newer in range(len(hits)):
        older = _partner(newer, memories, cosines)
        if older is None or _when(memories[newer]) <= _when(memories[older]):
            continue
        if _answers_less(hits[newer], hits[older]):
            continue
        a, b = order.index(older), order.index(newer)
        if a < b:
            order[a], order[b] = newer, older
    return [hits[i] for i in order]


# ---------------------------------------------------------------- near-duplicates in a whole ranking
# Of two near-duplicates that match as much of a question, the more recently updated first: applied
# by `fusion.after_fusion` to the whole ranking, so that pages still add up.
DUPLICATE_SIMILARITY = vectors.REPEAT_SIMILARITY
# A correction answers the question about as well as the fact it corrects ("which car does he
# drive?": 0.465 to `car` "Drives a 2019 Tesla…", 0.379 to `new_car` "Drives a 2024 BMW i4 now…");
# two turns of one conversation on a topic are near each other too, but the one that answers is
# clearly closer to the question (0.69 against 0.57, 0.75 against 0.48: bench/data/conversation.json).
AS_CLOSE = 0.1


def newer_first(
    ids: list[str],
    updated: list[str],
    matched: list[int],
    similarity: list[float],
    matrix: Matrix | None,
) -> list[int]:
    """The order of a ranking's hits (indexes into `ids`) once, of two near-duplicates (cosine >=
    DUPLICATE_SIMILARITY) that match as many of the query's terms (`matched`) and are about as close
    to the question (`similarity`, AS_CLOSE), the more recently updated has taken the better of
    their two places: a fact and its correction, not two turns of a conversation of which one holds
    more of what was asked. Only the hits with a near-duplicate among them are compared pairwise."""
    order = list(range(len(ids)))
    if matrix is None or len(ids) < 2:
        return order
    rows = [matrix.row_of(i) for i in ids]
    present = [i for i, r in enumerate(rows) if r is not None]
    if len(present) < 2:
        return order
    block = matrix.vectors[[rows[i] for i in present]]
    close = (block @ block.T) >= DUPLICATE_SIMILARITY
    paired = close.sum(axis=1) > 1  # itself, and at least one other
    in_block = {hit: at for at, hit in enumerate(present) if paired[at]}
    places = [at for at in order if at in in_block]  # positions whose hit has a near-duplicate
    moving = list(places)
    for a in range(len(moving)):
        for b in range(a + 1, len(moving)):
            first, second = moving[a], moving[b]
            same_evidence = (
                matched[first] == matched[second] and similarity[second] >= similarity[first] - AS_CLOSE
            )
            if (
                same_evidence
                and close[in_block[first], in_block[second]]
                and updated[second] > updated[first]
            ):
                moving[a], moving[b] = second, first
    for place, hit in zip(places, moving, strict=True):
        order[place] = hit
    return order
