"""Ranked hits from one generation: BM25 in FTS5, ties broken as SPEC §5 says, snippets mapped back."""

import functools
import operator
import sqlite3
from typing import Any, NamedTuple

from synapse.core.errors import BadRequest
from synapse.core.observability import logger
from synapse.index.folding import ELLIPSIS, MARK_CLOSE, MARK_OPEN, restore_snippet
from synapse.index.schema import BM25_WEIGHTS, has_exact_words
from synapse.search import weights as clause_weights
from synapse.search.expressions import EXACT, STEMS, Expr, Side, rank_sides, rows_sql
from synapse.search.filters import SearchFilters
from synapse.search.query import Query, bad_query
from synapse.search.snippets import chosen, snippets_sql

MARKS = ("**", "**")
TIE_SLACK = 8

# The snippets with the control marks (`snippets`: content first), and whether folding changed the
# row's text (then the snippet, cut from the folded text, is mapped onto the original).
_SNIPPET = f"{snippets_sql('fts')}, coalesce(fts.raw_content, fts.raw_key, fts.raw_tags) IS NOT NULL"
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
# RANKED_SQL on the words as written: a query that is one prefix or phrase (or several, all required).
RANKED_EXACT_SQL = (
    f"SELECT {EXACT}.rank, d.priority_rank, d.updated_at, d.id, d.category, d.key, d.rowid,"  # noqa: S608
    f" {snippets_sql(EXACT)}, (SELECT coalesce(c.c3, c.c4, c.c5) IS NOT NULL FROM fts_content c"
    f" WHERE c.id = {EXACT}.rowid) FROM {EXACT} JOIN docs d ON d.rowid = {EXACT}.rowid"
    f" WHERE {EXACT} MATCH ? AND {EXACT}.rank MATCH '{_BM25}'"
    "{filters} ORDER BY " + EXACT + ".rank LIMIT ? OFFSET ?"
)
# A query with prefixes or phrases, on a generation that has the words as written: the candidates
# are rows of expressions on either table (`query.Expr`); a row's score is the sum of its BM25 on
# each table for the query's terms there (BM25 is a sum over terms, so this is the BM25 of the whole
# query, each term scored where it is searched); then as COVERAGE_SQL. Each table's scores are a
# materialized CTE, computed once.
BOTH_SQL = (
    "WITH {scores}hits AS MATERIALIZED (SELECT c.r AS rowid, {rank} AS rank, {mask} AS mask"
    " FROM ({candidates}) c{joins})"
    " SELECT h.rank, d.priority_rank, d.updated_at, d.id, d.category, d.key, d.rowid, h.mask"
    " FROM hits h JOIN docs d ON d.rowid = h.rowid WHERE 1{filters}"
    " ORDER BY {covered} DESC, h.rank, d.priority_rank, d.updated_at DESC, d.id LIMIT ? OFFSET ?"
)
_SCORES = (
    "s{n} AS MATERIALIZED (SELECT rowid AS r, rank FROM {table} WHERE {table} MATCH ?"
    " AND rank MATCH '{bm25}'), "
)
# Snippets cut from the words as written (external content: the text is read from `fts`).
_EXACT_SNIPPETS_SQL = (
    f"SELECT e.rowid, {snippets_sql(EXACT)}, (SELECT coalesce(c.c3, c.c4, c.c5) IS NOT NULL"  # noqa: S608
    f" FROM fts_content c WHERE c.id = e.rowid) FROM {EXACT} e"
    f" WHERE {EXACT} MATCH ? AND e.rowid IN ({{marks}})"
)
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
    coverage: float  # the share of the query's clauses it matched, each weighed by its IDF


# A row of RANKED_SQL, kept a plain tuple (most rows read are never returned):
# (rank, priority_rank, updated_at, id, category, key, rowid, snippet with control marks, folded).
_Row = tuple[float, int, str, str, str, str, int, str | None, int]
_BY_ID = operator.itemgetter(3)
_BY_UPDATE = operator.itemgetter(2)
_BY_RANK_PRIORITY = operator.itemgetter(0, 1)
_new_tuple = tuple.__new__


def _hits(
    db: sqlite3.Connection, page: list[_Row], matched: list[tuple[str, ...]], coverage: list[float]
) -> list[Hit]:
    """The page's rows as hits; `matched[i]` is what row i matched of the query, `coverage[i]` its share."""
    folded = [row[6] for row in page if row[8]]
    texts = {}
    if folded:
        sql = _RAW_TEXTS_SQL.format(marks=", ".join("?" * len(folded)))
        texts = {found[0]: found[1:] for found in db.execute(sql, folded)}
    hits = []
    for (rank, _, _, memory_id, category, key, rowid, marked, _), terms, covered in zip(
        page, matched, coverage, strict=True
    ):
        snippet = chosen(marked)  # the content's words, unless only the tags or the key matched
        if rowid in texts:
            content, raw_content, key_text, raw_key, tags, raw_tags = texts[rowid]
            columns = ((content, raw_content), (key_text, raw_key), (tags, raw_tags))
            snippet = restore_snippet(snippet, columns, MARKS)
        else:
            snippet = snippet.replace(MARK_OPEN, MARKS[0]).replace(MARK_CLOSE, MARKS[1])
            snippet = snippet.replace(ELLIPSIS, "…")
        # tuple.__new__ directly: a NamedTuple's own __new__ is a Python function, and this runs per hit
        hit = (memory_id, category, key, float(f"{-rank:.6g}"), snippet, terms, covered)
        hits.append(_new_tuple(Hit, hit))
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
def _ranked_sql(filters: str, table: str = STEMS) -> str:
    return (RANKED_EXACT_SQL if table == EXACT else RANKED_SQL).format(filters=filters)


