"""Ranked hits from one generation: BM25 in FTS5, ties broken as SPEC §5 says, snippets mapped back."""

from __future__ import annotations

import operator
import sqlite3
from typing import NamedTuple

from synapse.core.observability import logger
from synapse.search.filters import SearchFilters
from synapse.search.folding import ELLIPSIS, MARK_CLOSE, MARK_OPEN, fold, restore_snippet
from synapse.search.query import Query, bad_query
from synapse.search.schema import BM25_WEIGHTS

MARKS = ("**", "**")
SNIPPET_TOKENS = 16

_WEIGHTS = ", ".join(str(w) for w in BM25_WEIGHTS)
# FTS5 sorts by `rank` itself (no SQLite sorter). Rows are stepped one page at a time from one
# statement (no LIMIT): a result column, and so a snippet, is computed only for a row actually read,
# and a tie at the page boundary reads on from the same statement instead of ranking every match again.
RANKED_SQL = (
    "SELECT fts.rank, d.priority_rank, d.updated_at, d.id, d.category, d.key,"
    # One snippet per row: with the final marks, or where folding changed the text (raw_* set) with
    # control marks, to be mapped onto the original.
    " CASE WHEN coalesce(fts.raw_content, fts.raw_key, fts.raw_tags) IS NULL"
    " THEN snippet(fts, -1, ?, ?, ?, ?) ELSE snippet(fts, -1, ?, ?, ?, ?) END,"
    " fts.raw_content, fts.raw_key, fts.raw_tags"
    " FROM fts JOIN docs d ON d.rowid = fts.rowid"
    " WHERE fts MATCH ? AND fts.rank MATCH 'bm25({w})'{filters}"
    " ORDER BY fts.rank LIMIT -1 OFFSET ?"
)


class Hit(NamedTuple):
    id: str
    category: str
    key: str
    score: float
    snippet: str


# A row of RANKED_SQL, kept a plain tuple (most rows read are never returned):
# (rank, priority_rank, updated_at, id, category, key, snippet (control marks where raw_* are set),
#  raw_content, raw_key, raw_tags). The raw_* texts are set only where folding changed a column
# (the indexed text is then `fold(raw)`), so most rows need no mapping.
_Row = tuple[float, int, str, str, str, str, str | None, str | None, str | None, str | None]
_BY_ID = operator.itemgetter(3)
_BY_UPDATE = operator.itemgetter(2)
_BY_RANK_PRIORITY = operator.itemgetter(0, 1)


def _hit(row: _Row) -> Hit:
    snippet = row[6] or ""
    if row[7] is not None or row[8] is not None or row[9] is not None:
        snippet = restore_snippet(snippet, [(raw and fold(raw), raw) for raw in row[7:]], MARKS)
    return Hit(row[3], row[4], row[5], float(f"{-row[0]:.6g}"), snippet)


class _Ranked:
    """Reads rows in FTS5's order (BM25 alone) from one generation for one query."""

    def __init__(self, db: sqlite3.Connection, query: Query, filters: SearchFilters, now: str) -> None:
        where, params = filters.sql(now)
        self.db = db
        self.query = query
        self.sql = RANKED_SQL.format(w=_WEIGHTS, filters=where)
        marks = [*MARKS, "…", SNIPPET_TOKENS, MARK_OPEN, MARK_CLOSE, ELLIPSIS, SNIPPET_TOKENS]
        self.params = [*marks, query.match, *params]

    def through(self, start: int, end: int) -> list[_Row]:
        """Rows `start` to `end` and one more, and on while they tie with row `end - 1`."""
        wanted = end - start + 1
        try:
            steps = self.db.execute(self.sql, [*self.params, start])
            try:
                rows: list[_Row] = steps.fetchmany(wanted)
                while len(rows) >= wanted and rows[-1][0] == rows[wanted - 2][0]:
                    more = steps.fetchmany(wanted)
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
    return [_hit(row) for row in page], len(rows) > offset - start + limit
