"""DELETE /minds/{mind_id} of a large mind: how long the answer takes, and how long the purge.

Two minds of N memories each (default 10,000; a memory item, its id pointer and one tag copy, as
the write path lays them) in in-process moto, deleted through the gateway in one run:
- "purge in the request": no purge starter installed, so the DELETE purges before answering (what
  every DELETE did before issue 43 item 5);
- "purge elsewhere": a starter records the hand-off (AWS: an asynchronous invoke of
  PurgeMindFunction), the DELETE answers, then the purge function's handler runs on its own.
Prints seconds and the ratio; moto's per-call cost stands in for DynamoDB's (no latency added), so
the ratio is the figure to read, not the seconds.

    .venv/bin/python bench/purge.py [--memories 10000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from bench_env import BENCH_ENV, moto_tables

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "synapse"), str(ROOT)]
os.environ.update({**BENCH_ENV, "POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"})
os.environ.pop("SYNAPSE_DYNAMODB_ENDPOINT", None)


def seed(gateway: object, token: str, memories: int) -> str:
    """A mind through the API, then `memories` memories laid straight into the table."""
    import json

    from synapse.core import clock, ids
    from synapse.memory import items
    from synapse.memory.kinds import Memory
    from synapse.storage import tables

    answer = gateway.handle(  # type: ignore[attr-defined]
        "POST", "/minds", "", {"authorization": f"Bearer {token}"}, json.dumps({"name": "Big"}).encode()
    )
    mind_id = str(answer.json()["mind"]["id"])
    now = clock.to_iso(clock.now())
    laid = []
    for i in range(memories):
        memory = Memory(
            id=ids.new_id("mem_"), mind_id=mind_id, category="note", key=f"fact_{i}",
            content=f"Fact number {i}, about as long as a remembered sentence usually is.", tags=["bench"],
            priority="normal", source="user", verified=True, confidence=1.0, expires_at=None,
            created_at=now, updated_at=now, version=1,
        )  # fmt: skip
        laid += [items.memory_item(memory), items.pointer_item(memory), items.tag_item(memory, "bench")]
    for start in range(0, len(laid), 25):
        requests = [{"PutRequest": {"Item": tables.dump(item)}} for item in laid[start : start + 25]]
        tables.client().batch_write_item(RequestItems={tables.memories_table(): requests})
    return mind_id


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=10_000)
    args = parser.parse_args()
    from synapse.lifecycle import purges

    from infra.gateway import Gateway, LambdaContext, load_handler
    from tests.support.api import jwt_for

    os.environ["SYNAPSE_JWT_SECRET"] = BENCH_ENV["SYNAPSE_JWT_SECRET"]
    with moto_tables():
        gateway = Gateway()
        token = jwt_for("bench-user", secret=BENCH_ENV["SYNAPSE_JWT_SECRET"])
        headers = {"authorization": f"Bearer {token}"}
        inline, deferred = seed(gateway, token, args.memories), seed(gateway, token, args.memories)

        started = time.perf_counter()
        assert gateway.handle("DELETE", f"/minds/{inline}", "", headers, b"").status == 204
        in_request = time.perf_counter() - started

        handed: list[str] = []
        purges.install(handed.append)
        started = time.perf_counter()
        assert gateway.handle("DELETE", f"/minds/{deferred}", "", headers, b"").status == 204
        answered = time.perf_counter() - started
        purge = load_handler(ROOT / "functions" / "purge_mind", "app.handler")
        started = time.perf_counter()
        result = purge(purges.event_for(handed[0]), LambdaContext("purge_mind"))
        purged = time.perf_counter() - started

    print(f"DELETE of a mind of {args.memories:,} memories ({result['purged']:,} items), in-process moto")
    print(f"{'':28} {'answer s':>9} {'purge s':>9}")
    print(f"{'purge in the request':28} {in_request:9.2f} {'(in it)':>9}")
    print(f"{'purge elsewhere':28} {answered:9.2f} {purged:9.2f}")
    print(f"answer: {in_request / answered:.0f}x sooner")


if __name__ == "__main__":
    main()
