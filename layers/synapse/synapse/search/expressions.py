"""What a query searches, table by table: the stems (`fts`, porter) for words, the words as written
(`fts_exact`) for prefixes and phrases; one FTS5 expression where a part is on one table, the set
operations of their rows where parts are on both."""

from typing import NamedTuple

# The two FTS5 tables of a generation (`schema`): the stems (porter) and the words as written.
STEMS = "fts"
EXACT = "fts_exact"


class Side(NamedTuple):
    """An FTS5 expression on one of the two tables."""

    table: str
    match: str


class SetOp(NamedTuple):
    """Rows of several expressions on different tables combined: UNION, INTERSECT or EXCEPT."""

    op: str
    parts: "tuple[Expr, ...]"


Expr = Side | SetOp
_SET_OPS = {"ANY": "UNION", "OR": "UNION", "AND": "INTERSECT", "NOT": "EXCEPT"}
_FTS_OPS = {"ANY": "OR", "OR": "OR", "AND": "AND", "NOT": "NOT"}


def combine(name: str, parts: list[Expr]) -> Expr:
    """`parts` joined by the operator `name` (ANY, OR, AND, NOT): one FTS5 expression when they are
    all on one table (what FTS5 runs fastest), else the set operation of their rows."""
    if len(parts) == 1:
        return parts[0]
    tables = {p.table for p in parts if isinstance(p, Side)}
    if len(tables) == 1 and all(isinstance(p, Side) for p in parts):
        joined = f" {_FTS_OPS[name]} ".join(p.match for p in parts if isinstance(p, Side))
        return Side(tables.pop(), f"({joined})")
    return SetOp(_SET_OPS[name], tuple(parts))


def positive_sides(expr: Expr) -> list[Side]:
    """The expressions whose matches a row's score counts (never the right side of a NOT)."""
    if isinstance(expr, Side):
        return [expr]
    if expr.op == "EXCEPT":
        return positive_sides(expr.parts[0])
    return [side for part in expr.parts for side in positive_sides(part)]


def touches_exact(expr: Expr) -> bool:
    if isinstance(expr, Side):
        return expr.table == EXACT
    return any(touches_exact(p) for p in expr.parts)


_ROWS = "SELECT rowid AS r FROM {table} WHERE {table} MATCH ?"


def rows_sql(expr: Expr) -> tuple[str, list[str]]:
    """A SELECT of the rowids (as `r`) matching `expr`, and its parameters."""
    if isinstance(expr, Side):
        assert expr.table in {STEMS, EXACT}  # a constant, never a client's text
        return _ROWS.format(table=expr.table), [expr.match]
    sqls, params = [], []
    for part in expr.parts:
        sql, more = rows_sql(part)
        sqls.append(f"SELECT r FROM ({sql})")  # noqa: S608 (built from constants)
        params += more
    return f" {expr.op} ".join(sqls), params


def rank_sides(expr: Expr) -> list[Side]:
    """Per table, one OR-expression of the query's positive terms there: what BM25 scores."""
    by_table: dict[str, list[str]] = {}
    for side in positive_sides(expr):
        by_table.setdefault(side.table, []).append(side.match)
    return [
        Side(table, matches[0] if len(matches) == 1 else "(" + " OR ".join(matches) + ")")
        for table, matches in by_table.items()
    ]
