"""Ranked hits from one generation: BM25 in FTS5, ties broken as SPEC §5 says, snippets mapped back."""

from __future__ import annotations

import functools
import operator
import sqlite3
from typing import Any, NamedTuple

from synapse.core.errors import BadRequest
from synapse.core.observability import logger
from synapse.search.filters import SearchFilters
from synapse.search.folding import ELLIPSIS, MARK_CLOSE, MARK_OPEN, restore_snippet
from synapse.search.query import Query, bad_query
from synapse.search.schema import BM25_WEIGHTS

MARKS = ("**", "**")
SNIPPET_TOKENS = 16
TIE_SLACK = 8

# The snippet with the control marks, and whether folding changed the row's text (then the snippet,
# cut from the folded text, is mapped onto the original).
_SNIPPET = (
    f"snippet(fts, -1, char({ord(MARK_OPEN)}), char({ord(MARK_CLOSE)}), char({ord(ELLIPSIS)}),"
    f" {SNIPPET_TOKENS}), coalesce(fts.raw_content, fts.raw_key, fts.raw_tags) IS NOT NULL"
)
_BM25 = "bm25(" + ", ".join(str(w) for w in BM25_WEIGHTS) + ")"
# Every clause required: FTS5 sorts by `rank` itself (no SQLite sorter), and ranks faster with a
# LIMIT. A result column, and so a snippet, is computed only for a row actually stepped: the LIMIT
# leaves TIE_SLACK rows of room, stepped only when ties at the page boundary need them, so a tie
# rarely costs a second query (which would rank every match again). Constants only: values are bound.
RANKED_SQL = (
    f"SELECT fts.rank, d.priority_rank, d.updated_at, d.id, d.category, d.key, d.rowid, {_SNIPPET}"  # noqa: S608
    f" FROM fts JOIN docs d ON d.rowid = fts.rowid WHERE fts MATCH ? AND fts.rank MATCH '{_BM25}'"
    "{filters} ORDER BY fts.rank LIMIT ? OFFSET ?"
)
# Best match: every candidate with the mask of the query's clauses it matches (bit i: clause i), in
# coverage order. Each clause is a `rowid IN (subquery)`, which SQLite runs once per statement (it
# keeps the rowids in an ephemeral index), so a clause costs one more doclist read; the CTE is
# materialized so each candidate's mask is computed once; snippets are cut for the page only.
COVERAGE_SQL = (
    "WITH hits AS MATERIALIZED (SELECT fts.rowid AS rowid, fts.rank AS rank, {mask} AS mask"  # noqa: S608
    f" FROM fts WHERE fts MATCH ? AND fts.rank MATCH '{_BM25}')"
    " SELECT h.rank, d.priority_rank, d.updated_at, d.id, d.category, d.key, d.rowid, h.mask"
    " FROM hits h JOIN docs d ON d.rowid = h.rowid WHERE 1{filters}"
    " ORDER BY {covered} DESC, h.rank, d.priority_rank, d.updated_at DESC, d.id LIMIT ? OFFSET ?"
)
_CLAUSE = "(SELECT rowid FROM fts WHERE fts MATCH ?)"
_SNIPPETS_SQL = f"SELECT fts.rowid, {_SNIPPET} FROM fts WHERE fts MATCH ? AND fts.rowid IN ({{marks}})"  # noqa: S608
# The original texts of folded rows, from FTS5's content table (columns c0.. in declaration order:
# key, content, tags, raw_key, raw_content, raw_tags), read by rowid without ranking again.
_RAW_TEXTS_SQL = "SELECT id, c1, c4, c0, c3, c2, c5 FROM fts_content WHERE id IN ({marks})"


class Hit(NamedTuple):
    id: str
    category: str
    key: str
    score: float
    snippet: str
    matched: tuple[str, ...]  # the labels of the query's clauses it matched


# A row of RANKED_SQL, kept a plain tuple (most rows read are never returned):
# (rank, priority_rank, updated_at, id, category, key, rowid, snippet with control marks, folded).
_Row = tuple[float, int, str, str, str, str, int, str | None, int]
_BY_ID = operator.itemgetter(3)
_BY_UPDATE = operator.itemgetter(2)
_BY_RANK_PRIORITY = operator.itemgetter(0, 1)
_new_tuple = tuple.__new__


