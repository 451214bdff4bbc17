"""The scheduled expiry sweep: expired memories out of recall's and by-tag's indexes (see `expiry`).

The sparse `expiry_sweep` index is keyed by hour x shard (`expiry.bucket_key`), plus the legacy
unsharded hours of items written before the shards. One run sweeps every shard, `WORKERS` at a
time on a bounded thread pool; a shard reads its buckets (an hour each) from its own watermark (one
item per shard) to the current hour, and sweeps each expired memory in its own transaction
conditioned on the version it read. It never scans the table: what it reads is what expired since
the last run, plus the few memories a concurrent write put back.

A shard's watermark moves to the previous hour (a write committing just after its bucket was read
is picked up by the next run) or to the oldest bucket it could not finish. Shards are independent:
one that fails, or that the run has no time left to start, keeps its watermark and the next run
takes it up, whatever order shards ran in.

How far behind the sweep is (`lag_seconds`, alarmed on as `LAG_METRIC`): from the start of the
oldest hour a shard's next run starts from to now, read back from the watermarks once the shards are
done. A shard that keeps up starts from the previous hour, so a healthy run reports 1-2 h (also with
nothing to expire: the watermarks move on over empty hours); a shard that failed, was deferred or
stopped for time in an older hour makes it 2 h or more.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from synapse.core import clock
from synapse.core.errors import Contention
from synapse.core.observability import logger
from synapse.memory import counts, expiry, writes
from synapse.memory.items import memory_from_item
from synapse.storage import tables

FIRST_RUN_LOOKBACK = timedelta(hours=24)
# Every shard, then the legacy one (None: the bare hours written before the shards).
ALL_SHARDS: tuple[int | None, ...] = (*range(expiry.SHARDS), None)
# Threads per run. Sweeping a memory is a GetItem and a transaction, ~15 ms of DynamoDB latency
# and little CPU: 16 threads make ~1,000 memories/s (bench/sweep.py), and 16 connections stay
# within the shared client's pool (`tables.client`).
WORKERS = 16
# The sweep's metrics (namespace Synapse, dimension service): template.yaml's ExpirySweepLagAlarm
# reads LAG_METRIC; a failed shard fails the run, which ExpirySweepErrorsAlarm sees.
LAG_METRIC = "ExpirySweepLagSeconds"
FAILED_METRIC = "ExpirySweepFailedShards"


def state_key(shard: int | None) -> dict[str, str]:
    """The shard's watermark item; the legacy shard keeps the one the unsharded sweep wrote."""
    return {"pk": "SWEEP", "sk": "EXPIRY" if shard is None else f"EXPIRY#{shard:02d}"}


def _start_of(hour: str) -> datetime:
    return datetime.fromisoformat(hour + ":00:00+00:00")


def _next_start(state: dict[str, Any] | None, now: datetime) -> str:
    """The hour a shard's next run starts from: its watermark, or a day back for a shard never swept."""
    return str(state["from"]) if state else expiry.bucket_of(now - FIRST_RUN_LOOKBACK)


def _buckets(start: str, now: datetime) -> Iterator[str]:
    moment = _start_of(start)
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


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline


def sweep_shard(shard: int | None, now: datetime, deadline: float | None = None) -> Counter[str]:
    """One shard from its watermark to now; its watermark moves only when this returns."""
    tally: Counter[str] = Counter()
    if _past(deadline):
        tally["deferred"] += 1  # not started: the next run takes it from its watermark
        return tally
    stamp = clock.to_iso(now)
    state = tables.get(tables.memories_table(), state_key(shard))
    start = _next_start(state, now)
    resume = expiry.bucket_of(now - expiry.BUCKET_WIDTH)
    for hour in _buckets(min(start, resume), now):
        tally["buckets"] += 1
        unfinished = False
        for key in _due(expiry.bucket_key(hour, shard), stamp):
            if _past(deadline):
                unfinished = True
                break
            outcome = sweep_one(str(key["pk"]), str(key["sk"]), now)
            tally[outcome] += 1
            unfinished |= outcome == "conflict"
        if unfinished:
            resume = min(resume, hour)
            if _past(deadline):
                break
    tables.client().put_item(
        TableName=tables.memories_table(),
        Item=tables.dump({**state_key(shard), "from": resume, "at": stamp}),
    )
    return tally


def _lag_of(shard: int | None, now: datetime) -> float | None:
    """Seconds from the start of the hour this shard's next run starts from to `now` (None: unread)."""
    try:
        state = tables.get(tables.memories_table(), state_key(shard))
    except Exception:  # the lag is a report: it must not fail the run it reports on
        logger.exception("expiry sweep: a watermark could not be read", extra={"shard": shard})
        return None
    return (now - _start_of(_next_start(state, now))).total_seconds()


def run(
    at: datetime | None = None,
    deadline: float | None = None,
    shards: Sequence[int | None] = ALL_SHARDS,
    workers: int = WORKERS,
) -> dict[str, int]:
    """One sweep of `shards` on at most `workers` threads; stops starting shards, and sweeping, at
    `deadline` (monotonic). A shard that raises is counted in `failed` and keeps its watermark.
    `lag_seconds`: how far behind the oldest shard's watermark is (left out if none could be read)."""
    now = at or clock.now()
    tally: Counter[str] = Counter({"buckets": 0, "swept": 0, "skipped": 0, "conflict": 0})
    tally.update({"shards": 0, "deferred": 0, "failed": 0})
    before = sum(tables.reads.values())
    tables.client()  # made once here: threads racing the cache would each build one
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(shards)))) as pool:
        futures = [(shard, pool.submit(sweep_shard, shard, now, deadline)) for shard in shards]
        for shard, future in futures:
            tally["shards"] += 1
            try:
                tally.update(future.result())
            except Exception:  # one shard's failure must not cost the others their run
                logger.exception("expiry sweep shard failed", extra={"shard": shard})
                tally["failed"] += 1
        read = sum(tables.reads.values()) - before  # what sweeping read, without the watermarks below
        lags = [lag for lag in pool.map(lambda shard: _lag_of(shard, now), shards) if lag is not None]
    lag = {"lag_seconds": int(max(lags))} if lags else {}
    return {**tally, "items_read": read, **lag}