class _Ranked:
    """Reads rows in FTS5's order (BM25 alone) from one generation for one query."""

    def __init__(
        self, db: sqlite3.Connection, query: Query, filters: SearchFilters, now: str, side: Side
    ) -> None:
        where, params = filters.sql(now)
        self.db = db
        self.query = query
        self.sql = _ranked_sql(where, side.table)
        self.params = [side.match, *params]

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
    most of the query matched first (its clauses weighed by how informative each is), then BM25
    (key and tags weigh more), priority, recency.

    A query with prefixes or phrases searches them on the words as written where the generation has
    them (schema 3); a generation from before searches every term on the stems until it is upgraded.
    """
    if query.exact and query.candidates is not None and has_exact_words(db):
        if isinstance(query.candidates, Side) and not query.by_coverage:  # `dock*`, `"a phrase"`
            return _all_matching(db, query, filters, limit, offset, now, query.candidates)
        return _on_both_tables(db, query, query.candidates, filters, limit, offset, now)
    if query.by_coverage:
        return _best_matches(db, query, filters, limit, offset, now)
    return _all_matching(db, query, filters, limit, offset, now, Side(STEMS, query.match))


def _all_matching(
    db: sqlite3.Connection,
    query: Query,
    filters: SearchFilters,
    limit: int,
    offset: int,
    now: str,
    side: Side,
) -> tuple[list[Hit], bool]:
    """Every candidate matches every clause: FTS5's BM25 order, its equal scores ordered here.

    A page is read together with the row before it and every row tying with its last one, so a
    group of equal scores split by a page boundary is read whole (from the start if needed).
    """
    ranked = _Ranked(db, query, filters, now, side)
    start = max(offset - 1, 0)
    rows = ranked.through(start, offset + limit)
    if offset > 0 and len(rows) > 1 and rows[0][0] == rows[1][0]:
        start, rows = 0, ranked.through(0, offset + limit)
    rows = _in_spec_order(rows)
    page = rows[offset - start : offset - start + limit]
    every = tuple(query.terms)
    return _hits(db, page, [every] * len(page), [1.0] * len(page)), len(rows) > offset - start + limit


def _covered(clauses: int) -> str:
    """A row's coverage in SQL: the weights (bound parameters) of the clauses its mask holds."""
    return " + ".join(f"(((h.mask >> {bit}) & 1) * ?)" for bit in range(clauses))


@functools.lru_cache(maxsize=256)
def _coverage_sql(clauses: int, filters: str) -> str:
    mask = " + ".join(f"((fts.rowid IN {_CLAUSE}) << {bit})" for bit in range(clauses))
    return COVERAGE_SQL.format(mask=mask, covered=_covered(clauses), filters=filters)


@functools.lru_cache(maxsize=64)
def _stem_counts_sql(clauses: int) -> str:
    return "SELECT " + ", ".join(["(SELECT count(*) FROM fts WHERE fts MATCH ?)"] * clauses)  # noqa: S608


def _matched(labels: list[str], weights: list[int], mask: int) -> tuple[tuple[str, ...], float]:
    """The labels a row's mask holds, and their share of the query's weight."""
    return tuple(label for bit, label in enumerate(labels) if mask >> bit & 1), coverage_of(weights, mask)


def _best_matches(
    db: sqlite3.Connection, query: Query, filters: SearchFilters, limit: int, offset: int, now: str
) -> tuple[list[Hit], bool]:
    """Candidates matching any clause, ordered by how many they match, then as `_all_matching`."""
    found, weights = coverage_rows(db, query, filters, limit + 1, offset, now)
    page, more = found[:limit], len(found) > limit
    return hits_of(db, query, page, weights), more


def coverage_rows(
    db: sqlite3.Connection, query: Query, filters: SearchFilters, limit: int, offset: int, now: str
) -> tuple[list[Any], list[int]]:
    """Best-match candidates in coverage order, without snippets (what hybrid ranking fuses):
    (rank, priority_rank, updated_at, id, category, key, rowid, mask of the clauses matched), and
    each clause's weight (how informative it is: `clause_weights`)."""
    where, params = filters.sql(now)
    sql = _coverage_sql(len(query.clauses), where)
    clauses = [c.match for c in query.clauses]
    try:
        weights = clause_weights.idf_weights(db, _stem_counts_sql(len(clauses)), clauses)
    except sqlite3.Error as error:
        raise _refused(query, error) from None
    return _all_rows(db, query, sql, [*clauses, query.match, *params, *weights, limit, offset]), weights


