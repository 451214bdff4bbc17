"""The memories of a generation with a day in a window (`doc_dates`, schema 4; `due` since 5): what
search's time window favours (`in_time`) and recall's "Coming up" lists. Light on purpose (no query parser, no
vectors): recall reads it on every call."""

import sqlite3
from typing import NamedTuple

from synapse.search.filters import SearchFilters
from synapse.when.window import Window

# The window's memories taken, at most (a window of a month in a large mind).
MAX_WINDOW_ROWS = 500
# By their first day in the window, soonest first (a range scan of doc_dates' primary key).
_WINDOW_SQL = (
    "SELECT d.rowid, d.id, d.category, d.key, min(w.day), d.updated_at"
    " FROM doc_dates w JOIN docs d ON d.rowid = w.rowid"
    " WHERE w.day BETWEEN ? AND ?{due} AND d.deleted = 0{filters}"
    " GROUP BY d.rowid ORDER BY min(w.day), d.rowid"
    " LIMIT ?"
)


class Dated(NamedTuple):
    rowid: int
    id: str
    category: str
    key: str
    day: str  # its first day in the window (ISO)
    updated_at: str


def window_rows(
    db: sqlite3.Connection,
    window: Window,
    filters: SearchFilters,
    now: str,
    limit: int = MAX_WINDOW_ROWS,
    due_only: bool = False,
) -> list[Dated]:
    """The memories passing `filters` with a day in `window` (with `due_only`, a day they are due
    on), soonest first. A generation from before schema 4 keeps no days (none, until upgraded); one
    of schema 4 does not know which are due (every day counts, until upgraded)."""
    columns = {row[1] for row in db.execute("PRAGMA main.table_info(doc_dates)")}
    if not columns:
        return []
    where, params = filters.sql(now)
    sql = _WINDOW_SQL.format(filters=where, due=" AND w.due = 1" if due_only and "due" in columns else "")
    start, end = window.start.isoformat(), window.end.isoformat()
    return [Dated(*row) for row in db.execute(sql, [start, end, *params, limit])]
