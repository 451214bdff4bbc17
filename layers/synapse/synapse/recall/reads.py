"""The read an agent starts a conversation with: recall, composed by `text`.

It reads an index already in the order it answers in and stops when the answer is full, so its
cost follows the answer, not the mind (`tables.query_pages` counts every item read): GSI `recall`
(pk, recall_sk), or `category_recall` per asked category merged in recall order, or the tag copies
`TAG#<len>:<tag>#<recall_sk>` when a tag is asked; the counts of its header come from the counters
of `memory.counts` (≤ 8 items, memories not swept) minus the expired memories not swept yet, from
GSI `category_expiring`. The query pieces it shares with by-tag are in `memory.reads`. With `q`, the
memories most relevant to it (`relevant`, from the search index) are shown after the critical ones.

Expired memories are skipped one by one only until the expiry sweep (`memory.expiry`,
`memory.sweep`) takes them out of these indexes, so what a read pays for them is what expired since
the last sweep.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from synapse.core import clock
from synapse.memory import counts
from synapse.memory.counts import Tally
from synapse.memory.items import memory_from_item
from synapse.memory.kinds import Memory
from synapse.memory.reads import category_clause, not_expired
from synapse.minds import minds
from synapse.recall import text
from synapse.recall.query import RecallQuery
from synapse.recall.relevant import relevant_memories
from synapse.storage import tables

LOW_RANK = "3#"  # recall_sk starts with the priority rank; 3 is low
# The first page asks for what the answer can use; later pages for this many.
PAGE = 100


def _items(params: dict[str, Any], first_page: int, later_pages: int) -> Iterator[dict[str, Any]]:
    """Items of a query, lazily: the next page is read only when the caller asks for more, so
    stopping early stops the reading. A small first page keeps merged streams cheap."""
    size = first_page
    while True:
        items, last = next(tables.query_pages(**params, Limit=size))
        yield from items
        if not last:
            return
        params, size = {**params, "ExclusiveStartKey": last}, later_pages


def _recall_streams(
    mind_id: str, query: RecallQuery, now: str, page_size: int
) -> tuple[Iterator[Memory], Iterator[Memory]]:
    """(critical…normal, low) of the selection, each lazily in recall order, expired left out."""
    if query.tag is not None:
        prefix = tables.tag_prefix(query.tag)
        category, category_values = category_clause("#m.category", query.categories)
        condition = not_expired("#m.expires_at") + (f" AND {category}" if category else "")

        def tagged(key_condition: str, **bounds: str) -> Iterator[Memory]:
            params = {
                "TableName": tables.memories_table(),
                "KeyConditionExpression": key_condition,
                "FilterExpression": condition,
                "ExpressionAttributeNames": {"#m": "memory"},
                "ExpressionAttributeValues": tables.values(
                    mind=mind_id, now=now, **bounds, **category_values
                ),
            }
            return (memory_from_item(item["memory"]) for item in _items(params, page_size, page_size))

        return (
            tagged("pk = :mind AND sk BETWEEN :lo AND :hi", lo=prefix + "0", hi=prefix + "2~"),
            tagged("pk = :mind AND begins_with(sk, :low)", low=prefix + LOW_RANK),
        )

    streams_count = len(query.categories) if query.categories else 1
    first_page = -(-page_size // streams_count) + 1

    def indexed(index: str, partition: str, key: str, key_condition: str) -> Iterator[tuple[str, Memory]]:
        params = {
            "TableName": tables.memories_table(),
            "IndexName": index,
            "KeyConditionExpression": f"{partition} = :part AND {key_condition}",
            "FilterExpression": not_expired("expires_at"),
            "ExpressionAttributeValues": tables.values(part=key, now=now, low=LOW_RANK),
        }
        items = _items(params, min(first_page, page_size), page_size)
        return ((item["recall_sk"], memory_from_item(item)) for item in items)

    def merged(key_condition: str) -> Iterator[Memory]:
        if query.categories is None:
            streams = [indexed("recall", "pk", mind_id, key_condition)]
        else:
            streams = [
                indexed("category_recall", "mind_category", f"{mind_id}#{c}", key_condition)
                for c in sorted(query.categories)
            ]
        return (memory for _, memory in heapq.merge(*streams, key=lambda pair: pair[0]))

    return merged("recall_sk < :low"), merged("begins_with(recall_sk, :low)")


def _expired(mind_id: str, query: RecallQuery, now: str, categories: frozenset[str]) -> Tally:
    """Counts of the selection's expired memories not swept yet: the counters still count them,
    recall does not show them. The sweep takes them out of `category_expiring` (and the counters).
    Only `categories`, those whose counters count a memory, can hold one: a typical mind uses a few
    of the twelve, and each one left out is a query saved."""
    found = Tally()
    for category in sorted(categories):
        params = {
            "TableName": tables.memories_table(),
            "IndexName": "category_expiring",
            "KeyConditionExpression": "mind_category = :part AND expires_at <= :now",
            "ProjectionExpression": "#t, #v, #p",
            "ExpressionAttributeNames": {"#t": "tags", "#v": "verified", "#p": "priority"},
            "ExpressionAttributeValues": tables.values(part=f"{mind_id}#{category}", now=now),
        }
        for items, _ in tables.query_pages(**params):
            for item in items:
                if query.tag is None or query.tag in (item.get("tags") or []):
                    found += Tally(1, int(bool(item["verified"])), int(item["priority"] == "low"))
    return found


def recall_of(mind_id: str, query: RecallQuery, at: datetime | None = None) -> text.Recall:
    moment = at or clock.now()
    now = clock.to_iso(moment)
    name = minds.get_mind(mind_id).name
    stored = counts.stored(mind_id, query.categories, query.tag)
    active = counts.total(stored) - _expired(mind_id, query, now, frozenset(stored))
    relevant = relevant_memories(mind_id, query)
    others, low = _recall_streams(mind_id, query, now, min(query.limit + 1, PAGE))
    return text.compose(mind_id, name, active, others, low, query.limit, query.max_chars, relevant)
