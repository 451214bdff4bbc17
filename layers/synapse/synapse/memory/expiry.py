"""Expired memories out of the read paths: the item layout of the sweep, and what writes must know.

A memory whose `expires_at` has passed is still stored (readable by id, listed with
`include_expired`), but recall and by-tag should not pay for it. The scheduled sweep (`sweep`)
therefore takes it out of what they read, in one transaction conditioned on its version (a
concurrent write wins, and the memory's version and updated_at stay as they are):

- `recall_sk` and `mind_category` are removed, so it leaves the `recall` and `category_recall`
  GSIs (and `category_expiring`, which recall no longer reads; a later release drops it);
- each tag copy `TAG#<len>:<tag>#<recall_sk>` moves to `TAG#<len>:<tag>#~<recall_sk>`, after every
  live copy of the tag, where only by-tag's `include_expired=true` reads;
- its counters (`counts`) stop counting it: they count the memories not swept;
- `swept_at` (when) and `swept_sk` (its recall_sk then) are set; `expiry_bucket` is removed, so it
  leaves the sweep's own index and `mind_expiring` (pk, expiry_bucket), from which recall counts a
  mind's expired memories not swept yet in one query (`expired_not_swept`).

Any later write puts the memory back: `items.memory_item` always writes recall_sk, mind_category and
the bucket, and never `swept_at`. `guard` gives that write what it needs to stay exact (its
condition on the swept state, the counters to move from, the moved tag copies to delete).

How the sweep finds its work without reading the whole table: every memory item with an
`expires_at` carries `expiry_bucket` = `<hour>#<shard>`: the hour of max(expires_at, the write's
updated_at) and one of `SHARDS` shards chosen by a stable hash of the mind id. The sparse GSI
`expiry_sweep` (expiry_bucket, expires_at) lists only those not swept. A run reads, shard by shard
(in parallel, `sweep`), the buckets from that shard's watermark to the current hour, so its cost
follows what expires and no key is shared by every mind. Items written before the shards carry the
bare hour (`bucket_key(hour, None)`): the sweep reads those keys too, as one more shard (docs/deploy.md).
"""

import hashlib
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.memory.kinds import Memory
from synapse.storage import tables

SWEPT_AT = "swept_at"
SWEPT_SK = "swept_sk"
BUCKET = "expiry_bucket"
SWEEP_INDEX = "expiry_sweep"
MIND_INDEX = "mind_expiring"  # recall's count of a mind's expired memories not swept yet
# Tag copies of swept memories sort after every live copy of their tag (recall_sk starts 0-3).
SWEPT_TAG_MARK = "~"
BUCKET_WIDTH = timedelta(hours=1)
# Shards per hour. One GSI partition takes ~1,000 write units/s. At the 5,000 writes/s the model
# (docs/scaling.md, issue 23) peaks at, a common relative expiry ("+24h") can send every one of
# them to the same hour; each costs the index up to 2 writes (a rewrite moving its bucket is a
# delete and a put, the sweep another delete): 10,000/s on one key, 10x what a partition takes.
# 32 shards put ~312/s on each (a third of the limit), so even twice that peak, or a shard drawing
# 50 % more than its share, stays under it. The sweep reads 32 + 1 (legacy) keys per hour: 33
# queries per hour read, a few per run. A single mind cannot overload its shard: its own base-table
# partition (the mind id) takes the same ~1,000 writes/s.
SHARDS = 32


def bucket_of(moment: datetime) -> str:
    """The hour a moment falls in, as text that sorts like time: `2026-12-01T13`."""
    return clock.to_iso(moment)[:13]


