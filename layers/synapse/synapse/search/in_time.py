"""Time in a search question (SPEC §5 "Time in questions", docs/time.md): its time expressions
stop being words and become a soft window of days.

A best-match query's time expressions ("next week", "on Friday", "3 days ago", "upcoming") are read
relative to the asker's now and zone (`synapse.when`); the rest of the question is searched as
words, so `next` no longer matches "Kitchen renovation planned for next summer". The memories with a
day in the window (`doc_dates`: their occurred_at, or a date written in their content) are
candidates whatever words they share, and rank up by WINDOW_BOOST after fusion (`favoured`): a soft
window, never a filter, so a question whose answer is undated still finds it.
"""

import sqlite3
from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import Any, NamedTuple

from synapse.core.errors import BadRequest
from synapse.index import vectors
from synapse.search.candidates import AFTER_THE_WORDS, Candidate, Row
from synapse.search.dated import window_rows as window_rows
from synapse.search.filters import SearchFilters
from synapse.search.query import Query, parse_query
from synapse.when.window import Window
from synapse.when.words import may_name_time

# What a memory dated in the window gains after fusion. A lexical hit scores its coverage (0-1) plus
# its lift in meaning (0-1): a dated memory outranks an undated one matching the question's other
# words about as well, not one that answers them far better (bench/time.py chose it).
WINDOW_BOOST = 1.0


class TimedQuery(NamedTuple):
    """A query read for time: `query` searches the words left (no clauses: nothing but time and
    function words), `window` the days the question names (None: it names none)."""

    query: Query
    window: Window | None
    expressions: tuple[str, ...] = ()


def read(raw: str, query: Query, now: datetime, zone: tzinfo) -> TimedQuery:
    """`query` (parsed from `raw`) read for time. Explicit syntax keeps its exact meaning: not read."""
    if query.explicit or query.plain or not may_name_time(raw):
        return TimedQuery(query, None)
    from synapse.when.questions import read_question  # the grammar loads with the first time word

    reading = read_question(raw, now, zone)
    if reading.window is None:
        return TimedQuery(query, None)
    no_words = query._replace(match="", clauses=(), candidates=None, exact=False)
    try:
        rest = parse_query(reading.rest)
    except BadRequest:
        return TimedQuery(no_words, reading.window, reading.expressions)
    if all(_only_function_words(rest, clause.label) for clause in rest.clauses):
        return TimedQuery(no_words, reading.window, reading.expressions)
    return TimedQuery(rest, reading.window, reading.expressions)


def _only_function_words(query: Query, label: str) -> bool:
    from synapse.search import languages

    return languages.is_stop_word(label.replace("'", ""), query.latin)


def favoured(score: float, in_window: bool) -> float:
    """A candidate's score once the question's window is counted: the one place it is."""
    return score + WINDOW_BOOST if in_window else score


def favour_window(
    db: sqlite3.Connection,
    asked: tuple[Window, SearchFilters, str],
    pool: dict[str, Candidate],
    meaning: tuple[vectors.Matrix, Any] | None,
    score_of: Callable[[float], float],
) -> None:
    """The memories dated in the question's window (`asked`: the window, the filters, now) join the
    pool, scored by their meaning (`score_of` their similarity, with the `meaning`'s matrix and the
    question's similarities; none without it), and every pooled memory in the window ranks up by
    `favoured`: a soft window, never a filter."""
    window, filters, now = asked
    inside = set()
    for dated in window_rows(db, window, filters, now):
        inside.add(dated.id)
        if dated.id in pool:
            continue
        similarity = None if meaning is None else meaning[0].similarity_of(meaning[1], dated.id)
        row = Row(dated.rowid, dated.id, dated.category, dated.key, dated.updated_at, 0.0, 0, None)
        pool[dated.id] = Candidate(score_of(similarity or 0.0), AFTER_THE_WORDS, row, similarity)
    for memory_id in inside:
        pool[memory_id] = pool[memory_id]._replace(fused=favoured(pool[memory_id].fused, True))
