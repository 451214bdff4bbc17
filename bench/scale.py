"""A million minds, modelled on this machine: the real write, recall, sweep and indexer code, before
and after issue 23, then extrapolated with the arithmetic printed.

    .venv/bin/python bench/scale.py [--baseline 1760cfb] [--minds 10000] [--sweep-minds 2000]

Each side runs in child processes of this run with its own `layers/synapse`, `infra/` and
`template.yaml` ("before" exported from `--baseline` with `git archive`; "after" the working tree):

- **write units per store**: a 100-byte memory with two tags, stored through `store.store` into
  in-process moto (tables from that side's template). Each TransactWriteItems is priced from the
  old and new image of every item it names (`pricing`: AWS's rules, GSIs from the template, x2 in
  a transaction); the request's rate-limit counter (+1) is outside the store and not counted.
- **recall calls per request**: a default recall (`recall_of`, no filters) of a typical mind: 100
  memories over 4 categories, 10 low, 20 expiring later, 5 expired and not swept yet. Counted: the
  DynamoDB calls by operation and the items read (`tables.reads`).
- **expiry sweep**: `--sweep-minds` minds, one expiring memory (one tag) each, swept by one
  steady-state `sweep.run` on one thread with no latency. Measured per memory swept: the DynamoDB
  calls by operation and the sweep's own CPU (the process's CPU less moto's, timed around moto's
  request handler; moto's tables are frozen out of the garbage collector, which a Lambda never
  walks). Modelled on AWS: an invocation keeps its threads' memories in flight, each costing the
  calls' latencies (`LATENCY_MS`) plus that CPU, on at most one core (the GIL) of what its memory
  size buys: min(in flight / (latency + cpu), cores / cpu) memories/s, times the invocations each
  period (`sweep.GROUPS`), for (Timeout - 20 s) of each period. moto itself (~25 ms a memory under
  one lock) is left out: on AWS that time is DynamoDB's latency.
- **indexer**: `bench/indexer.py`'s child (the real `index_stream` on local disk with EFS
  latencies injected per call) at `--minds` minds, one change per mind per batch; it prints
  records/s per shard, file-system calls per mind per batch, and the bytes SQLite wrote and read
  per change (`/proc/self/io`); and its CPU per record (every thread's: the embedding runs on one
  of its own), so the rate one vCPU (the IndexerFunction's 1,769 MB) could sustain whatever this
  machine's load. `--minds 500` (5 batches of 100) is the smallest run in which every record is of
  a different mind, as at a million minds; the minds beyond those only cost the seeding (5
  memories each, embedded).
- **search cold open**: how many bytes a reader's first open reads (base + log) and how many the
  writer writes per change (log frames + compactions amortised), from that side's compaction
  rule (`generations.compaction_threshold`, before: a ratio and a floor) and the measured log bytes per
  change, for minds of 100 to 100,000 memories (1.5 kB of index per memory, docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import nullcontext
from datetime import timedelta
from pathlib import Path
from typing import Any

import pricing
from bench_env import BENCH_ENV, index_module, moto_tables

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "1760cfb"  # the last commit before issue 23's work
# Typical in-region latency per DynamoDB operation, ms (as bench/sweep.py).
LATENCY_MS = {"GetItem": 4.0, "Query": 6.0, "PutItem": 6.0, "UpdateItem": 6.0, "TransactWriteItems": 12.0}
TARGET_MINDS, TARGET_MEMORIES, TARGET_WRITES, EXPIRING_SHARE = 1_000_000, 100_000_000, 5_000, 0.2
PARTITION_WCU = 1_000  # a DynamoDB partition takes ~1,000 write units/s; the stream has a shard per partition
TABLE_WCU_QUOTA = 40_000  # on-demand per-table default quota (write request units/s)
INDEX_BYTES_PER_MEMORY = 1_500
# What a compaction that reuses the retired base writes, per change, as a share of the log's own
# bytes per change: 0.68 at 10,000 memories and 0.76 at 100,000 in bench/compaction.py (the steady
# state of one-change batches; docs/scaling.md), since this model's minds are too small to compact.
REUSED_COMPACTION_SHARE = 0.8
EFS_WRITE_PER_GB, EFS_READ_PER_GB = 0.06, 0.03  # Elastic throughput, us-east-1
SWEEP_MARGIN_S = 20  # functions/expiry_sweep stops this long before its timeout


# ---------------------------------------------------------------- the child: one side, in moto


def _moto_timer() -> list[float]:
    """Accumulates the CPU time threads spend inside moto's request handler (the fake DynamoDB)."""
    from moto.core.botocore_stubber import BotocoreStubber

    spent = [0.0]
    real = BotocoreStubber.process_request

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return real(self, *args, **kwargs)
        finally:
            spent[0] += time.thread_time() - started

    BotocoreStubber.process_request = timed  # type: ignore[method-assign]
    return spent