def _hits(db: sqlite3.Connection, page: list[_Row], matched: list[tuple[str, ...]]) -> list[Hit]:
    """The page's rows as hits; `matched[i]` is what row i matched of the query."""
    folded = [row[6] for row in page if row[8]]
    texts = {}
    if folded:
        sql = _RAW_TEXTS_SQL.format(marks=", ".join("?" * len(folded)))
        texts = {found[0]: found[1:] for found in db.execute(sql, folded)}
    hits = []
    for (rank, _, _, memory_id, category, key, rowid, marked, _), terms in zip(page, matched, strict=True):
        snippet = marked or ""
        if rowid in texts:
            content, raw_content, key_text, raw_key, tags, raw_tags = texts[rowid]
            columns = ((content, raw_content), (key_text, raw_key), (tags, raw_tags))
            snippet = restore_snippet(snippet, columns, MARKS)
        else:
            snippet = snippet.replace(MARK_OPEN, MARKS[0]).replace(MARK_CLOSE, MARKS[1])
            snippet = snippet.replace(ELLIPSIS, "…")
        # tuple.__new__ directly: a NamedTuple's own __new__ is a Python function, and this runs per hit
        hits.append(_new_tuple(Hit, (memory_id, category, key, float(f"{-rank:.6g}"), snippet, terms)))
    return hits


def _refused(query: Query, error: sqlite3.Error) -> BadRequest:
    # Never expected (the expression is ours); never shown to the client either.
    logger.warning("FTS5 rejected a compiled query", extra={"match": query.match, "error": str(error)})
    return bad_query('could not be searched; use words, "exact phrases", prefix*, OR, NOT and parentheses')


def _all_rows(db: sqlite3.Connection, query: Query, sql: str, params: list[Any]) -> list[Any]:
    try:
        return db.execute(sql, params).fetchall()
    except sqlite3.Error as error:
        raise _refused(query, error) from None


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
            raise _refused(self.query, error) from None
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
    """Hits `offset` to `offset + limit` of one generation in SPEC order, and whether more exist:
    most clauses of the query matched first, then BM25 (key and tags weigh more), priority, recency."""
    if query.by_coverage:
        return _best_matches(db, query, filters, limit, offset, now)
    return _all_matching(db, query, filters, limit, offset, now)


def _all_matching(
    db: sqlite3.Connection, query: Query, filters: SearchFilters, limit: int, offset: int, now: str
) -> tuple[list[Hit], bool]:
    """Every candidate matches every clause: FTS5's BM25 order, its equal scores ordered here.

    A page is read together with the row before it and every row tying with its last one, so a
    group of equal scores split by a page boundary is read whole (from the start if needed).
    """
    ranked = _Ranked(db, query, filters, now)
    start = max(offset - 1, 0)
    rows = ranked.through(start, offset + limit)
    if offset > 0 and len(rows) > 1 and rows[0][0] == rows[1][0]:
        start, rows = 0, ranked.through(0, offset + limit)
    rows = _in_spec_order(rows)
    page = rows[offset - start : offset - start + limit]
    return _hits(db, page, [tuple(query.terms)] * len(page)), len(rows) > offset - start + limit


@functools.lru_cache(maxsize=256)
def _coverage_sql(clauses: int, filters: str) -> str:
    mask = " + ".join(f"((fts.rowid IN {_CLAUSE}) << {bit})" for bit in range(clauses))
    covered = " + ".join(f"((h.mask >> {bit}) & 1)" for bit in range(clauses))
    return COVERAGE_SQL.format(mask=mask, covered=covered, filters=filters)


def _best_matches(
    db: sqlite3.Connection, query: Query, filters: SearchFilters, limit: int, offset: int, now: str
) -> tuple[list[Hit], bool]:
    """Candidates matching any clause, ordered by how many they match, then as `_all_matching`."""
    found = coverage_rows(db, query, filters, limit + 1, offset, now)
    page, more = found[:limit], len(found) > limit
    return hits_of(db, query, page), more


def coverage_rows(
    db: sqlite3.Connection, query: Query, filters: SearchFilters, limit: int, offset: int, now: str
) -> list[Any]:
    """Best-match candidates in coverage order, without snippets (what hybrid ranking fuses):
    (rank, priority_rank, updated_at, id, category, key, rowid, mask of the clauses matched)."""
    where, params = filters.sql(now)
    sql = _coverage_sql(len(query.clauses), where)
    clauses = [c.match for c in query.clauses]
    return _all_rows(db, query, sql, [*clauses, query.match, *params, limit, offset])


def hits_of(db: sqlite3.Connection, query: Query, page: list[Any]) -> list[Hit]:
    """`coverage_rows` rows as hits, with their snippets (cut for these rows only)."""
    if not page:
        return []
    marks = ", ".join("?" * len(page))
    snippets = {
        rowid: (marked, folded)
        for rowid, marked, folded in _all_rows(
            db, query, _SNIPPETS_SQL.format(marks=marks), [query.match, *(row[6] for row in page)]
        )
    }
    rows: list[_Row] = [(*row[:7], *snippets.get(row[6], (None, 0))) for row in page]
    labels = query.terms
    matched = [tuple(label for bit, label in enumerate(labels) if row[7] >> bit & 1) for row in page]
    return _hits(db, rows, matched)
