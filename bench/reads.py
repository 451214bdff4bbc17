"""Cost of recall, by-tag and expiring on a large mind, against a naive full-mind query in the same run.

A mind of N memories (default 50,000: 20 critical, 200 tagged `docker`, 100 expiring within 7
days, the rest high/normal/low with other tags) is stored through `store.store` — the service's
own write path, counters and tag copies included — into in-process moto. Then each read runs as
the endpoint runs it, and the DynamoDB items read (ScannedCount/Count of every call, from
`tables.reads`) are printed beside the items returned, and beside a naive `Query pk=mind` over
every item of the mind. Target per read: items read <= 2 x items returned + 100.

Time windows (`after`/`before`, `updated_after`): every 100th memory is about a day of December
2025 (`occurred_at`, a date), and the last 1% were changed once after the others were stored. The
list by one such day, by the last 10 minutes of writes and by what changed since, and by-tag and
recall narrowed to those 10 minutes, are printed apart with items read beside returned: the list's
reads follow their answer (the target applies); by-tag and recall read in recall order and filter
(docs/scaling.md "Time filters": they read more than they return, shown, no target).

With `--expired-share S` a share S of the memories (chosen at random, `docker` ones included) is
stored with an expiry time that has passed when the reads run (a day later): each read is then
measured twice, before the expiry sweep (`synapse.memory.sweep`) has run, when reads skip the
expired memories one by one, and after one sweep run, whose own items read are printed too.

    .venv/bin/python bench/reads.py [--memories 50000] [--expired-share 0.4]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench_env import BENCH_ENV

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "synapse"), str(ROOT)]
os.environ.update({**BENCH_ENV, "POWERTOOLS_LOG_LEVEL": "WARNING"})
os.environ.pop("SYNAPSE_DYNAMODB_ENDPOINT", None)

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402

from infra import motofix, template  # noqa: E402

OTHER_TAGS = ["python", "aws", "family", "travel", "work", "music", "health", "books"]
CATEGORIES = ["identity", "preference", "fact", "project", "skill", "mistake", "context", "note"]
LATER = timedelta(days=1)  # the reads run this long after the memories were stored
Row = tuple[str, int, int]


def items_read() -> int:
    from synapse.storage import tables

    return sum(tables.reads.values())


def populate(mind_id: str, total: int, now: datetime, expired_share: float) -> None:
    from synapse.memory import kinds, model, store

    rng = random.Random(7)
    critical = set(range(min(20, total)))
    docker = set(rng.sample(range(total), min(200, total)))
    expiring = set(rng.sample(range(total), min(100, total)))
    expired = set(rng.sample(sorted(set(range(total)) - expiring), int(total * expired_share)))
    started = time.perf_counter()
    for i in range(total):
        priority = "critical" if i in critical else rng.choices(["high", "normal", "low"], [1, 6, 3])[0]
        tags = rng.sample(OTHER_TAGS, rng.randint(0, 2)) + (["docker"] if i in docker else [])
        body: dict[str, object] = {
            "category": CATEGORIES[i % len(CATEGORIES)],
            "key": f"memory_{i}",
            "content": f"Memory number {i}: a sentence or two of what the agent should remember.",
            "tags": tags,
            "priority": priority,
        }
        if i in expiring:
            body["expires_at"] = (now + LATER + timedelta(hours=1 + rng.random() * 24 * 6.5)).isoformat()
        elif i in expired:
            body["expires_at"] = (now + timedelta(hours=1 + rng.random() * 12)).isoformat()
        if i % 100 == 0:
            body["occurred_at"] = f"2025-12-{1 + (i // 100) % 31:02d}"
        source = kinds.Source.USER if i % 5 else kinds.Source.AGENT
        moment = now - timedelta(seconds=total - i)
        store.store(mind_id, model.MemoryWrite.from_body(body), source, at=moment)
        if (i + 1) % 5000 == 0:
            rate = (i + 1) / (time.perf_counter() - started)
            print(f"  stored {i + 1:,} ({rate:,.0f}/s)", flush=True)


CHANGED_SHARE = 0.01  # the last 1% of memories, changed once after every memory was stored


def change_last(mind_id: str, total: int, now: datetime) -> str:
    """Change the last CHANGED_SHARE of the memories (their content), a second apart after `now`;
    returns the moment before the first change."""
    from synapse.memory import kinds, model, store

    for n, i in enumerate(range(total - max(1, int(total * CHANGED_SHARE)), total)):
        body = {"category": CATEGORIES[i % len(CATEGORIES)], "key": f"memory_{i}", "content": f"Changed {i}."}
        store.store(
            mind_id, model.MemoryWrite.from_body(body), kinds.Source.USER, at=now + timedelta(seconds=n + 1)
        )
    from synapse.core import clock

    return clock.to_iso(now)


def measure_windows(mind_id: str, at: datetime, now: datetime, since: str) -> tuple[list[Row], list[Row]]:
    """(list reads, filtered reads) by time: (read, items read, items returned) of every page."""
    from synapse.core import clock
    from synapse.core.moments import Window
    from synapse.memory import reads, selections
    from synapse.recall.query import RecallQuery
    from synapse.recall.reads import recall_of

    def paged(read: Callable[[str | None], Any]) -> tuple[int, int]:
        before, returned, after = items_read(), 0, None
        while True:
            page = read(after)
            returned += len(page.memories)
            after = page.next_cursor
            if after is None:
                return items_read() - before, returned

    day = Window.of("2025-12-07", "2025-12-07")
    recent = Window(clock.to_iso(now - timedelta(minutes=10)), clock.to_iso(now))
    listed: list[Row] = []
    for name, filters in (
        ("list after/before one day", selections.ListFilters(window=day)),
        ("list after/before last 10 min", selections.ListFilters(window=recent)),
        ("list updated_after", selections.ListFilters(updated_after=since)),
    ):
        read, returned = paged(lambda after, f=filters: reads.list_memories(mind_id, f, 100, after))
        listed.append((name + " (all pages)", read, returned))
    filtered: list[Row] = []
    read, returned = paged(
        lambda after: reads.by_tag(mind_id, selections.TagQuery("docker", window=recent), 100, after, at=at)
    )
    filtered.append(("by-tag docker, last 10 min", read, returned))
    before = items_read()
    answer = recall_of(mind_id, RecallQuery(limit=50, window=recent), at=at)
    filtered.append(
        ("recall limit=50, last 10 min", items_read() - before, len(answer.memories) + len(answer.low_keys))
    )
    return listed, filtered


def measure(mind_id: str, at: datetime) -> list[Row]:
    """(read, items read, items returned) of recall, every page of by-tag docker and of expiring 7d."""
    from synapse.memory import expiring_reads, reads, selections
    from synapse.recall.query import RecallQuery
    from synapse.recall.reads import recall_of

    rows: list[Row] = []
    before = items_read()
    answer = recall_of(mind_id, RecallQuery(limit=50), at=at)
    rows.append(("recall limit=50", items_read() - before, len(answer.memories) + len(answer.low_keys)))

    def paged(read: Callable[[str | None], Any]) -> tuple[int, int]:
        before, returned, after = items_read(), 0, None
        while True:
            page = read(after)
            returned += len(page.memories)
            after = page.next_cursor
            if after is None:
                return items_read() - before, returned

    read, returned = paged(
        lambda after: reads.by_tag(mind_id, selections.TagQuery("docker"), 100, after, at=at)
    )
    rows.append(("by-tag docker (all pages)", read, returned))
    read, returned = paged(
        lambda after: expiring_reads.expiring(mind_id, timedelta(days=7), 100, after, at=at)
    )
    rows.append(("expiring within=7d (all pages)", read, returned))
    return rows


def naive(mind_id: str, at: datetime) -> tuple[int, int, dict[str, int]]:
    """A `Query pk=mind` over every item: (items read, items in the partition, answer per read)."""
    from synapse.core import clock
    from synapse.storage import tables

    before = items_read()
    everything = list(
        tables.query_all(
            TableName=tables.memories_table(),
            KeyConditionExpression="pk = :mind",
            ExpressionAttributeValues=tables.values(mind=mind_id),
        )
    )
    read = items_read() - before
    now, until = clock.to_iso(at), clock.to_iso(at + timedelta(days=7))
    memories = [i for i in everything if str(i["sk"]).startswith(tables.MEMORY_PREFIX)]
    live = [m for m in memories if not m.get("expires_at") or m["expires_at"] > now]
    answers = {
        "recall limit=50": min(50, len(live)),
        "by-tag docker (all pages)": sum("docker" in (m.get("tags") or []) for m in live),
        "expiring within=7d (all pages)": sum(now < m.get("expires_at", "") <= until for m in memories),
    }
    return read, len(everything), answers


def report(title: str, rows: list[Row], naive_read: int, naive_answers: dict[str, int]) -> bool:
    print(f"\n{title}")
    print(f"{'read':32} {'items read':>10} {'returned':>9} {'target':>7}  ok   naive read / returned")
    ok = True
    for name, read, returned in rows:
        target = 2 * returned + 100
        ok &= read <= target
        print(
            f"{name:32} {read:>10,} {returned:>9,} {target:>7,}  {'yes' if read <= target else 'NO ':3}"
            f"  {naive_read:>10,} / {naive_answers[name]:,}"
        )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--expired-share", type=float, default=0.0, help="share of expired memories, 0-0.9")
    args = parser.parse_args()
    if not 0 <= args.expired_share <= 0.9:
        parser.error("--expired-share must be between 0 and 0.9")

    motofix.apply()
    with mock_aws():
        template.create_tables(
            boto3.client("dynamodb", region_name="us-east-1"),
            {"MemoriesTable": "bench-memories", "MindsTable": "bench-minds"},
        )
        from synapse.core import clock
        from synapse.memory import sweep
        from synapse.minds import minds

        now = clock.now()
        at = now + LATER
        mind, _ = minds.create_mind("bench-user", "Bench Mind")
        print(f"Storing {args.memories:,} memories through store.store ...", flush=True)
        started = time.perf_counter()
        populate(mind.id, args.memories, now, args.expired_share)
        print(f"  done in {time.perf_counter() - started:,.0f} s", flush=True)

        naive_read, partition, answers = naive(mind.id, at)
        share = f", {args.expired_share:.0%} of them expired" if args.expired_share else ""
        title = f"Mind: {args.memories:,} memories{share}, {partition:,} items in its partition"
        if not args.expired_share:
            ok = report(title, measure(mind.id, at), naive_read, answers)
            since = change_last(mind.id, args.memories, now)
            listed, filtered = measure_windows(mind.id, at, now, since)
            print(f"\nTime windows ({CHANGED_SHARE:.0%} changed since; every 100th memory dated Dec 2025)")
            print(f"{'read':32} {'items read':>10} {'returned':>9} {'target':>7}  ok")
            for name, read, returned in listed:
                target = 2 * returned + 100
                ok &= read <= target
                print(
                    f"{name:32} {read:>10,} {returned:>9,} {target:>7,}  {'yes' if read <= target else 'NO'}"
                )
            for name, read, returned in filtered:
                print(f"{name:32} {read:>10,} {returned:>9,} {'-':>7}  (filters in recall order)")
        else:
            ok_before = report(title + "\nBefore the sweep:", measure(mind.id, at), naive_read, answers)
            started = time.perf_counter()
            tally = sweep.run(at=at)
            seconds = time.perf_counter() - started
            print(
                f"\nSweep run: swept {tally['swept']:,} in {seconds:,.1f} s (moto),"
                f" read {tally['items_read']:,} items ({tally['buckets']} hour buckets),"
                f" conflicts {tally['conflict']}"
            )
            ok = report("After the sweep:", measure(mind.id, at), naive_read, answers)
            print("" if ok_before else "\n(before the sweep, some reads exceed the target: expected)")
        print("\nAll within target." if ok else "\nSOME READ EXCEEDS ITS TARGET.")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
