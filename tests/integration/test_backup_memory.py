"""A backup holds a page in memory, never the mind (issue 24: a 100k-memory mind's backup bounded).

The mind's Memories-table partition is served by a stand-in that makes each item when it is read
(moto keeps every item in memory, and its queries copy the partition, which would measure moto):
what is measured is the layer's own memory while it pages through the backup."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from synapse.minds import minds
from synapse.portability import backup
from synapse.storage import tables

from tests.support.api import Api


def _item(mind_id: str, index: int) -> dict[str, Any]:
    at = "2026-11-30T08:00:00.000Z"
    return {
        "pk": mind_id,
        "sk": f"MEM#fact#key_{index:07d}",
        "id": f"mem_{index:022d}",
        "mind_id": mind_id,
        "category": "fact",
        "key": f"key_{index:07d}",
        "content": f"Memory number {index}, " + "with some words in it " * 12,
        "tags": ["bench", f"t{index % 50}"],
        "priority": "normal",
        "source": "agent",
        "verified": index % 2 == 0,
        "confidence": 0.7,
        "created_at": at,
        "updated_at": at,
        "version": 1,
    }


def _partition(mind_id: str, memories: int) -> Any:
    """query_pages over a partition of `memories` memory items and nothing else, made as read."""
    real = tables.query_pages

    def query_pages(**params: Any) -> Iterator[tuple[list[dict[str, Any]], dict[str, Any] | None]]:
        if params["TableName"] != tables.memories_table():
            yield from real(**params)
            return
        prefix = params["ExpressionAttributeValues"][":prefix"]["S"]
        if prefix != tables.MEMORY_PREFIX:
            yield [], None
            return
        start = params.get("ExclusiveStartKey")
        first = int(start["sk"]["S"].rsplit("_", 1)[1]) + 1 if start else 0
        end = min(memories, first + params["Limit"])
        last = tables.dump({"pk": mind_id, "sk": f"MEM#fact#key_{end - 1:07d}"}) if end < memories else None
        yield [_item(mind_id, i) for i in range(first, end)], last

    return query_pages


def _peak(api: Api, monkeypatch: pytest.MonkeyPatch, memories: int) -> tuple[int, int]:
    """(peak bytes allocated while paging through the whole backup, lines written)."""
    mind = api.create_mind()
    monkeypatch.setattr(tables, "query_pages", _partition(mind.id, memories))
    owned = minds.get_mind(mind.id)
    lines, after = 0, None
    tracemalloc.start()
    try:
        while True:
            page = backup.page(owned, "user-1", "http://127.0.0.1:3000", after, max_lines=500)
            lines += page.lines  # written out, as the CLI does, then dropped
            after = page.next_cursor
            if after is None:
                break
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    monkeypatch.undo()
    return peak, lines


def test_a_backups_memory_stays_that_of_a_page_however_large_the_mind(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a mind of 1,000 memories and one of 10,000
    # When each is backed up, page after page of 500 lines
    small, small_lines = _peak(api, monkeypatch, 1_000)
    large, large_lines = _peak(api, monkeypatch, 10_000)
    # Then every memory is in its backup
    assert (small_lines, large_lines) == (1_000 + 5, 10_000 + 5)  # header, mind, its key, its owner, trailer
    # And ten times the memories take about the same memory: a page's, not the mind's
    print(f"peak {small} B at 1,000 memories, {large} B at 10,000")
    assert large < small * 1.5, (small, large)
    assert large < 2_000_000, large
