"""The scheduled expiry sweep: expired memories out of recall's and by-tag's indexes (see `expiry`).

The sparse `expiry_sweep` index is keyed by hour x shard (`expiry.bucket_key`), plus the legacy
unsharded hours of items written before the shards. The shards are split into `GROUPS` groups, one
scheduled invocation each (template.yaml: one schedule per group), because one Python process sweeps
at most about 1 / (its CPU per memory) memories a second whatever its threads: botocore's work per
call holds the GIL (bench/scale.py measures it). An invocation sweeps its group's shards on a
bounded thread pool, `WORKERS` threads shared between the shards and, within a shard, the memories
of each page it reads. A shard reads its buckets (an hour each) from its own watermark (one item per
shard) to the current hour, and sweeps each expired memory in its own transaction conditioned on
the version it read. It never scans the table: what it reads is what expired since the last run,
plus the few memories a concurrent write put back.

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
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from synapse.core import clock
from synapse.core.errors import Contention
from synapse.core.observability import in_this_invocation, logger
from synapse.memory import counts, expiry, writes
from synapse.memory.items import memory_from_item
from synapse.storage import tables

FIRST_RUN_LOOKBACK = timedelta(hours=24)
# Every shard, then the legacy one (None: the bare hours written before the shards).
ALL_SHARDS: tuple[int | None, ...] = (*range(expiry.SHARDS), None)
# Threads per invocation. Sweeping a memory is a GetItem and a transaction: ~16 ms of DynamoDB
# latency and ~2.3 ms of CPU (bench/scale.py), so ~8 threads already make one process CPU-bound
# (~430/s); 16 keep it there while some wait, within the shared client's pool (`tables.client`).
WORKERS = 16
# Invocations per scheduled sweep (template.yaml has one schedule per group). 8 x ~430/s for 98 %
# of the time sustains ~3,400 expirations/s (bench/scale.py), against the 1,000/s of 5,000 writes/s
# with a fifth expiring (docs/scaling.md).
GROUPS = 8


def group_shards(group: int, groups: int = GROUPS) -> tuple[int | None, ...]:
    """The shards one invocation sweeps: every `groups`-th from `group`, the legacy one in group 0."""
    if not 0 <= group < groups:
        raise ValueError(f"group must be in 0..{groups - 1}, not {group}")
    found: tuple[int | None, ...] = tuple(s for s in range(expiry.SHARDS) if s % groups == group)
    return (*found, None) if group == 0 else found


def shards_for(event: dict[str, Any]) -> tuple[int | None, ...]:
    """What a scheduled invocation sweeps: its `group`'s shards, or every shard when none is named
    (an invocation by hand, the local stack)."""
    group = event.get("group")
    if group is None:
        return ALL_SHARDS
    if not isinstance(group, int) or isinstance(group, bool):
        raise ValueError(f"group must be an integer, not {group!r}")
    return group_shards(group)


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
        moved = {
            "pk": mind_id,
            "sk": expiry.swept_tag_sk(tag, recall_sk),
            "memory": {**memory._asdict(), "tags": list(memory.tags)},
        }
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


def _due(bucket: str, now: str) -> Iterator[tuple[list[dict[str, Any]], Any]]:
    return tables.query_pages(
        TableName=tables.memories_table(),
        IndexName=expiry.SWEEP_INDEX,
        KeyConditionExpression=f"{expiry.BUCKET} = :bucket AND expires_at <= :now",
        ExpressionAttributeValues=tables.values(bucket=bucket, now=now),
    )


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline


def _sweep_page(keys: list[dict[str, Any]], now: datetime, deadline: float | None, threads: int) -> list[str]:
    """Outcomes of a page of due keys, `threads` at a time; "late" for those the deadline left."""

    def one(key: dict[str, Any]) -> str:
        return "late" if _past(deadline) else sweep_one(str(key["pk"]), str(key["sk"]), now)

    if threads <= 1 or len(keys) <= 1:
        return [one(key) for key in keys]
    with ThreadPoolExecutor(max_workers=min(threads, len(keys))) as pool:
        return [future.result() for future in [pool.submit(in_this_invocation(one), key) for key in keys]]


def sweep_shard(
    shard: int | None, now: datetime, deadline: float | None = None, threads: int = 1
) -> Counter[str]:
    """One shard from its watermark to now, `threads` memories at a time; its watermark moves only
    when this returns."""
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
        for page, _ in _due(expiry.bucket_key(hour, shard), stamp):
            outcomes = Counter(_sweep_page(page, now, deadline, threads))
            unfinished |= bool(outcomes.pop("late", 0) or outcomes["conflict"])
            tally.update(outcomes)
            if _past(deadline):
                unfinished = True
                break
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
    """One sweep of `shards` on at most `workers` threads (split between the shards in flight and
    the memories within each); stops starting shards, and sweeping, at `deadline` (monotonic). A
    shard that raises is counted in `failed` and keeps its watermark. `lag_seconds`: how far
    behind the oldest of these shards' watermarks is (left out if none could be read)."""
    now = at or clock.now()
    tally: Counter[str] = Counter({"buckets": 0, "swept": 0, "skipped": 0, "conflict": 0})
    tally.update({"shards": 0, "deferred": 0, "failed": 0})
    before = sum(tables.reads.values())
    tables.client()  # made once here: threads racing the cache would each build one
    in_flight = max(1, min(workers, len(shards)))
    with ThreadPoolExecutor(max_workers=in_flight) as pool:
        threads = max(1, workers // in_flight)
        sweeps = [(shard, in_this_invocation(sweep_shard)) for shard in shards]
        futures = [(shard, pool.submit(sweep, shard, now, deadline, threads)) for shard, sweep in sweeps]
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
