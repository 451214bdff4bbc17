"""Time in a search question (SPEC §5 "Time in questions", docs/time.md): its time expressions
stop being words and become a soft window of days.

A best-match query's time expressions ("next week", "on Friday", "3 days ago", "upcoming") are read
relative to the asker's now and zone (`synapse.when`); the rest of the question is searched as
words, so `next` no longer matches "Kitchen renovation planned for next summer". The memories with a
day in the window (`doc_dates`: their occurred_at, or a date written in their content) are
candidates whatever words they share, and rank up by WINDOW_BOOST after fusion (`favoured`): a soft
window, never a filter, so a question whose answer is undated still finds it.
"""

from datetime import datetime, tzinfo
from typing import NamedTuple

from synapse.core.errors import BadRequest
from synapse.search.dated import window_rows as window_rows
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
