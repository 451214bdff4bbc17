"""The scheduled expiry sweep: expired memories out of recall's and by-tag's indexes (see `expiry`).

One run reads the sparse `expiry_sweep` index bucket by bucket (an hour each), from the oldest bucket
that may still hold work (the watermark, one item) to the current hour, and sweeps each expired
memory in its own transaction conditioned on the version it read. It never scans the table: what
it reads is what expired since the last run, plus the few memories a concurrent write put back.

The watermark moves to the previous hour (a write committing just after its bucket was read is
picked up by the next run) or to the oldest bucket the run could not finish.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from synapse.core import clock
from synapse.core.errors import Contention
from synapse.memory import counts, expiry, writes
from synapse.memory.items import memory_from_item
from synapse.storage import tables

STATE_KEY = {"pk": "SWEEP", "sk": "EXPIRY"}
FIRST_RUN_LOOKBACK = timedelta(hours=24)


def _buckets(start: str, now: datetime) -> Iterator[str]:
    moment = datetime.fromisoformat(start + ":00:00+00:00")
    while (bucket := expiry.bucket_of(moment)) <= expiry.bucket_of(now):
        yield bucket
        moment += expiry.BUCKET_WIDTH


def sweep_ops(item: dict[str, Any], now: str) -> list[dict[str, Any]]:
    """The transaction sweeping one memory item (as read, with its recall_sk)."""
    memory = memory_from_item(item)
    mind_id, recall_sk = memory.mind_id, str(item["recall_sk"])
    ops = [
        writes.update(
            {"pk": mind_id, "sk": str(item["sk"])},
            f"REMOVE recall_sk, mind_category, {expiry.BUCKET} SET #at = :now, #sk = :rsk",
            values={"now": now, "rsk": recall_sk, "id": memory.id, "seen": memory.version},
            names={"#at": expiry.SWEPT_AT, "#sk": expiry.SWEPT_SK},
            condition="id = :id AND version = :seen AND recall_sk = :rsk" + expiry.NOT_SWEPT,
        )
    ]
    for tag in memory.tags:
        ops.append(writes.delete({"pk": mind_id, "sk": tables.tag_prefix(tag) + recall_sk}))
        moved = {"pk": mind_id, "sk": expiry.swept_tag_sk(tag, recall_sk), "memory": asdict(memory)}
        ops.append(writes.put(moved))
    return ops + counts.operations(mind_id, memory, None)


def sweep_one(pk: str, sk: str, now: datetime) -> str:
    """ "swept", "skipped" (not expired, already swept, gone) or "conflict" (a write won the race)."""
    item = tables.get(tables.memories_table(), {"pk": pk, "sk": sk})
    stamp = clock.to_iso(now)
    if item is None or expiry.SWEPT_AT in item or "recall_sk" not in item:
        return "skipped"
    if not item.get("expires_at") or str(item["expires_at"]) > stamp:
        return "skipped"
    try:
        tables.transact(sweep_ops(item, stamp))
    except ClientError as error:
        if "ConditionalCheckFailed" in tables.cancellation_codes(error):
            return "conflict"
        raise
    except Contention:
        return "conflict"
    return "swept"


def _due(bucket: str, now: str) -> Iterator[dict[str, Any]]:
    return tables.query_all(
        TableName=tables.memories_table(),
        IndexName=expiry.SWEEP_INDEX,
        KeyConditionExpression=f"{expiry.BUCKET} = :bucket AND expires_at <= :now",
        ExpressionAttributeValues=tables.values(bucket=bucket, now=now),
    )


def run(at: datetime | None = None, deadline: float | None = None) -> dict[str, int]:
    """One sweep; stops early (watermark kept at the unfinished bucket) at `deadline` (monotonic)."""
    now = at or clock.now()
    stamp = clock.to_iso(now)
    state = tables.get(tables.memories_table(), STATE_KEY)
    start = str(state["from"]) if state else expiry.bucket_of(now - FIRST_RUN_LOOKBACK)
    resume = expiry.bucket_of(now - expiry.BUCKET_WIDTH)
    tally = {"buckets": 0, "swept": 0, "skipped": 0, "conflict": 0}
    before = sum(tables.reads.values())
    for bucket in _buckets(min(start, resume), now):
        tally["buckets"] += 1
        unfinished = False
        for key in _due(bucket, stamp):
            if deadline is not None and time.monotonic() > deadline:
                unfinished = True
                break
            outcome = sweep_one(str(key["pk"]), str(key["sk"]), now)
            tally[outcome] += 1
            unfinished |= outcome == "conflict"
        if unfinished:
            resume = min(resume, bucket)
            if deadline is not None and time.monotonic() > deadline:
                break
    tables.client().put_item(
        TableName=tables.memories_table(), Item=tables.dump({**STATE_KEY, "from": resume, "at": stamp})
    )
    return {**tally, "items_read": sum(tables.reads.values()) - before}
