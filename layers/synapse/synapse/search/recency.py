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

from synapse.memory.kinds import Memory
from synapse.search import relations
from synapse.search.vectors import Matrix


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