def shard_of(mind_id: str) -> int:
    """The mind's shard: a hash stable across processes and releases (not Python's `hash`)."""
    digest = hashlib.blake2b(mind_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % SHARDS


def bucket_key(hour: str, shard: int | None) -> str:
    """The sweep index's partition key: `2026-12-01T13#07`, or the bare hour for the legacy shard
    (None): what items written before the shards carry."""
    return hour if shard is None else f"{hour}#{shard:02d}"


def item_attributes(memory: Memory) -> dict[str, str]:
    """What a memory item carries for the sweep: its bucket, when it has an expiry time.

    The bucket is that of the later of expiry and this write, so a write of an already expired
    memory lands in a bucket the sweep still reads (it re-reads the previous hour too); its shard
    is the mind's, so one hour's expiries spread over `SHARDS` keys."""
    if memory.expires_at is None:
        return {}
    hour = max(memory.expires_at, memory.updated_at)[:13]
    return {BUCKET: bucket_key(hour, shard_of(memory.mind_id))}


def expired_not_swept(mind_id: str, moment: datetime) -> Iterator[dict[str, Any]]:
    """The mind's memories expired at `moment` that the sweep has not taken out yet (category, tags,
    verified, priority, expires_at), in one query of GSI `mind_expiring` (pk, expiry_bucket): the
    bucket is on exactly the memories with an expiry that are not swept, and its hour is that of
    max(expires_at, updated_at), so every one expired by now is in a bucket before the next hour
    (`<hour>#<shard>` and the legacy bare `<hour>` both sort below it). What it reads beyond the
    answer is what expires later this hour."""
    return tables.query_all(
        TableName=tables.memories_table(),
        IndexName=MIND_INDEX,
        KeyConditionExpression=f"pk = :mind AND {BUCKET} < :next_hour",
        FilterExpression="expires_at <= :now",
        ExpressionAttributeValues=tables.values(
            mind=mind_id, next_hour=bucket_of(moment + BUCKET_WIDTH), now=clock.to_iso(moment)
        ),
    )


def swept_tag_sk(tag: str, old_recall_sk: str) -> str:
    return tables.tag_prefix(tag) + SWEPT_TAG_MARK + old_recall_sk


def live_tag_bounds(tag: str) -> tuple[str, str]:
    """BETWEEN bounds of the tag's live copies (priority ranks 0-3), swept copies left out."""
    prefix = tables.tag_prefix(tag)
    return prefix + "0", prefix + "3~"


# ---------------------------------------------------------------- what a write of an existing memory needs


class Guard(NamedTuple):
    """For a write replacing or deleting `old`:

    - `condition`: appended to the write's "unchanged" condition on the memory item, so a sweep
      between the write's read and its commit makes it retry (the sweep keeps the version);
    - `counted`: what the counters hold for it (None once swept), for `counts.operations`;
    - `moved_tags`: the keys of its moved tag copies, for the write to delete (swept only)."""

    condition: str = ""
    counted: Memory | None = None
    moved_tags: Sequence[dict[str, str]] = ()


NOT_SWEPT = f" AND attribute_not_exists({SWEPT_AT})"
SWEPT = f" AND attribute_exists({SWEPT_AT})"


def guard(old: Memory, at: datetime | None = None) -> Guard:
    """Reads the memory item again only when `old` has expired: only then can it have been swept."""
    if old.expires_at is None:
        return Guard("", old)
    if not old.is_expired(at):
        return Guard(NOT_SWEPT, old)
    item = tables.get(
        tables.memories_table(), {"pk": old.mind_id, "sk": tables.memory_sk(old.category, old.key)}
    )
    if item is None or SWEPT_AT not in item:
        return Guard(NOT_SWEPT, old)
    moved = [
        {"pk": old.mind_id, "sk": swept_tag_sk(tag, str(item[SWEPT_SK]))} for tag in item.get("tags") or []
    ]
    return Guard(SWEPT, None, moved)


# ---------------------------------------------------------------- the stream


def is_sweep_record(record: dict[str, Any]) -> bool:
    """A Memories stream record of the sweep itself (not a user-visible change: no webhook event,
    nothing to re-index): a MODIFY whose new image gained `swept_at`. Writes never set it."""
    body = record.get("dynamodb") or {}
    new, old = body.get("NewImage") or {}, body.get("OldImage") or {}
    return record.get("eventName") == "MODIFY" and SWEPT_AT in new and SWEPT_AT not in old
