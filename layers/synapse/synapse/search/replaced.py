"""A replaced memory's words find the memory that replaced it.

A search leaves replaced memories out (`superseded_by`, SPEC: a write's `supersedes`), but a
question in the old value's words asks for the current one, which may share none of them: "Where
does he live now?" matches "Lives at 14 Elm Street", replaced by "Moved to 22 Harbour Road, Seattle
last month" (0.18 from the question in meaning, no shared word). Left out, the old value took the
answer with it: the agent that passed `supersedes` got no address at all (bench/updates.py). So the
replaced memories the question's words match (the first POOL) stand for the memories now current in
their chains of `superseded_by`, each with the score its replaced memory earns (the better one
where two stand for the same); a current memory the filters leave out stands for none.

Only a generation holding a replaced memory pays for it (one more lexical query, replaced rows
only): whether it holds one is read from the partial index `docs_replaced`, one step.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from synapse.search.candidates import AFTER_THE_WORDS, Candidate, Row, lexical_row
from synapse.search.filters import SearchFilters
from synapse.search.query import Query
from synapse.search.ranking import coverage_rows

POOL = 10
MAX_CHAIN = 8  # a replacement replaced again, and again: far more than any real chain
_ANY_SQL = "SELECT 1 FROM docs WHERE superseded_by IS NOT NULL LIMIT 1"
_NEXT_SQL = "SELECT id, superseded_by FROM docs WHERE deleted = 0 AND id IN ({marks})"
_CURRENT_SQL = (
    "SELECT d.rowid, d.id, d.category, d.key, d.updated_at FROM docs d"
    " WHERE d.deleted = 0 AND d.id IN ({marks}){filters}"
)


class _ReplacedOnly(SearchFilters):
    """The query's filters, on replaced memories only."""

    def sql(self, now: str) -> tuple[str, list[Any]]:
        where, params = SearchFilters.sql(self._replace(include_superseded=True), now)
        return where + " AND d.superseded_by IS NOT NULL", params


def stand_ins(
    db: sqlite3.Connection,
    query: Query,
    filters: SearchFilters,
    now: str,
    score_of: Callable[[Row], float],
) -> dict[str, tuple[Row, float]]:
    """{id: (row, score)} of the current memories the question's words found through the memories
    they replaced (`score_of` a replaced memory's row, as the pool scores its lexical hits)."""
    if filters.include_superseded or not query.clauses or db.execute(_ANY_SQL).fetchone() is None:
        return {}
    found, _ = coverage_rows(db, query, _ReplacedOnly(*filters), POOL, 0, now)
    scores: dict[str, float] = {}
    for row in (lexical_row(f) for f in found):
        scores[row.id] = max(scores.get(row.id, float("-inf")), score_of(row))
    current = _current(db, list(scores))
    standing: dict[str, float] = {}
    for replaced, now_id in current.items():
        standing[now_id] = max(standing.get(now_id, float("-inf")), scores[replaced])
    if not standing:
        return {}
    where, params = filters.sql(now)
    sql = _CURRENT_SQL.format(marks=", ".join("?" * len(standing)), filters=where)
    return {
        r[1]: (Row(r[0], r[1], r[2], r[3], r[4], 0.0, 0, None), standing[r[1]])
        for r in db.execute(sql, [*standing, *params])
    }


def join(
    pool: dict[str, Candidate],
    standing: dict[str, tuple[Row, float]],
    similarity_of: Callable[[str], float | None],
) -> None:
    """The current memories into the pool (placed after the words' hits, as a rescue is), or their
    scores raised to what they stand for."""
    for memory_id, (row, score) in standing.items():
        held = pool.get(memory_id)
        if held is None:
            pool[memory_id] = Candidate(score, AFTER_THE_WORDS, row, similarity_of(memory_id))
        elif held.fused < score:
            pool[memory_id] = held._replace(fused=score)


def _current(db: sqlite3.Connection, replaced: list[str]) -> dict[str, str]:
    """{replaced id: the id now current in its chain of `superseded_by`} (none for a chain that
    ends in a deleted memory or runs past MAX_CHAIN)."""
    at = {memory_id: memory_id for memory_id in replaced}
    current: dict[str, str] = {}
    for _ in range(MAX_CHAIN):
        if not at:
            break
        following = set(at.values())
        marks = ", ".join("?" * len(following))
        by = dict(db.execute(_NEXT_SQL.format(marks=marks), list(following)).fetchall())
        nxt: dict[str, str] = {}
        for start, memory_id in at.items():
            if memory_id not in by:
                continue  # deleted, or not indexed yet
            if by[memory_id] is None:
                current[start] = memory_id
            else:
                nxt[start] = by[memory_id]
        at = nxt
    return current
