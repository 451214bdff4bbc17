"""A fact's newer value, wherever the question's own candidates leave it: the first hits bring the
memory that updates them into the ranking, and `recency.newer_values_first` places it above them.

"Where does he live now?" finds "Lives at 14 Elm Street, Portland"; "Moved to 22 Harbour Road,
Seattle last month", written weeks later, shares no word with the question and is 0.17 from it in
meaning, so no pool of the question's holds it, and the agent that passed no `supersedes` was given
the old address alone. It tells a life event as a change (`relations.tells_event`: a move lends
the words of where one lives) and is 0.41 alike to the address. So the memories of a generation
that tell one are read once (`readers.derived`, beside the vector matrix); those within
CANDIDATE_FLOOR of one of the ranking's first PULL_FROM hits are weighed with the ranking's first
`recency.NEWER_VALUE_POOL` hits by the rules `recency.newer_values` applies to the ranking, and
one paired with the hit as its newer value joins the ranking with the hit's score.
"""

import sqlite3
from collections.abc import Callable
from typing import Any, NamedTuple

from synapse.index import readers
from synapse.index.vectors import Matrix
from synapse.search import recency, relations
from synapse.search.candidates import AFTER_THE_WORDS, Candidate, Row
from synapse.search.filters import SearchFilters
from synapse.search.recency import Written

PULL_FROM = 3
_EVENTS_SQL = (
    "SELECT d.id, coalesce(f.raw_content, f.content) FROM fts f JOIN docs d ON d.rowid = f.rowid"
    " WHERE fts MATCH ? AND d.deleted = 0"
)
_READ_SQL = (
    "SELECT d.rowid, d.id, d.category, d.key, d.updated_at, coalesce(f.raw_content, f.content), {since}"
    " FROM docs d JOIN fts f ON f.rowid = d.rowid WHERE d.deleted = 0 AND d.rowid IN ({marks}){filters}"
)


class _Events(NamedTuple):
    """A generation's memories that tell a life event as a change: their matrix rows and vectors."""

    rows: list[int]
    vectors: Any  # numpy float32 (len(rows), DIMS)

    @property
    def nbytes(self) -> int:  # what `readers` counts against the cache's bound
        return int(self.vectors.nbytes) + 8 * len(self.rows)


def with_newer_values(
    db: sqlite3.Connection,
    ranked: list[Candidate],
    matrix: Matrix,
    filters_now: tuple[SearchFilters, str],
    similarity_of: Callable[[str], float | None],
) -> list[Candidate]:
    """`ranked` (fused, in order) with the newer values of its first hits that it did not hold, each
    placed right after the hit it updates, with its score."""
    events: _Events = readers.derived(db, "life_events", lambda _: _life_events(db, matrix))
    heads = [(c, at) for c in ranked[:PULL_FROM] if (at := matrix.row_of(c.row.id)) is not None]
    if not events.rows or not heads:
        return ranked
    near = events.vectors @ matrix.vectors[[at for _, at in heads]].T  # (events, heads)
    held = {c.row.id for c in ranked}
    outside = {
        events.rows[e]
        for e, h in zip(*(near >= relations.CANDIDATE_FLOOR).nonzero(), strict=True)
        if events.rows[e] != heads[h][1] and matrix.ids[events.rows[e]] not in held
    }
    if not outside:
        return ranked
    pool = [c.row for c in ranked[: recency.NEWER_VALUE_POOL] if matrix.row_of(c.row.id) is not None]
    read = _read(db, matrix, outside, filters_now)
    if not read:
        return ranked
    known = recency.written(db, [row.rowid for row in pool])
    group = [*(row for row in pool if row.rowid in known), *(row for row, _ in read.values())]
    said = [known[row.rowid] if row.rowid in known else read[row.rowid][1] for row in group]
    block = matrix.vectors[[matrix.row_of(row.id) for row in group]]
    pairs = recency.newer_values(said, (block @ block.T).tolist())
    by_id = {c.row.id: c for c in ranked[:PULL_FROM]}
    pulled = [
        Candidate(by_id[group[older].id].fused, AFTER_THE_WORDS, group[newer], similarity_of(group[newer].id))
        for newer, older in pairs.items()
        if group[newer].rowid in read
        and group[older].id in by_id
        and relations.said_by_event(
            said[newer].content, relations.subject_of(said[older].key, said[older].content).words
        )
    ]
    if not pulled:
        return ranked
    return sorted([*ranked, *pulled], key=lambda c: (-c.fused, c.lexical_at, c.row.id))


def _life_events(db: sqlite3.Connection, matrix: Matrix) -> _Events:
    """The generation's memories that tell a life event as a change (`relations.tells_event` and
    `may_say_update`: "Moved to…", "Relocated to…"), the ones `recency.newer_values` can pair as
    newer: what can be pulled. Read once per opened generation, with its vector matrix."""
    rows = [
        at
        for memory_id, content in db.execute(_EVENTS_SQL, [relations.EVENT_TERMS])
        if relations.tells_event(content or "")
        and relations.may_say_update(content or "")
        and (at := matrix.row_of(memory_id)) is not None
    ]
    return _Events(rows, matrix.vectors[rows])


def _read(
    db: sqlite3.Connection, matrix: Matrix, rows: set[int], filters_now: tuple[SearchFilters, str]
) -> dict[int, tuple[Row, Written]]:
    """{docs rowid: (its candidate row, what `recency.newer_values` reads)} of the memories at these
    matrix rows that the filters leave in."""
    rowids = [int(matrix.rowids[at]) for at in rows]
    where, params = filters_now[0].sql(filters_now[1])
    sql = _READ_SQL.format(since=recency.since_sql(db), marks=", ".join("?" * len(rowids)), filters=where)
    return {
        r[0]: (Row(r[0], r[1], r[2], r[3], r[4], 0.0, 0, None), Written(r[3] or "", r[5] or "", r[6] or ""))
        for r in db.execute(sql, [*rowids, *params])
    }
