"""Ranked hits from one generation: BM25 in FTS5, ties broken as SPEC §5 says, snippets mapped back."""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from synapse.core.observability import logger
from synapse.search.filters import SearchFilters
from synapse.search.folding import ELLIPSIS, MARK_CLOSE, MARK_OPEN, restore_snippet
from synapse.search.query import Query, bad_query
from synapse.search.schema import BM25_WEIGHTS

# Rows read past the page in the same query: a tie at the page boundary then rarely costs a second
# query, which would rank every match again (bench/search.py at 100k: p95 ratio 1.69 → 1.31).
TIE_SLACK = 10
MARKS = ("**", "**")
SNIPPET_TOKENS = 16

_WEIGHTS = ", ".join(str(w) for w in BM25_WEIGHTS)
# FTS5 sorts by `rank` itself (no SQLite sorter; snippets are made only for the rows returned).
RANKED_SQL = (
    "SELECT fts.rank, d.priority_rank, d.updated_at, d.id, d.category, d.key, snippet(fts, -1, ?, ?, ?, ?),"
    # Where folding changed the text, a second snippet with control marks to map onto the original.
    " CASE WHEN coalesce(fts.raw_content, fts.raw_key, fts.raw_tags) IS NOT NULL"
    " THEN snippet(fts, -1, ?, ?, ?, ?) END, fts.raw_content, fts.raw_key, fts.raw_tags,"
    " CASE WHEN fts.raw_content IS NOT NULL THEN fts.content END,"
    " CASE WHEN fts.raw_key IS NOT NULL THEN fts.key END,"
    " CASE WHEN fts.raw_tags IS NOT NULL THEN fts.tags END"
    " FROM fts JOIN docs d ON d.rowid = fts.rowid"
    " WHERE fts MATCH ? AND fts.rank MATCH 'bm25({w})'{filters}"
    " ORDER BY fts.rank LIMIT ? OFFSET ?"
)


class Hit(NamedTuple):
    id: str
    category: str
    key: str
    score: float
    snippet: str


class _Row(NamedTuple):
    """A row of RANKED_SQL. The raw_* and folded_* texts are set only where folding changed a column."""

    rank: float
    priority_rank: int
    updated_at: str
    id: str
    category: str
    key: str
    snippet: str | None
    marked_snippet: str | None  # cut from the folded text, with control marks
    raw_content: str | None
    raw_key: str | None
    raw_tags: str | None
    folded_content: str | None
    folded_key: str | None
    folded_tags: str | None

    def hit(self) -> Hit:
        snippet = self.snippet or ""
        if self.marked_snippet is not None:
            columns = (
                (self.folded_content, self.raw_content),
                (self.folded_key, self.raw_key),
                (self.folded_tags, self.raw_tags),
            )
            snippet = restore_snippet(self.marked_snippet, columns, MARKS)
        return Hit(self.id, self.category, self.key, float(f"{-self.rank:.6g}"), snippet)


class _Ranked:
    """Reads rows in FTS5's order (BM25 alone) from one generation for one query."""

    def __init__(self, db: sqlite3.Connection, query: Query, filters: SearchFilters, now: str) -> None:
        where, params = filters.sql(now)
        self.db = db
        self.query = query
        self.sql = RANKED_SQL.format(w=_WEIGHTS, filters=where)
        marks = (MARK_OPEN, MARK_CLOSE, ELLIPSIS)
        self.params = [*MARKS, "…", SNIPPET_TOKENS, *marks, SNIPPET_TOKENS, query.match, *params]

    def rows(self, count: int, offset: int) -> list[_Row]:
        try:
            return list(map(_Row._make, self.db.execute(self.sql, [*self.params, count, offset])))
        except sqlite3.Error as error:
            # Never expected (the expression is ours); never shown to the client either.
            logger.warning(
                "FTS5 rejected a compiled query", extra={"match": self.query.match, "error": str(error)}
            )
            raise bad_query(
                'could not be searched; use words, "exact phrases", prefix*, OR, NOT and parentheses'
            ) from None

    def through(self, start: int, end: int) -> list[_Row]:
        """Rows `start` to `end` and one more, and on while they tie with row `end - 1`.

        A few rows more than needed are read in the same query (ties are common among short
        memories), since every query pays for ranking all matches again.
        """
        wanted = end - start + 1 + TIE_SLACK
        rows = self.rows(wanted, start)
        while len(rows) == wanted and rows[-1].rank == rows[end - start - 1].rank:
            more = self.rows(wanted, start + len(rows))
            rows += more
            wanted = len(rows) if len(more) == wanted else -1
        return rows


def _in_spec_order(rows: list[_Row]) -> list[_Row]:
    """BM25, then priority, then most recently updated (then id, so the order is total)."""
    if len({r.rank for r in rows}) == len(rows):
        return rows  # no two scores are equal: FTS5's order is the order
    rows.sort(key=lambda r: r.id)
    rows.sort(key=lambda r: r.updated_at, reverse=True)  # stable: most recent first among equals
    rows.sort(key=lambda r: (r.rank, r.priority_rank))
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
    if offset > 0 and len(rows) > 1 and rows[0].rank == rows[1].rank:
        start, rows = 0, ranked.through(0, offset + limit)
    rows = _in_spec_order(rows)
    page = rows[offset - start : offset - start + limit]
    return [row.hit() for row in page], len(rows) > offset - start + limit
