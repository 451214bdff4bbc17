"""Ranked hits from one generation: BM25 in FTS5, ties broken as SPEC §5 says, snippets mapped back."""

from __future__ import annotations

import functools
import operator
import sqlite3
from typing import NamedTuple

from synapse.core.observability import logger
from synapse.search.filters import SearchFilters
from synapse.search.folding import ELLIPSIS, MARK_CLOSE, MARK_OPEN, restore_snippet
from synapse.search.query import Query, bad_query
from synapse.search.schema import BM25_WEIGHTS

MARKS = ("**", "**")
SNIPPET_TOKENS = 16
TIE_SLACK = 8

# FTS5 sorts by `rank` itself (no SQLite sorter), and ranks faster with a LIMIT. A result column,
# and so a snippet, is computed only for a row actually stepped: the LIMIT leaves TIE_SLACK rows of
# room, stepped only when ties at the page boundary need them, so a tie rarely costs a second query
# (which would rank every match again).
RANKED_SQL = (  # noqa: S608 (constants only: the values are bound)
    "SELECT fts.rank, d.priority_rank, d.updated_at, d.id, d.category, d.key, d.rowid,"
    # The snippet with the control marks; whether folding changed the row's text (then
    # the snippet, cut from the folded text, is mapped onto the original).
    " snippet(fts, -1, char({open}), char({close}), char({ellipsis}), {n}),"
    " coalesce(fts.raw_content, fts.raw_key, fts.raw_tags) IS NOT NULL"
    " FROM fts JOIN docs d ON d.rowid = fts.rowid"
    " WHERE fts MATCH ? AND fts.rank MATCH 'bm25({w})'{{filters}}"
    " ORDER BY fts.rank LIMIT ? OFFSET ?"
).format(
    open=ord(MARK_OPEN),
    close=ord(MARK_CLOSE),
    ellipsis=ord(ELLIPSIS),
    n=SNIPPET_TOKENS,
    w=", ".join(str(w) for w in BM25_WEIGHTS),
)
# The original texts of folded rows, from FTS5's content table (columns c0.. in declaration order:
# key, content, tags, raw_key, raw_content, raw_tags), read by rowid without ranking again.
_RAW_TEXTS_SQL = "SELECT id, c1, c4, c0, c3, c2, c5 FROM fts_content WHERE id IN ({marks})"


class Hit(NamedTuple):
    id: str
    category: str
    key: str
    score: float
    snippet: str


# A row of RANKED_SQL, kept a plain tuple (most rows read are never returned):
# (rank, priority_rank, updated_at, id, category, key, rowid, snippet with control marks, folded).
_Row = tuple[float, int, str, str, str, str, int, str | None, int]
_BY_ID = operator.itemgetter(3)
_BY_UPDATE = operator.itemgetter(2)
_BY_RANK_PRIORITY = operator.itemgetter(0, 1)
_new_tuple = tuple.__new__


def _hits(db: sqlite3.Connection, page: list[_Row]) -> list[Hit]:
    folded = [row[6] for row in page if row[8]]
    texts = {}
    if folded:
        sql = _RAW_TEXTS_SQL.format(marks=", ".join("?" * len(folded)))
        texts = {found[0]: found[1:] for found in db.execute(sql, folded)}
    hits = []
    for rank, _, _, memory_id, category, key, rowid, marked, _ in page:
        snippet = marked or ""
        if rowid in texts:
            content, raw_content, key_text, raw_key, tags, raw_tags = texts[rowid]
            columns = ((content, raw_content), (key_text, raw_key), (tags, raw_tags))
            snippet = restore_snippet(snippet, columns, MARKS)
        else:
            snippet = snippet.replace(MARK_OPEN, MARKS[0]).replace(MARK_CLOSE, MARKS[1])
            snippet = snippet.replace(ELLIPSIS, "…")
        # tuple.__new__ directly: a NamedTuple's own __new__ is a Python function, and this runs per hit
        hits.append(_new_tuple(Hit, (memory_id, category, key, float(f"{-rank:.6g}"), snippet)))
    return hits


@functools.lru_cache(maxsize=64)
def _ranked_sql(filters: str) -> str:
    return RANKED_SQL.format(filters=filters)


class _Ranked:
    """Reads rows in FTS5's order (BM25 alone) from one generation for one query."""

    def __init__(self, db: sqlite3.Connection, query: Query, filters: SearchFilters, now: str) -> None:
        where, params = filters.sql(now)
        self.db = db
        self.query = query
        self.sql = _ranked_sql(where)
        self.params = [query.match, *params]

    def through(self, start: int, end: int) -> list[_Row]:
        """Rows `start` to `end` and one more, and on while they tie with row `end - 1`."""
        wanted = end - start + 1
        limit = wanted + TIE_SLACK
        rows = self._rows(limit, start, wanted)
        while len(rows) == limit and rows[-1][0] == rows[wanted - 2][0]:
            limit *= 4  # a tie longer than the slack: rank again, with room for it
            rows = self._rows(limit, start, wanted)
        return rows

    def _rows(self, limit: int, start: int, wanted: int) -> list[_Row]:
        """`wanted` rows from `start`, and on (up to `limit`) while the last ties with row `wanted - 2`."""
        try:
            steps = self.db.execute(self.sql, [*self.params, limit, start])
            try:
                rows: list[_Row] = steps.fetchmany(wanted)
                while len(rows) >= wanted and len(rows) < limit and rows[-1][0] == rows[wanted - 2][0]:
                    more = steps.fetchmany(min(4, limit - len(rows)))
                    if not more:
                        break
                    rows += more
            finally:
                steps.close()
        except sqlite3.Error as error:
            # Never expected (the expression is ours); never shown to the client either.
            logger.warning(
                "FTS5 rejected a compiled query", extra={"match": self.query.match, "error": str(error)}
            )
            raise bad_query(
                'could not be searched; use words, "exact phrases", prefix*, OR, NOT and parentheses'
            ) from None
        return rows


def _in_spec_order(rows: list[_Row]) -> list[_Row]:
    """BM25, then priority, then most recently updated (then id, so the order is total)."""
    if len({r[0] for r in rows}) == len(rows):
        return rows  # no two scores are equal: FTS5's order is the order
    rows.sort(key=_BY_ID)
    rows.sort(key=_BY_UPDATE, reverse=True)  # stable: most recent first among equals
    rows.sort(key=_BY_RANK_PRIORITY)
    return rows


def index_hits(
    db: sqlite3.Connection, query: Query, filters: SearchFilters, limit: int, offset: int, now: str
) -> tuple[list[Hit], bool]:
    """Hits `offset` to `offset + limit` of one generation in SPEC order, and whether more exist.

    FTS5 orders by BM25 (key and tags weigh more); equal scores are ordered here by priority and
    recency. A page is read together with the row before it and every row tying with its last one,
    so a group of equal scores split by a page boundary is read whole (from the start if needed).
    """
    ranked = _Ranked(db, query, filters, now)
    start = max(offset - 1, 0)
    rows = ranked.through(start, offset + limit)
    if offset > 0 and len(rows) > 1 and rows[0][0] == rows[1][0]:
        start, rows = 0, ranked.through(0, offset + limit)
    rows = _in_spec_order(rows)
    page = rows[offset - start : offset - start + limit]
    return _hits(db, page), len(rows) > offset - start + limit
