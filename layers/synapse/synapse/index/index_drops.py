"""Markers of search indexes to drop: one small item per deleted mind, written when the mind is
deleted, so the orphan sweep (`orphans`) finds deleted minds' folders by reading what DynamoDB knows
instead of listing every mind's folder on EFS.

Minds table: `DROPINDEX#<day>#<shard> / MIND#<mind id>` (mind_id, deleted_at, `ttl` 30 days). A
marker sits in the partition of its deletion's UTC day and one of `SHARDS` shards, crc32(mind id)
mod 16: a burst of deletions spreads over 16 keys (no key is shared by every deletion), and a day's
markers are read in 16 strongly consistent queries.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from datetime import datetime, timedelta

from synapse.core import clock
from synapse.storage import tables

TTL = timedelta(days=30)  # a sweep broken longer than this leaves the rest to the background pass
PREFIX = "DROPINDEX#"
SHARDS = 16


def shard_of(mind_id: str) -> int:
    """Stable across processes (unlike hash()), so a marker's writer and the sweep agree."""
    return zlib.crc32(mind_id.encode()) % SHARDS


def partition(day: str, shard: int) -> str:
    return f"{PREFIX}{day}#{shard:02d}"


def marker_key(mind_id: str, day: str) -> dict[str, str]:
    return {"pk": partition(day, shard_of(mind_id)), "sk": f"MIND#{mind_id}"}


def day_of(moment: datetime) -> str:
    return clock.to_iso(moment)[:10]


def record(mind_id: str, at: datetime | None = None) -> None:
    """Idempotent: a DELETE sent again the same day rewrites the same marker (another day, another)."""
    moment = at or clock.now()
    marker = {
        **marker_key(mind_id, day_of(moment)),
        "mind_id": mind_id,
        "deleted_at": clock.to_iso(moment),
        "ttl": int((moment + TTL).timestamp()),
    }
    tables.client().put_item(TableName=tables.minds_table(), Item=tables.dump(marker))


def markers(day: str, shard: int, after: str | None, page: int = 100) -> Iterator[tuple[str, str]]:
    """(sort key, mind id) of a day's shard in key order, from just after `after` (a sort key)."""
    pk = partition(day, shard)
    params = {
        "TableName": tables.minds_table(),
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": tables.values(pk=pk),
        "ConsistentRead": True,
        "Limit": page,
    }
    if after:
        params["ExclusiveStartKey"] = tables.dump({"pk": pk, "sk": after})
    for item in tables.query_all(**params):
        yield str(item["sk"]), str(item.get("mind_id", ""))
