"""The read an agent starts a conversation with: recall, composed by `text`.

It reads an index already in the order it answers in and stops when the answer is full, so its
cost follows the answer, not the mind (`tables.query_pages` counts every item read): `streams`
reads GSI `recall` (pk, recall_sk), or `category_recall` per asked category merged in recall order,
or the tag copies `TAG#<len>:<tag>#<recall_sk>` when a tag is asked, from the start, and splits the
read at the low priority rank. The header's name and counts come from the mind's head and its
category counters (`minds.heads`, `memory.counts`: one query of ≤ 9 items; with a tag, the tag's
counters and the Minds item) minus the expired memories not swept yet (`memory.expiry`: one query of
GSI `mind_expiring` for the whole mind). With `q`, the memories most relevant to it (`relevant`,
from the search index) are shown after the critical ones.

Calls for a default recall of a typical mind (one whose selection fits the first page): 3, made
together on a small pool (head and counters, expired not swept, the first page of the recall
index); a category filter adds one per further category, a tag filter reads the Minds item for the
name (4); `q` adds the search's BatchGetItem, made meanwhile on the calling thread (whose search
readers stay open from one request to the next). A mind created before heads costs a GetItem and a
heal once (`minds.heads`). Later pages are read on the calling thread as `text` asks for them.
The one query for the unswept expired covers the whole mind, so a filtered recall also reads the
other categories' (small projected items, dropped here), where it read only its own: what expired
since the last sweep, minutes' worth.

Expired memories are skipped one by one only until the expiry sweep (`memory.expiry`,
`memory.sweep`) takes them out of these indexes, so what a read pays for them is what expired since
the last sweep.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from datetime import datetime
from typing import Any

from synapse.core import clock
from synapse.core.observability import in_this_invocation
from synapse.memory import counts, expiry
from synapse.memory.counts import Tally
from synapse.memory.kinds import APP_PRIVATE_TAG
from synapse.minds import heads, minds
from synapse.recall import replaced, text
from synapse.recall.coming_up import coming_up
from synapse.recall.query import DEFAULT_LIMIT, RecallQuery
from synapse.recall.relevant import relevant_memories
from synapse.recall.streams import recall_streams
from synapse.storage import tables

# The first page asks for what the answer can use (limit + 1, so the default limit of 100 learns
# from one page whether everything fits); later pages for this many.
PAGE = DEFAULT_LIMIT + 1
# Head and counters, expired not swept, the first page of the memories (one per asked category).
WORKERS = 4


def _submit[T](pool: Executor, call: Callable[..., T], *args: Any) -> Future[T]:
    return pool.submit(in_this_invocation(call), *args)


def _name_and_stored(mind_id: str, query: RecallQuery) -> tuple[str, dict[str, Tally]]:
    """The mind's name and the stored counts of the selection (`counts.stored`)."""
    if query.tag is not None:  # the tag's counters are not next to the head: the name apart
        return minds.get_mind(mind_id).name, counts.stored(mind_id, query.categories, query.tag)
    head, stored = counts.stored_with_head(mind_id, query.categories)
    if head is not None:
        return str(head["name"]), stored
    name = minds.get_mind(mind_id).name  # created before heads: read once, then healed
    heads.heal(mind_id, name)
    return name, stored


def _expired(mind_id: str, query: RecallQuery, moment: datetime) -> list[tuple[str, Tally]]:
    """(category, counts) of each of the selection's expired memories not swept yet, tag applied:
    the counters still count them, recall does not show them. Without a tag, applications' private
    memories are not counted (`counts.stored`), so not taken off either."""
    return [
        (str(item["category"]), Tally(1, int(bool(item["verified"])), int(item["priority"] == "low")))
        for item in expiry.expired_not_swept(mind_id, moment)
        if _selected(query, item.get("tags") or [])
    ]


def _selected(query: RecallQuery, tags: list[str]) -> bool:
    """Whether a memory with `tags` is in the recall's selection, as far as tags go."""
    return query.tag in tags if query.tag is not None else APP_PRIVATE_TAG not in tags


def _active(stored: dict[str, Tally], expired: list[tuple[str, Tally]]) -> Tally:
    """The stored counts less the expired ones. Only categories whose counters count a memory can
    hold one (as when each such category was asked on its own): a sweep's counter update may be
    seen before its index update."""
    gone = sum((tally for category, tally in expired if category in stored), Tally())
    return counts.total(stored) - gone


def recall_of(mind_id: str, query: RecallQuery, at: datetime | None = None) -> text.Recall:
    moment = at or clock.now()
    now = clock.to_iso(moment)
    tables.client()  # made once here: threads racing the cache would each build one
    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="recall") as pool:
        heading = _submit(pool, _name_and_stored, mind_id, query)
        expired = _submit(pool, _expired, mind_id, query, moment)
        others, low = recall_streams(mind_id, query, now, min(query.limit + 1, PAGE), pool)
        # On this thread, meanwhile: the search's open readers are kept per thread (`index.readers`).
        coming = coming_up(mind_id, query, query.now or moment)
        relevant = relevant_memories(mind_id, query)
        name, stored = heading.result()
        active = _active(stored, expired.result())
        recall = text.compose(
            mind_id,
            name,
            active,
            others,
            low,
            query.limit,
            query.max_chars,
            relevant,
            query.way_on,
            [(c.memory, c.day) for c in coming],
        )
    if query.include_superseded:  # on request only: its read follows the mind (`recall.replaced`)
        return replaced.with_replaced(mind_id, query, recall)
    return recall
