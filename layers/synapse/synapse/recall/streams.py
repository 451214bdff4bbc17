"""The memories of a recall's selection in recall order, read lazily and split in two for `text`.

`text.compose` takes two streams: critical to normal (`others`), then low priority (`low`). Both
come from one read of an index from its start (`recall`, `category_recall` per asked category
merged in recall order, or the tag copies): recall_sk starts with the priority rank and low is the
last (`3#`), so the low memories follow the others in the same read. For a typical mind the first
page holds the whole selection and one query answers both streams.

`low` is only read apart (its own query from `3#`) when the answer asks for a low memory before
the shared read has reached one and more remains to read: a big mind whose others fill the budget
would otherwise read all of them to reach its low ones. So a read never costs more items than two
queries (one per stream) did, and the first page is read at once on the caller's pool, beside the
header's calls.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from typing import Any

from synapse.core.observability import in_this_invocation
from synapse.memory import expiry
from synapse.memory.items import memory_from_item
from synapse.memory.kinds import APP_PRIVATE_TAG, Memory
from synapse.memory.reads import category_clause, not_expired, window_clause
from synapse.recall.query import RecallQuery
from synapse.storage import tables

LOW_RANK = "3#"  # recall_sk starts with the priority rank; 3 is low
Pair = tuple[str, Memory]  # (recall_sk, memory)
Page = tuple[list[dict[str, Any]], dict[str, Any] | None]


def _page(params: dict[str, Any]) -> Page:
    return next(tables.query_pages(**params))


def _pages(params: dict[str, Any], first: Future[Page] | int, later: int) -> Iterator[tuple[list[Any], bool]]:
    """(items, last) per page, lazily: the next page is read only when the caller asks for more, so
    stopping early stops the reading. `first`: the first page's size, or that page being read."""
    items, last = first.result() if isinstance(first, Future) else _page({**params, "Limit": first})
    yield items, last is None
    while last:
        items, last = _page({**params, "ExclusiveStartKey": last, "Limit": later})
        yield items, last is None


class _Split:
    """`others` and `low` of one read in recall order (`chunks`: (pairs, whether the last)); `low`
    reads apart (`low_apart`) when it is asked for before the read reached a low memory or its end."""

    def __init__(self, chunks: Iterator[tuple[list[Pair], bool]], low_apart: Callable[[], Iterator[Memory]]):
        self._chunks = chunks
        self._low_apart = low_apart
        self._read: list[Pair] = []
        self._done = False

    def _at(self, index: int) -> Pair | None:
        while index >= len(self._read) and not self._done:
            chunk = next(self._chunks, None)
            pairs, self._done = chunk if chunk is not None else ([], True)
            self._read.extend(pairs)
        return self._read[index] if index < len(self._read) else None

    def others(self) -> Iterator[Memory]:
        index = 0
        while (pair := self._at(index)) is not None and not pair[0].startswith(LOW_RANK):
            yield pair[1]
            index += 1

    def low(self) -> Iterator[Memory]:
        start = next((i for i, (sk, _) in enumerate(self._read) if sk.startswith(LOW_RANK)), None)
        if start is None and not self._done:
            yield from self._low_apart()
            return
        index = len(self._read) if start is None else start
        while (pair := self._at(index)) is not None:
            yield pair[1]
            index += 1


def _submit(pool: Executor, params: dict[str, Any]) -> Future[Page]:
    return pool.submit(in_this_invocation(_page), params)