def coverage_of(weights: list[int], mask: int) -> float:
    """A `coverage_rows` row's share of the query's weight."""
    return sum(w for bit, w in enumerate(weights) if mask >> bit & 1) / (sum(weights) or 1)


def informative_coverage(weights: list[int], mask: int, full_idf_share: float) -> float:
    """A row's coverage as fusion counts it: `full_idf_share` of it its share of the query's full IDF
    (`clause_weights.Weights.idfs`: a rare word counts more), the rest `coverage_of` (weights without
    IDFs, as a variant of bench/questions.py patches in: `coverage_of` alone)."""
    coverage = coverage_of(weights, mask)
    idfs = weights.idfs if isinstance(weights, clause_weights.Weights) else ()
    if not idfs:
        return coverage
    held = sum(idf for bit, idf in enumerate(idfs) if mask >> bit & 1) / (sum(idfs) or 1.0)
    return (1.0 - full_idf_share) * coverage + full_idf_share * held


def hits_of(db: sqlite3.Connection, query: Query, page: list[Any], weights: list[int]) -> list[Hit]:
    """`coverage_rows` rows as hits, with their snippets (cut for these rows only)."""
    if not page:
        return []
    rows = _with_snippets(db, query, page, [Side(STEMS, query.match)])
    return _page_hits(db, query, rows, page, weights)


def _page_hits(
    db: sqlite3.Connection, query: Query, rows: list[_Row], page: list[Any], weights: list[int]
) -> list[Hit]:
    labels = query.terms
    found = [_matched(labels, weights, row[7]) for row in page]
    return _hits(db, rows, [m for m, _ in found], [c for _, c in found])


def _with_snippets(db: sqlite3.Connection, query: Query, page: list[Any], sides: list[Side]) -> list[_Row]:
    """The page's rows with their snippets: cut from the first of `sides` (expressions on the stems
    or the words as written) that the row matches."""
    snippets: dict[int, tuple[str | None, int]] = {}
    for side in sides:
        wanted = [row[6] for row in page if row[6] not in snippets]
        if not wanted:
            break
        sql = (_EXACT_SNIPPETS_SQL if side.table == EXACT else _SNIPPETS_SQL).format(
            marks=", ".join("?" * len(wanted))
        )
        for rowid, marked, folded in _all_rows(db, query, sql, [side.match, *wanted]):
            snippets[rowid] = (marked, folded)
    return [(*row[:7], *snippets.get(row[6], (None, 0))) for row in page]


def _on_both_tables(
    db: sqlite3.Connection,
    query: Query,
    candidates: Expr,
    filters: SearchFilters,
    limit: int,
    offset: int,
    now: str,
) -> tuple[list[Hit], bool]:
    """A query with prefixes or phrases: those on the words as written, the rest on the stems; in
    the same order as `_best_matches` (or, every clause required, BM25's)."""
    where, filter_params = filters.sql(now)
    sides = rank_sides(candidates)
    scores = "".join(_SCORES.format(n=n, table=side.table, bm25=_BM25) for n, side in enumerate(sides))
    joins = "".join(f" LEFT JOIN s{n} ON s{n}.r = c.r" for n in range(len(sides)))
    rank = " + ".join(f"coalesce(s{n}.rank, 0)" for n in range(len(sides)))
    candidates_sql, candidates_params = rows_sql(candidates)
    clause_sqls = [rows_sql(c.expr) for c in query.clauses if c.expr is not None]
    weights: list[int] = []
    mask, covered = "0", "NULL"  # every candidate matches every clause: BM25's order
    if query.by_coverage:
        counted = (f"(SELECT count(*) FROM ({sql}))" for sql, _ in clause_sqls)  # noqa: S608 (constants)
        counts = "SELECT " + ", ".join(counted)
        try:
            weights = clause_weights.idf_weights(db, counts, [p for _, ps in clause_sqls for p in ps])
        except sqlite3.Error as error:
            raise _refused(query, error) from None
        mask = " + ".join(f"((c.r IN ({sql})) << {bit})" for bit, (sql, _) in enumerate(clause_sqls))
        covered = _covered(len(clause_sqls))
    sql = BOTH_SQL.format(
        scores=scores,
        rank=rank,
        mask=mask,
        candidates=candidates_sql,
        joins=joins,
        filters=where,
        covered=covered,
    )
    params = [
        *(side.match for side in sides),
        *(p for _, ps in clause_sqls for p in ps if query.by_coverage),
        *candidates_params,
        *filter_params,
        *weights,
        limit + 1,
        offset,
    ]
    found = _all_rows(db, query, sql, params)
    page, more = found[:limit], len(found) > limit
    if not page:
        return [], more
    exact_first = sorted(sides, key=lambda side: side.table != EXACT)  # what the user typed as is
    rows = _with_snippets(db, query, page, exact_first)
    if not query.by_coverage:
        every = tuple(query.terms)
        return _hits(db, rows, [every] * len(rows), [1.0] * len(rows)), more
    return _page_hits(db, query, rows, page, weights), more
