"""A best-match query's candidates as `fusion` reads them from one generation, before the page is
known: the lexical rows (`ranking.coverage_rows`) and the memories most similar in meaning, then the
page's hits with their snippets."""

import sqlite3
from typing import Any, NamedTuple

from synapse.index import vectors
from synapse.search.filters import SearchFilters
from synapse.search.query import Query
from synapse.search.ranking import Hit, hits_of

SNIPPET_CHARS = 120
_DOCS_SQL = (
    "SELECT d.rowid, d.id, d.category, d.key, d.updated_at FROM docs d"
    " WHERE d.deleted = 0 AND d.rowid IN ({marks}){filters}"
)
_CONTENT_SQL = "SELECT rowid, coalesce(raw_content, content) FROM fts WHERE rowid IN ({marks})"


class Row(NamedTuple):
    """A candidate as read before the page is known (no snippet yet)."""

    rowid: int
    id: str
    category: str
    key: str
    updated_at: str
    score: float  # BM25, higher is better (0 for a semantic-only candidate)
    mask: int  # the query's clauses it matched
    lexical: Any  # its `ranking.coverage_rows` row (None: found by meaning only)


# How many lexical candidates a ranking pools (`fusion.LEXICAL_POOL`): a memory the words did not
# find (a rescue by meaning, a memory dated in the question's window) takes this place in their order.
AFTER_THE_WORDS = 100


class Candidate(NamedTuple):
    """A pooled memory as `fusion` ranks it: its fused score, where words placed it, its row."""

    fused: float
    lexical_at: int  # position in the lexical ranking (fusion.LEXICAL_POOL + for semantic-only ones)
    row: Row
    similarity: float | None


def _by_similarity_then_id(pair: tuple[Row, float]) -> tuple[float, str]:
    return -pair[1], pair[0][1]


def _snippet(content: str) -> str:
    text = " ".join(content.split())
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + "…"


def lexical_row(found: Any) -> Row:
    return Row(found[6], found[3], found[4], found[5], found[2], -found[0], found[7], found)


def semantic_rows(
    db: sqlite3.Connection,
    matrix: vectors.Matrix,
    sims: Any,
    filters: SearchFilters,
    wanted: int,
    now: str,
    floor: float,
) -> list[tuple[Row, float]]:
    """The `wanted` most similar memories over the floor passing the filters, most similar first
    (equal similarities by id, so the list never depends on how many were asked)."""
    import numpy as np

    over = int(np.count_nonzero(sims > floor)) if len(sims) else 0
    if not over:
        return []
    narrowed = filters.tag is not None or filters.category is not None or filters.priority is not None
    take = min(over, wanted * (8 if narrowed else 2))
    where, params = filters.sql(now)
    while True:
        if take < len(sims):
            top = np.argpartition(-sims, take - 1)[:take]
            edge = sims[top].min()
            top = np.flatnonzero(sims >= edge)  # every memory tying with the last one taken
        else:
            top = np.arange(len(sims))
        top = top[sims[top] > floor]
        rowids: list[int] = matrix.rowids[top].tolist()
        sql = _DOCS_SQL.format(marks=", ".join("?" * len(rowids)), filters=where)
        rows = {row[0]: row for row in db.execute(sql, [*rowids, *params])}
        # the rowids and similarities as lists, not numpy scalars one by one: this runs per candidate
        found = [
            (Row(r, rows[r][1], rows[r][2], rows[r][3], rows[r][4], 0.0, 0, None), similarity)
            for r, similarity in zip(rowids, sims[top].tolist(), strict=True)
            if r in rows
        ]
        found.sort(key=_by_similarity_then_id)
        if len(found) >= wanted or take >= over:
            return found[:wanted]
        take = min(over, take * 4)


def page_hits(db: sqlite3.Connection, query: Query, page: list[Row], weights: list[int]) -> list[Hit]:
    """The page's hits with their snippets: the lexical ones marked as lexical search marks them,
    the others the start of their content."""
    found = [r.lexical for r in page if r.lexical is not None]
    lexical = {hit.id: hit for hit in hits_of(db, query, found, weights)}
    others = [r.rowid for r in page if r.lexical is None]
    contents: dict[int, str] = {}
    if others:
        sql = _CONTENT_SQL.format(marks=", ".join("?" * len(others)))
        contents = dict(db.execute(sql, others).fetchall())
    return [
        lexical[r.id]
        if r.id in lexical
        else Hit(r.id, r.category, r.key, 0.0, _snippet(contents.get(r.rowid, "")), (), 0.0)
        for r in page
    ]
