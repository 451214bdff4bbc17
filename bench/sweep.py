"""Expiry sweep throughput (memories/s), serial against the sharded thread pool, with DynamoDB latency.

N minds (default 3,000) each store one memory with one tag through `store.store` (the service's
own write path) into in-process moto, all expiring in the same hour. Half an hour after that the
sweep (`synapse.memory.sweep.run`) runs as in steady state (every shard's watermark at the
previous hour, as the run 15 minutes earlier left it: two hours a shard), once on each of two such
tables: with one thread (the shards one after the other: the unsharded sweep's serial loop, a
GetItem and a transaction per memory, plus the extra shards' queries) and with `sweep.WORKERS`
threads. Every DynamoDB call first waits a typical in-region latency (`LATENCY_MS`; AWS quotes
single-digit milliseconds, a transaction is a prepare and a commit), outside moto's lock, so the
threads overlap as they do on AWS. The local stack's own time per memory (botocore and moto, one
thread, no latency) is printed too: it caps the local figure where AWS would not.

What the bench trims: moto sorts every item of the table for each index query (O(table) per
query, where DynamoDB reads one key); for the sweep's sparse index it sorts only the items that
carry its key attribute (`trim_moto_sweep_queries`), so the 33 queries an hour do not swamp the
figure with moto's cost. The answers are the same.

    .venv/bin/python bench/sweep.py [--minds 3000] [--workers 16]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench_env import BENCH_ENV, moto_tables

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "synapse"), str(ROOT)]
os.environ.update({**BENCH_ENV, "POWERTOOLS_LOG_LEVEL": "WARNING"})
os.environ.pop("SYNAPSE_DYNAMODB_ENDPOINT", None)


from infra import motofix  # noqa: E402

# Typical in-region latency per DynamoDB operation, in ms (p50 order of magnitude, not a promise).
LATENCY_MS = {"GetItem": 4.0, "Query": 6.0, "PutItem": 6.0, "UpdateItem": 6.0, "TransactWriteItems": 12.0}
calls: Counter[str] = Counter()


def inject_latency(scale: float) -> None:
    """Every call of the service's DynamoDB client first sleeps its operation's latency."""
    from synapse.storage import tables

    def wait(model: Any, **_: Any) -> None:
        calls[model.name] += 1
        time.sleep(LATENCY_MS.get(model.name, 5.0) * scale / 1000)

    tables.client().meta.events.register("before-call.dynamodb", wait)


def trim_moto_sweep_queries() -> None:
    """moto's index queries sort the whole table; for the sparse sweep index, sort only its items."""
    from moto.dynamodb.models.table import Table
    from synapse.memory import expiry

    query = Table.query

    def sparse(self: Any) -> list[Any]:
        items = [i for keyed in self.items.values() for i in keyed.values() if expiry.BUCKET in i.attrs]
        return sorted(items, key=lambda x: (x.hash_key, x.range_key))

    def trimmed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if (args[7:8] or [kwargs.get("index_name")])[0] != expiry.SWEEP_INDEX:
            return query(self, *args, **kwargs)
        self.all_items = sparse.__get__(self)  # moto runs one request at a time (infra.motofix)
        try:
            return query(self, *args, **kwargs)
        finally:
            del self.all_items

    Table.query = trimmed  # type: ignore[method-assign]


def populate(minds: int) -> Any:
    """`minds` memories, one per mind, expiring in an hour; returns the moment the sweep runs, with
    every shard's watermark set to the hour before it."""
    from synapse.core import clock
    from synapse.memory import expiry, kinds, model, store, sweep
    from synapse.minds import minds as minds_of
    from synapse.storage import tables

    now = clock.now()
    soon = clock.to_iso(now + timedelta(hours=1))
    for i in range(minds):
        body = {"category": "fact", "key": "k", "content": f"memory {i}", "tags": ["t"], "expires_at": soon}
        mind, _ = minds_of.create_mind(f"bench-user-{i // 50}", f"Mind {i}")
        store.store(mind.id, model.MemoryWrite.from_body(body), kinds.Source.USER, at=now)
    at = now + timedelta(minutes=90)
    for shard in sweep.ALL_SHARDS:
        state = {**sweep.state_key(shard), "from": expiry.bucket_of(at - expiry.BUCKET_WIDTH)}
        tables.client().put_item(TableName=tables.memories_table(), Item=tables.dump(state))
    return at


def one_run(minds: int, workers: int, scale: float) -> tuple[float, dict[str, int]]:
    """Memories swept per second by one run with `workers` threads, on a fresh table."""
    from synapse.memory import sweep

    with moto_tables():
        at = populate(minds)
        inject_latency(scale)
        calls.clear()
        started = time.perf_counter()
        tally = sweep.run(at=at, workers=workers)
        seconds = time.perf_counter() - started
    return tally["swept"] / seconds, {**tally, "seconds_x1000": round(seconds * 1000), **calls}


def moto_cpu_per_memory(minds: int) -> float:
    """Seconds of moto's time per memory swept, with no latency injected and one thread."""
    rate, _ = one_run(minds, 1, 0.0)
    return 1 / rate


def main() -> int:
    from synapse.memory import sweep

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minds", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=sweep.WORKERS)
    parser.add_argument("--latency-scale", type=float, default=1.0, help="multiply every latency")
    args = parser.parse_args()
    motofix.apply()
    trim_moto_sweep_queries()
    print(f"{args.minds:,} minds, one expired memory (one tag) each; latency ms: {LATENCY_MS}", flush=True)
    serial, serial_tally = one_run(args.minds, 1, args.latency_scale)
    print(f"before, 1 thread:    {serial:8,.0f} memories/s   {serial_tally}", flush=True)
    pooled, pooled_tally = one_run(args.minds, args.workers, args.latency_scale)
    print(f"after, {args.workers} threads: {pooled:8,.0f} memories/s   {pooled_tally}", flush=True)
    print(f"ratio after/before: {pooled / serial:.1f}x")
    cpu = moto_cpu_per_memory(min(args.minds, 1000))
    per_memory = (LATENCY_MS["GetItem"] + LATENCY_MS["TransactWriteItems"]) * args.latency_scale / 1000
    print(
        f"local stack's own time per memory (botocore + moto, 1 thread, no latency): {cpu * 1000:.1f} ms,"
        f" so this machine caps"
        f" the model at ~{1 / cpu:,.0f} memories/s whatever the threads;\n"
        f"on AWS, latency only (the CPU per memory, which holds the GIL, caps it lower: bench/scale.py):"
        f" {args.workers} threads / ({per_memory * 1000:.0f} ms GetItem + transaction)"
        f" = {args.workers / per_memory:,.0f} memories/s per invocation"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