def _tagged(mind_id: str, query: RecallQuery, now: str, size: int, pool: Executor) -> _Split:
    prefix = tables.tag_prefix(str(query.tag))
    category, category_values = category_clause("#m.category", query.categories)
    window, window_values, window_names = window_clause(query.window, "#m.")
    narrowing = "".join(f" AND {clause}" for clause in (category, window) if clause)

    def params(key_condition: str, **bounds: str) -> dict[str, Any]:
        return {
            "TableName": tables.memories_table(),
            "KeyConditionExpression": key_condition,
            "FilterExpression": not_expired("#m.expires_at") + narrowing,
            "ExpressionAttributeNames": {"#m": "memory", **window_names},
            "ExpressionAttributeValues": tables.values(
                mind=mind_id, now=now, **bounds, **category_values, **window_values
            ),
        }

    def pairs(items: list[dict[str, Any]]) -> list[Pair]:
        return [(str(i["sk"])[len(prefix) :], memory_from_item(i["memory"])) for i in items]

    lo, hi = expiry.live_tag_bounds(str(query.tag))  # ranks 0-3: the swept copies sort after them
    whole = params("pk = :mind AND sk BETWEEN :lo AND :hi", lo=lo, hi=hi)
    low = params("pk = :mind AND begins_with(sk, :low)", low=prefix + LOW_RANK)
    chunks = (
        (pairs(items), last) for items, last in _pages(whole, _submit(pool, {**whole, "Limit": size}), size)
    )
    return _Split(chunks, lambda: (m for items, _ in _pages(low, size, size) for _, m in pairs(items)))


def _indexed(mind_id: str, query: RecallQuery, now: str, size: int, pool: Executor) -> _Split:
    """GSI `recall` for the whole mind, or `category_recall` per asked category merged in recall order
    (a small first page each, so merging many stays cheap)."""
    if query.categories is None:
        parts = [("recall", "pk", mind_id)]
    else:
        parts = [("category_recall", "mind_category", f"{mind_id}#{c}") for c in sorted(query.categories)]
    first = min(-(-size // len(parts)) + 1, size)
    window, window_values, window_names = window_clause(query.window)

    def params(index: str, partition: str, key: str, bound: str) -> dict[str, Any]:
        return {
            "TableName": tables.memories_table(),
            "IndexName": index,
            "KeyConditionExpression": f"{partition} = :part" + bound,
            # An application's private memories are not the person's: a recall without a tag leaves
            # them out (docs/api.md "Application data"); a tag's recall reads that tag's copies
            "FilterExpression": not_expired("expires_at")
            + " AND NOT contains(#tags, :private)"
            + (f" AND {window}" if window else ""),
            "ExpressionAttributeNames": {"#tags": "tags", **window_names},
            "ExpressionAttributeValues": tables.values(
                part=key,
                now=now,
                private=APP_PRIVATE_TAG,
                **({"low": LOW_RANK} if bound else {}),
                **window_values,
            ),
        }

    def pairs(items: list[dict[str, Any]]) -> list[Pair]:
        return [(item["recall_sk"], memory_from_item(item)) for item in items]

    def stream(pages: Iterator[tuple[list[Any], bool]]) -> Iterator[Pair]:
        return (pair for items, _ in pages for pair in pairs(items))

    lows = [params(*part, " AND begins_with(recall_sk, :low)") for part in parts]

    def low_apart() -> Iterator[Memory]:
        streams = [stream(_pages(p, first, size)) for p in lows]
        return (memory for _, memory in heapq.merge(*streams, key=lambda pair: pair[0]))

    wholes = [params(*part, "") for part in parts]
    reads = [_pages(p, _submit(pool, {**p, "Limit": first}), size) for p in wholes]
    if len(reads) == 1:  # page by page, so `low` sees what a page read beyond the others
        return _Split(((pairs(items), last) for items, last in reads[0]), low_apart)
    merged = heapq.merge(*(stream(r) for r in reads), key=lambda pair: pair[0])
    return _Split((([pair], False) for pair in merged), low_apart)


def recall_streams(
    mind_id: str, query: RecallQuery, now: str, size: int, pool: Executor
) -> tuple[Iterator[Memory], Iterator[Memory]]:
    """(critical…normal, low) of the selection, each lazily in recall order, expired left out; the
    first page of each read is asked for at once, on `pool`."""
    split = (_tagged if query.tag is not None else _indexed)(mind_id, query, now, size, pool)
    return split.others(), split.low()
