"""Recall's "Coming up" (SPEC §4): the memories due within the next DAYS_AHEAD days, by their
occurred_at or a day written in their content ("on Dec 9", "tomorrow"; not a day of "this week"),
shown right after the critical ones, soonest first.

Found in the search index, not the table: the index keeps the days each memory is about
(`doc_dates`, read by the indexer), so finding them is one range read of that table by day, and
the records are then read by key (one BatchGetItem of at most MAX_COMING_UP): the cost follows what
recall prints, not the mind. A GSI would need the dates read on the write path, which would load
the time grammar in every write handler at cold start. A mind without an index (or whose index
predates schema 4, until its next write upgrades it) has nothing coming up.
"""

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from synapse.core import clock
from synapse.memory.items import memory_from_item
from synapse.memory.kinds import Memory
from synapse.recall.query import RecallQuery
from synapse.storage import batch_reads, tables

DAYS_AHEAD = 7  # today and the 6 days after it
MAX_COMING_UP = 10


class ComingUp(NamedTuple):
    memory: Memory
    day: str  # its first date in the coming days (ISO)


def coming_up(mind_id: str, query: RecallQuery, moment: datetime) -> list[ComingUp]:
    """The selection's memories dated from today (in the asker's zone) to DAYS_AHEAD - 1 days on."""
    # sqlite3 and the index modules load here, on the calling thread (`index.readers` keeps a
    # mind's reader open per thread), beside the recall's table reads
    from synapse.index.readers import reader
    from synapse.search.dated import window_rows
    from synapse.search.filters import SearchFilters
    from synapse.when.window import Window

    db = reader(mind_id)
    if db is None:
        return []
    today = moment.astimezone(query.zone or UTC).date()
    window = Window(today, today + timedelta(days=DAYS_AHEAD - 1))
    one_category = next(iter(query.categories)) if query.categories and len(query.categories) == 1 else None
    filters = SearchFilters(tag=query.tag, category=one_category)
    wanted = MAX_COMING_UP if one_category or not query.categories else 3 * MAX_COMING_UP
    now = clock.to_iso(clock.now())
    rows = window_rows(db, window, filters, now, wanted, due_only=True)
    if not rows:
        return []
    keys = [(mind_id, tables.memory_sk(r.category, r.key)) for r in rows]
    items = batch_reads.batch_get(tables.memories_table(), keys)
    found = []
    for row, key in zip(rows, keys, strict=True):
        item = items.get(key)
        memory = None if item is None else memory_from_item(item)
        if memory is None or memory.id != row.id or not filters.keeps(memory, now):
            continue
        if query.categories and memory.category not in query.categories:
            continue
        found.append(ComingUp(memory, row.day))
    return found[:MAX_COMING_UP]