CALLS: Counter[str] = Counter()


def _counter() -> Counter[str]:
    """The service client's DynamoDB calls by operation, counted from zero again."""
    from synapse.storage import tables

    tables.client().meta.events.register(
        "before-call.dynamodb", lambda model, **_: CALLS.update([model.name]), unique_id="bench-count"
    )
    CALLS.clear()
    return CALLS


def _gsis() -> dict[str, list[dict[str, Any]]]:
    from infra import template

    names = {"MemoriesTable": "bench-memories", "MindsTable": "bench-minds"}
    return {names[n]: d.get("GlobalSecondaryIndexes", []) for n, d in template.table_definitions().items()}


def _priced_transactions() -> list[int]:
    """Every TransactWriteItems from here on is priced into the returned list (units per call)."""
    import boto3
    from synapse.storage import tables

    raw, gsis, priced = boto3.client("dynamodb", region_name="us-east-1"), _gsis(), []
    pending: list[list[tuple[str, dict[str, Any], dict[str, Any] | None]]] = []  # one thread writes here

    def key_of(op: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        body = next(iter(op.values()))
        key = body.get("Key") or {k: body["Item"][k] for k in ("pk", "sk")}
        return body["TableName"], key

    def before(params: dict[str, Any], **_: Any) -> None:
        olds = []
        for op in params["TransactItems"]:
            if "ConditionCheck" in op:
                continue
            table, key = key_of(op)
            olds.append((table, key, raw.get_item(TableName=table, Key=key).get("Item")))
        pending.append(olds)

    def after(parsed: dict[str, Any], **_: Any) -> None:
        olds = pending.pop()
        if "Error" in parsed:
            return
        total = 0
        for table, key, old in olds:
            new = raw.get_item(TableName=table, Key=key).get("Item")
            total += pricing.item_write_units(old, new, gsis[table])
        priced.append(2 * total)

    events = tables.client().meta.events
    events.register("before-parameter-build.dynamodb.TransactWriteItems", before, unique_id="price-before")
    events.register("after-call.dynamodb.TransactWriteItems", after, unique_id="price-after")
    return priced


def _stop_pricing() -> None:
    from synapse.storage import tables

    events = tables.client().meta.events
    events.unregister("before-parameter-build.dynamodb.TransactWriteItems", unique_id="price-before")
    events.unregister("after-call.dynamodb.TransactWriteItems", unique_id="price-after")


def _write(mind_id: str, key: str, category: str = "fact", at: Any = None, **fields: Any) -> None:
    from unittest import mock

    from synapse.core import clock
    from synapse.memory import kinds, model, store

    body = {"category": category, "key": key, "content": "x" * 100, "tags": ["home", "coffee"], **fields}
    # A write `at` a past moment is checked then: its expiry need only be future then (issue 34 item 5)
    with mock.patch.object(clock, "now", lambda: at) if at is not None else nullcontext():
        write = model.MemoryWrite.from_body(body)
    store.store(mind_id, write, kinds.Source.USER, at=at)


def write_units() -> dict[str, Any]:
    from synapse.minds import minds

    mind, _ = minds.create_mind("bench-writer", "Writes")
    for n in range(10):
        _write(mind.id, f"warm_{n}")
    priced, calls = _priced_transactions(), _counter()
    for n in range(10):
        _write(mind.id, f"new_{n}")
    new_units, new_calls = sorted(priced), sum(calls.values()) / 10
    priced.clear()
    for n in range(10):
        _write(mind.id, f"new_{n}", content="y" * 100)
    _stop_pricing()
    return {
        "store_new": new_units[len(new_units) // 2],
        "store_replace": sorted(priced)[5],
        "calls": new_calls,
    }


def recall_calls() -> dict[str, Any]:
    from synapse.core import clock
    from synapse.minds import minds
    from synapse.recall import query, reads
    from synapse.storage import tables

    mind, _ = minds.create_mind("bench-recaller", "Typical")
    now, categories = clock.now(), ["fact", "preference", "project", "skill"]
    for n in range(100):
        extra: dict[str, Any] = {"priority": "low"} if n < 10 else {}
        if 10 <= n < 30:
            extra["expires_at"] = clock.to_iso(now + timedelta(days=7))
        elif 30 <= n < 35:
            extra.update(expires_at=clock.to_iso(now - timedelta(minutes=5)), at=now - timedelta(hours=1))
        _write(mind.id, f"memory_{n}", categories[n % 4], **extra)
    calls = _counter()
    tables.reads.clear()
    answer = reads.recall_of(mind.id, query.RecallQuery())
    return {
        "calls": dict(calls),
        "total": sum(calls.values()),
        "items_read": sum(tables.reads.values()),
        "chars": len(answer.text),
    }


def sweep_model(minds_count: int) -> dict[str, Any]:
    from synapse.core import clock
    from synapse.memory import expiry, sweep
    from synapse.minds import minds
    from synapse.storage import tables

    from infra import template

    now = clock.now()
    soon = clock.to_iso(now + timedelta(hours=1))
    for i in range(minds_count):
        mind, _ = minds.create_mind(f"bench-user-{i // 50}", f"Mind {i}")
        _write(mind.id, "k", expires_at=soon, tags=["t"], at=now)
    at = now + timedelta(minutes=90)
    watermark = expiry.bucket_of(at - expiry.BUCKET_WIDTH)
    states = (
        [sweep.state_key(s) for s in sweep.ALL_SHARDS] if hasattr(sweep, "ALL_SHARDS") else [sweep.STATE_KEY]
    )
    for state in states:
        item = {**state, "from": watermark}
        tables.client().put_item(TableName=tables.memories_table(), Item=tables.dump(item))
    moto, calls = _moto_timer(), _counter()
    workers, groups = getattr(sweep, "WORKERS", 1), getattr(sweep, "GROUPS", 1)
    shards = len(sweep.group_shards(0)) if groups > 1 else 1 if workers == 1 else len(sweep.ALL_SHARDS)
    in_flight = min(workers, shards) * max(1, workers // min(workers, shards))
    options = {"workers": 1} if workers > 1 else {}  # one thread here: CPU is measured, not overlapped
    gc.collect()
    gc.freeze()  # moto's tables are this process's objects; a Lambda's collector never walks them
    cpu = time.process_time()
    tally = sweep.run(at=at, **options)
    cpu = time.process_time() - cpu - moto[0]
    function = template.resources("AWS::Serverless::Function")["ExpirySweepFunction"]["Properties"]
    schedule = next(iter(function["Events"].values()))["Properties"]["Schedule"]
    return {
        "swept": tally["swept"],
        "calls": dict(calls),
        "cpu_s": cpu,
        "workers": workers,
        "in_flight": in_flight,
        "groups": groups,
        "timeout_s": function["Timeout"],
        "memory_mb": function.get("MemorySize", 512),
        "period_s": int(schedule.split("(")[1].split()[0]) * 60,
    }


MIND_SIZES = (100, 1_000, 10_000, 100_000)


def compaction() -> dict[str, float]:
    """The log size at which this side compacts a mind of each size (its own rule)."""
    generations = index_module("generations")

    def threshold(base: int) -> float:
        if hasattr(generations, "compaction_threshold"):
            return float(generations.compaction_threshold(base))
        return max(generations.COMPACT_MIN_BYTES, generations.COMPACT_RATIO * base)

    found = {str(memories): threshold(memories * INDEX_BYTES_PER_MEMORY) for memories in MIND_SIZES}
    # a compaction that reuses the retired base (issue 43): from bases of this size on
    with contextlib.suppress(ModuleNotFoundError, AttributeError):
        found["reuse_min"] = float(index_module("generations").REUSE_MIN_BYTES)
    return found


def child(args: argparse.Namespace) -> dict[str, Any]:
    with moto_tables():
        result = {"writes": write_units(), "recall": recall_calls(), "sweep": sweep_model(args.sweep_minds)}
    return {**result, "compaction": compaction()}


# ---------------------------------------------------------------- the parent: both sides, then the model


def _run(code: Path, command: list[str], out: Path) -> dict[str, Any]:
    env = {**os.environ, **BENCH_ENV, "POWERTOOLS_LOG_LEVEL": "ERROR", "POWERTOOLS_METRICS_DISABLED": "true"}
    # ROOT last: the side's own layer and infra come first; only what the archived side lacks (the
    # benches' shared `tests.support.streams`, bench/indexer.py's record builder) is found in ROOT.
    paths = [code / "layers" / "synapse", code, ROOT / "bench", ROOT]
    env["PYTHONPATH"] = os.pathsep.join(str(path) for path in paths)
    env.pop("SYNAPSE_DYNAMODB_ENDPOINT", None)
    subprocess.run([sys.executable, *command, "--out", str(out)], env=env, check=True, cwd=code)
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def side(code: Path, args: argparse.Namespace, temp: Path, name: str) -> dict[str, Any]:
    print(f"  {name}: DynamoDB figures …", flush=True)
    dynamo = _run(
        code,
        [str(Path(__file__).resolve()), "--child", "--sweep-minds", str(args.sweep_minds)],
        temp / f"{name}-d.json",
    )
    print(f"  {name}: indexer at {args.minds:,} minds …", flush=True)
    indexer = [str(ROOT / "bench" / "indexer.py"), "--child", "--minds", str(args.minds)]
    indexer += ["--batches", str(args.batches), "--batch-size", "100"]
    return {**dynamo, "indexer": _run(code, indexer, temp / f"{name}-i.json")}


def sweep_rates(s: dict[str, Any]) -> dict[str, float]:
    """One invocation keeps `in_flight` memories going, each a worker's latency plus CPU, on at most
    one core (the GIL) of what its memory size buys; `groups` invocations run each period."""
    per_memory = {op: n / s["swept"] for op, n in s["calls"].items()}
    latency = sum(LATENCY_MS.get(op, 5.0) * n for op, n in per_memory.items()) / 1000
    cpu = s["cpu_s"] / s["swept"]
    cores = min(1.0, s["memory_mb"] / 1769)
    invocation = min(s["in_flight"] / (latency + cpu), cores / cpu)
    duty = (s["timeout_s"] - SWEEP_MARGIN_S) / s["period_s"]
    return {
        "latency_ms": latency * 1000,
        "cpu_ms": cpu * 1000,
        "cores": cores,
        "invocation": invocation,
        "duty": duty,
        "sustained": invocation * s["groups"] * duty,
        "calls": sum(per_memory.values()),
    }


def cold_open(c: dict[str, float], log_per_change: float, memories: int) -> tuple[float, float]:
    """(bytes a first open reads at worst, bytes written per change) for a mind of `memories`: the
    log, and the compactions' share (a copy of the base every `threshold` of log; where the side
    reuses the retired base, the pages it brings up to date, REUSED_COMPACTION_SHARE of the log)."""
    base, threshold = memories * INDEX_BYTES_PER_MEMORY, c[str(memories)]
    compacting = base * log_per_change / threshold
    if base >= c.get("reuse_min", float("inf")):
        compacting = min(compacting, REUSED_COMPACTION_SHARE * log_per_change)
    return base + threshold, log_per_change + compacting


def figures(s: dict[str, Any]) -> dict[str, float]:
    ix = s["indexer"]
    return {
        "indexer records/s per shard (EFS latency)": ix["records"] / ix["wall_s"],
        "indexer CPU ms per record (all threads)": 1000 * ix["cpu_s"] / ix["records"],
        "indexer records/s CPU-bound at 1,769 MB (1 vCPU)": ix["records"] / ix["cpu_s"],
        "indexer NFS calls per mind per batch": sum(
            v for k, v in ix["per_mind_batch"].items() if k != "dynamodb"
        ),
        "EFS kB written per change (log frames)": ix["bytes_written"] / ix["records"] / 1000,
        "expiry sweep memories/s an invocation (model)": sweep_rates(s["sweep"])["invocation"],
        "expiry sweep memories/s sustained (model)": sweep_rates(s["sweep"])["sustained"],
        "write units per store (new, 2 tags)": s["writes"]["store_new"],
        "write units per store (replace by key)": s["writes"]["store_replace"],
        "recall DynamoDB calls per request": s["recall"]["total"],
        "recall items read per request": s["recall"]["items_read"],
        "cold open MB read, 1k-memory mind (worst)": cold_open(
            s["compaction"], ix["bytes_written"] / ix["records"], 1000
        )[0]
        / 1e6,
    }


def report(before: dict[str, Any], after: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"\n{'figure':<46} {'before':>10} {'after':>10} {'after/before':>13}")
    old, new = figures(before), figures(after)
    for name, value in old.items():
        ratio = new[name] / value if value else float("nan")
        print(f"{name:<46} {value:>10.1f} {new[name]:>10.1f} {ratio:>12.2f}x")
    print(
        f"\nrecall calls by operation: before {before['recall']['calls']}, after {after['recall']['calls']}"
    )
    for name, s in (("before", before), ("after", after)):
        r = sweep_rates(s["sweep"])
        print(
            f"sweep {name}: {r['calls']:.2f} calls/memory = {r['latency_ms']:.1f} ms of latency"
            f" + {r['cpu_ms']:.2f} ms CPU; {s['sweep']['in_flight']} in flight on {r['cores']:.2f} core"
            f" -> {r['invocation']:,.0f}/s an invocation, x {s['sweep']['groups']} invocation(s)"
            f" x {r['duty']:.2f} of each {s['sweep']['period_s'] // 60} min = {r['sustained']:,.0f}/s"
        )
    extrapolate(before, after)


def extrapolate(before: dict[str, Any], after: dict[str, Any]) -> None:
    print(
        f"\nAt {TARGET_MINDS:,} minds, {TARGET_MEMORIES:,} memories, {TARGET_WRITES:,} writes/s at peak,"
        f" {EXPIRING_SHARE:.0%} of writes with an expiry:"
    )
    need_sweep = TARGET_WRITES * EXPIRING_SHARE
    for name, s in (("before", before), ("after", after)):
        w, ix, r = s["writes"]["store_new"], s["indexer"], sweep_rates(s["sweep"])
        wcu = TARGET_WRITES * (w + 1)
        partitions = max(1, wcu // PARTITION_WCU)
        per_shard = TARGET_WRITES / partitions
        rate = ix["records"] / ix["wall_s"]
        ceiling = ix["records"] / ix["cpu_s"]  # the IndexerFunction's 1,769 MB buy one vCPU
        log = ix["bytes_written"] / ix["records"]
        print(f"  {name}:")
        print(
            f"    writes: {TARGET_WRITES:,}/s x ({w} + 1 rate-limit) WU = {wcu:,} WCU/s"
            f" = {wcu / TABLE_WCU_QUOTA:.1f}x the 40,000 per-table default quota;"
            f" ≥ {partitions} partitions, so ≥ {partitions} stream shards"
        )
        print(
            f"    indexer: {TARGET_WRITES:,} changes/s over {partitions} shards = {per_shard:,.0f}/s a shard"
            f" against {rate:,.0f}/s a shard at ParallelizationFactor 1: {rate / per_shard:.1f}x headroom;"
            f" total capacity {rate * partitions:,.0f}/s; CPU-bound at one vCPU (1,769 MB) {ceiling:,.0f}/s"
            f" a shard ({ceiling / per_shard:.1f}x)"
        )
        print(
            f"    sweep: needs {need_sweep:,.0f} expirations/s; sustains {r['sustained']:,.0f}/s"
            f" ({r['sustained'] / need_sweep:.2f}x): "
            + (
                "keeps up"
                if r["sustained"] >= need_sweep
                else f"falls behind by {(need_sweep - r['sustained']) * 3600:,.0f} memories an hour"
            )
        )
        print(
            f"    EFS: {log / 1000:.1f} kB x {TARGET_WRITES:,}/s"
            f" = {log * TARGET_WRITES / 1e6:,.0f} MB/s of log"
            f" frames (Elastic: 1-5 GiB/s write per file system, 500,000 write IOPS; NFS calls"
            f" {figures(s)['indexer NFS calls per mind per batch']:.0f} per change ="
            f" {figures(s)['indexer NFS calls per mind per batch'] * TARGET_WRITES:,.0f}/s)"
        )
        for memories in MIND_SIZES:
            read, written = cold_open(s["compaction"], log, memories)
            base = memories * INDEX_BYTES_PER_MEMORY
            average_read = (read - base) / 2  # the log it reads whole fills from 0 to T: half, on average
            print(
                f"    search index, {memories:>7,}-memory mind: cold open reads ≤ {read / 1e6:6.2f} MB"
                f" ({read / base:4.1f}x the base); {written / 1000:6.1f} kB written per change;"
                f" EFS $ per million: writes {written * EFS_WRITE_PER_GB / 1e3:5.2f},"
                f" cold searches {average_read * EFS_READ_PER_GB / 1e3:6.2f} (the log; base pages as queried)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help="git ref of 'before' (default: before issue 23)")
    parser.add_argument("--minds", type=int, default=10_000, help="minds in the indexer model")
    parser.add_argument("--batches", type=int, default=5, help="indexer batches of 100 (one change per mind)")
    parser.add_argument("--sweep-minds", type=int, default=2_000, help="minds with an expiring memory")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        Path(args.out).write_text(json.dumps(child(args)))
        return
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as folder:
        temp = Path(folder)
        code = temp / "before"
        code.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.baseline, "layers/synapse", "infra", "template.yaml"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
        print(f"before = {args.baseline}, after = the working tree", flush=True)
        before = side(code, args, temp, "before")
        after = side(ROOT, args, temp, "after")
    report(before, after, args)


if __name__ == "__main__":
    main()
