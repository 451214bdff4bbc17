"""What each request costs: DynamoDB read/write capacity units and Lambda time, per request type.

Every request goes through `make run`'s gateway (the authorizer, then the handler: the same code
and API Gateway events as on AWS) against DynamoDB Local, which reports the capacity each call
consumes (`ReturnConsumedCapacity=TOTAL` is added to every item call; GSI writes included;
transactions count double, as on AWS). For each request type it prints the median read units
(RRU), write units (WRU), DynamoDB calls, and the median time of each Lambda (authorizer, handler)
measured here, with its CPU time, from which docs/benchmarks.md estimates the billed Lambda time
on AWS (CPU time scaled for the memory size + DynamoDB round trips at an assumed latency).

The search index is built by the indexer from the table's stream (`infra.stream_pump`) before the
searches run, and the stream functions' own costs per write are measured the same way.

    .venv/bin/python bench/costs.py [--memories 1000] [--requests 30]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pricing
from bench_env import BENCH_ENV

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "synapse"), str(ROOT)]
DATA = Path(tempfile.mkdtemp(prefix="synapse-costs-"))
os.environ.update(
    {
        **BENCH_ENV,
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "SYNAPSE_DATA_DIR": str(DATA),
        "SYNAPSE_ALLOW_DEV_SECRETS": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        # The template's per-mind rate limit is on in AWS: one conditional UpdateItem per request.
        "SYNAPSE_MIND_RATE_LIMIT": "1000000",
    }
)

ITEM_CALLS = {
    "GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan",
    "BatchGetItem", "BatchWriteItem", "TransactWriteItems", "TransactGetItems",
}  # fmt: skip


@dataclass
class Meter:
    """Capacity and calls of DynamoDB since `reset`."""

    read: float = 0.0
    write: float = 0.0  # the Minds table's (Local's figures); the Memories table's come from its stream
    calls: int = 0
    transactions: int = 0

    def reset(self) -> None:
        self.read, self.write, self.calls, self.transactions = 0.0, 0.0, 0, 0

    def add_request(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name in ITEM_CALLS:
            params["ReturnConsumedCapacity"] = "TOTAL"

    def add_response(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name not in ITEM_CALLS:
            return
        self.calls += 1
        self.transactions += model.name == "TransactWriteItems"
        if model.name in {"Query", "Scan"}:
            # AWS: the items read summed, then rounded up to 4 KB, 0.5 each (eventually consistent);
            # Local rounds each item. Filtered-out items are priced like the returned ones.
            found = parsed.get("Items") or []
            size = sum(pricing.size(item) for item in found)
            if found:
                size = size * parsed.get("ScannedCount", len(found)) // len(found)
            self.read += max(1, -(-size // 4096)) * 0.5
            return
        consumed = parsed.get("ConsumedCapacity") or []
        for entry in consumed if isinstance(consumed, list) else [consumed]:
            if (
                model.name not in {"GetItem", "Query", "Scan", "BatchGetItem"}
                and "memories" in entry["TableName"]
            ):
                continue
            units = float(entry.get("CapacityUnits", 0))
            read, write = entry.get("ReadCapacityUnits"), entry.get("WriteCapacityUnits")
            if read is not None or write is not None:
                self.read += float(read or 0)
                self.write += float(write or 0)
            elif model.name in {"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"}:
                # AWS bills at least 0.5 (eventually consistent) / 1 (strongly) per read; Local says 0
                least = 1.0 if model.name == "GetItem" else 0.5
                self.read += max(units, least)
            else:
                self.write += units


METER = Meter()


@dataclass
class Sample:
    rru: float
    wru: float
    calls: int
    ms: dict[str, float] = field(default_factory=dict)
    cpu_ms: dict[str, float] = field(default_factory=dict)


@contextmanager
def measured(sample_times: dict[str, float], sample_cpu: dict[str, float], name: str) -> Iterator[None]:
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        sample_times[name] = sample_times.get(name, 0) + (time.perf_counter() - wall) * 1000
        sample_cpu[name] = sample_cpu.get(name, 0) + (time.process_time() - cpu) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=30, help="requests measured per type")
    args = parser.parse_args()

    from infra import local_dynamo, template

    local = local_dynamo.DynamoDBLocal(DATA)
    endpoint = local.start()
    os.environ["SYNAPSE_DYNAMODB_ENDPOINT"] = endpoint
    try:
        return run(args.memories, args.requests, endpoint, template)
    finally:
        local.stop()


def run(memories: int, requests: int, endpoint: str, template: Any) -> int:
    import boto3
    from synapse.core.settings import get_settings
    from synapse.storage import tables

    from infra.gateway import Gateway
    from infra.local_dynamo import client_config
    from infra.stream_pump import Pump, StreamReader, stream_functions
    from infra.token import mint

    template.create_tables(
        boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=client_config()),
        {"MemoriesTable": "bench-memories", "MindsTable": "bench-minds"},
    )
    events = tables.client().meta.events
    events.register("before-parameter-build.dynamodb", METER.add_request)
    events.register("after-call.dynamodb", METER.add_response)
    settings = get_settings()
    jwt = mint(settings.jwt_secret, "bench-user", 3600, settings.jwt_issuer, settings.jwt_audience)
    gateway = Gateway()
    times: dict[str, float] = {}
    cpu: dict[str, float] = {}
    authorizer, handlers = gateway.authorizer, {}

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(event: dict[str, Any], context: Any) -> Any:
            with measured(times, cpu, name):
                return function(event, context)

        return call

    gateway.authorizer = timed("authorizer", authorizer)
    for route in gateway.routes:
        from infra.gateway import load_handler

        handlers[route.function] = load_handler(route.code_dir, route.handler)

    def call(method: str, path: str, body: Any = None, token: str | None = None, query: str = "") -> Any:
        headers = {"authorization": f"Bearer {token or key}"}
        if token:
            headers["x-mind-id"] = mind_id
        data = json.dumps(body).encode() if body is not None else b""
        if body is not None:
            headers["content-type"] = "application/json"
        answer = gateway.handle(method, path, query, headers, data)
        assert answer.status < 300, (method, path, answer.status, answer.body[:300])
        return answer.json() if answer.body.startswith(b"{") else answer.body

    created = gateway.handle(
        "POST", "/minds", "", {"authorization": f"Bearer {jwt}", "content-type": "application/json"},
        json.dumps({"name": "Costs"}).encode(),
    ).json()  # fmt: skip
    mind_id, key = created["mind"]["id"], created["mind_key"]["key"]
    print(f"Seeding {memories:,} memories through POST /memory ...", flush=True)
    ids = []
    for i in range(memories):
        body = {
            "category": ["fact", "preference", "project", "note"][i % 4],
            "key": f"seed_{i}",
            "content": f"Seed memory {i}: the user prefers concise answers about topic {i % 37}.",
            "tags": [f"t{i % 20}"] + (["docker"] if i % 10 == 0 else []),
            "priority": ["high", "normal", "normal", "low"][i % 4],
        }
        ids.append(call("POST", "/memory", body)["id"])
    pumps = [Pump.connect("bench-memories", endpoint, function=name) for name in stream_functions()]
    stream_cost: dict[str, list[tuple[float, float, int, float, float]]] = {}

    def drain() -> None:
        for pump in pumps:
            while True:
                METER.reset()
                sizes, started = file_sizes(DATA), time.perf_counter()
                records = pump.run_once()
                if not records:
                    break
                spent = (time.perf_counter() - started) * 1000
                written = bytes_written(sizes, file_sizes(DATA))
                stream_cost.setdefault(pump.name, []).append(
                    (
                        METER.read / records,
                        METER.write / records,
                        METER.calls,
                        spent / records,
                        written / records,
                    )
                )

    drain()
    stream_cost.clear()
    print(
        f"Stored bytes per memory (items + GSI entries, 100 B overhead each): {stored_bytes(memories):,.0f}"
    )
    where = {"endpoint_url": endpoint, "region_name": "us-east-1", "config": client_config()}
    writes = StreamReader(
        boto3.client("dynamodb", **where), boto3.client("dynamodbstreams", **where), "bench-memories"
    )
    writes.poll()  # from here on, each request's own records
    gsis = template.table_definitions()["MemoriesTable"]["GlobalSecondaryIndexes"]

    kinds: dict[str, Callable[[int], Any]] = {
        "store (new memory)": lambda i: call(
            "POST",
            "/memory",
            {"category": "fact", "key": f"new_{i}", "content": f"New fact {i}", "tags": ["a", "b"]},
        ),
        "store (replace by key)": lambda i: call(
            "POST",
            "/memory",
            {"category": "fact", "key": f"new_{i}", "content": f"Changed {i}", "tags": ["a", "c"]},
        ),
        "update (PUT /memory/{id})": lambda i: call(
            "PUT", f"/memory/{ids[i]}", {"content": f"Edited {i}"}, jwt
        ),
        "get (GET /memory/{id})": lambda i: call("GET", f"/memory/{ids[i]}"),
        "recall (default 100, text)": lambda i: call("GET", "/memory/recall"),
        "by-tag (20 per page)": lambda i: call("GET", "/memory/by-tag", query="tag=docker"),
        "expiring (within 7d)": lambda i: call("GET", "/memory/expiring"),
        "search (one word, 20 hits)": lambda i: call("GET", "/memory/search", query=f"q=topic%20{i % 37}"),
        "delete (DELETE /memory/{id})": lambda i: call("DELETE", f"/memory/{ids[-1 - i]}", token=jwt),
    }
    results: dict[str, list[Sample]] = {}
    for name, request in kinds.items():
        for i in range(requests):
            times.clear()
            cpu.clear()
            METER.reset()
            with measured(times, cpu, "total"):
                request(i)
            handler_ms = times["total"] - times.get("authorizer", 0)
            handler_cpu = cpu["total"] - cpu.get("authorizer", 0)
            written = pricing.stream_write_units(writes.poll(), gsis, 2 if METER.transactions else 1)
            results.setdefault(name, []).append(
                Sample(
                    METER.read,
                    METER.write + written,
                    METER.calls,
                    {"authorizer": times.get("authorizer", 0), "handler": handler_ms},
                    {"authorizer": cpu.get("authorizer", 0), "handler": handler_cpu},
                )
            )
        if name.startswith(("store", "update", "delete")):
            drain()  # the stream functions' cost of these writes, per record
    report(results, stream_cost)
    return 0


def file_sizes(root: Path) -> dict[Path, int]:
    return {path: path.stat().st_size for path in root.rglob("*.sqlite*") if path.is_file()}


def bytes_written(before: dict[Path, int], after: dict[Path, int]) -> int:
    """What the index files grew by: the log frames appended and every base written (EFS bills
    the bytes written; a log only grows, a base is written once)."""
    return sum(max(0, size - before.get(path, 0)) for path, size in after.items())


def stored_bytes(memories: int) -> float:
    """What DynamoDB bills as storage for the Memories table, per memory: every item (memory, pointer,
    tag copies, counters, revisions) and every GSI entry, each with its 100 bytes of overhead."""
    from synapse.storage import tables

    from infra import template

    gsis = template.table_definitions()["MemoriesTable"]["GlobalSecondaryIndexes"]
    total, start = 0, None
    while True:
        page = tables.client().scan(
            TableName=tables.memories_table(), **({"ExclusiveStartKey": start} if start else {})
        )
        for item in page["Items"]:
            total += pricing.size(item) + 100
            for gsi in gsis:
                keys = [k["AttributeName"] for k in gsi["KeySchema"]]
                if all(k in item for k in keys):
                    projection = gsi["Projection"]
                    names = None
                    if projection["ProjectionType"] != "ALL":
                        names = {"pk", "sk", *keys, *projection.get("NonKeyAttributes", [])}
                    total += pricing.size(item, names) + 100
        start = page.get("LastEvaluatedKey")
        if not start:
            return total / memories


def report(
    results: dict[str, list[Any]], stream_cost: dict[str, list[tuple[float, float, int, float, float]]]
) -> None:
    def med(values: list[float]) -> float:
        return statistics.median(values)

    print("\nPer request (medians; authorizer + handler, as API Gateway runs them; ms = wall, cpu = CPU ms):")
    heads = ("RRU", "WRU", "calls", "auth ms", "cpu", "handler ms", "cpu")
    print(f"{'request':30}" + "".join(f" {h:>10}" for h in heads))
    for name, samples in results.items():
        figures = (
            med([s.rru for s in samples]),
            med([s.wru for s in samples]),
            med([s.calls for s in samples]),
            med([s.ms["authorizer"] for s in samples]),
            med([s.cpu_ms["authorizer"] for s in samples]),
            med([s.ms["handler"] for s in samples]),
            med([s.cpu_ms["handler"] for s in samples]),
        )
        print(f"{name:30}" + "".join(f" {f:>10.1f}" for f in figures))
    print("\nStream functions, per memory write (medians over batches):")
    for name, batches in stream_cost.items():
        print(
            f"{name:30} RRU {med([b[0] for b in batches]):.2f}  WRU {med([b[1] for b in batches]):.2f}"
            f"  ms {med([b[3] for b in batches]):.1f}"
            f"  index kB written {med([b[4] for b in batches]) / 1000:.1f} per record"
        )


if __name__ == "__main__":
    raise SystemExit(main())
