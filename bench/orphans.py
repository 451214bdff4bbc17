"""The orphan sweep in a small model (issue 23): what one daily run reads, before and after.

Builds `--minds` index folders (local disk) and mind items in moto, deletes `--deleted` minds a day
through `lifecycle.mind_deletion` (which writes the markers), a few of them "lost" (no marker: minds
deleted before markers existed), and runs, for `--days` days, the old sweep (list every folder, one
GetItem each: reproduced here as it was) and the new one (`index.orphans.sweep`: markers since the
cursor, then the background pass over `--minds / 10` folders). It counts folders listed, folders
checked, DynamoDB calls and items read per run, then extrapolates to 1M minds with the latencies
printed (assumptions, not measurements: DynamoDB from inside the region, EFS metadata operations).

    .venv/bin/python bench/orphans.py [--minds 2000] [--deleted 20] [--lost 1] [--days 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench_env import BENCH_ENV, moto_tables

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "synapse"), str(ROOT)]
DATA = Path(tempfile.mkdtemp(prefix="synapse-orphans-"))
os.environ.update({**BENCH_ENV, "POWERTOOLS_LOG_LEVEL": "WARNING", "SYNAPSE_INDEX_DIR": str(DATA / "index")})
os.environ.pop("SYNAPSE_DYNAMODB_ENDPOINT", None)

from synapse.core import clock  # noqa: E402
from synapse.core.ids import new_id  # noqa: E402
from synapse.index import generations, index_drops, orphans  # noqa: E402
from synapse.lifecycle import mind_deletion  # noqa: E402
from synapse.storage import tables  # noqa: E402

GET_MS, BATCH_GET_MS, QUERY_MS, PUT_MS = 3.0, 10.0, 5.0, 5.0  # DynamoDB round trips (assumed)
READDIR_ENTRIES_PER_CALL, EFS_METADATA_MS = 1000, 1.0  # NFS READDIRPLUS per call, EFS latency (assumed)
FULL = 1_000_000


class Calls:
    """DynamoDB calls by operation, counted on the client's event hooks."""

    def __init__(self) -> None:
        self.by_operation: Counter[str] = Counter()
        tables.client().meta.events.register("before-call.dynamodb", self._count, unique_id="bench-orphans")

    def _count(self, model: Any, **_: Any) -> None:
        self.by_operation[model.name] += 1

    def take(self) -> Counter[str]:
        taken, self.by_operation = self.by_operation, Counter()
        return taken


def old_sweep(base: Path) -> tuple[int, int]:
    """The sweep as it was: every folder listed, one GetItem each. (folders listed, removed)"""
    listed = removed = 0
    for entry in sorted(base.iterdir()):
        listed += 1
        if (
            entry.is_dir()
            and generations.is_mind_folder_name(entry.name)
            and not orphans.mind_exists(entry.name)
        ):
            orphans.remove_after_writer(entry.name, base)
            removed += 1
    return listed, removed


def seconds_at_scale(calls: Counter[str], listed: int, scale: float) -> float:
    ms = (
        calls["GetItem"] * GET_MS
        + calls["BatchGetItem"] * BATCH_GET_MS
        + calls["Query"] * QUERY_MS
        + calls["PutItem"] * PUT_MS
        + listed / READDIR_ENTRIES_PER_CALL * EFS_METADATA_MS
    )
    return ms * scale / 1000


def build(owner: str, count: int, base: Path) -> list[str]:
    ids, now = [], clock.to_iso(clock.now())
    counter = {"pk": f"USER#{owner}", "sk": "MINDS", "mind_count": count}
    tables.client().put_item(TableName=tables.minds_table(), Item=tables.dump(counter))
    for _ in range(count):
        mind_id = new_id("m_")
        item = {**tables.mind_key(mind_id), "id": mind_id, "owner": owner, "name": "bench", "memory_count": 0}
        item |= {"created_at": now, "updated_at": now, "key_count": 0, "hook_count": 0, "webhook_count": 0}
        tables.client().put_item(TableName=tables.minds_table(), Item=tables.dump(item))
        (base / mind_id).mkdir(parents=True)
        (base / mind_id / "CURRENT").write_text("gen-000001.sqlite 0\n")
        ids.append(mind_id)
    return ids


def delete(owner: str, ids: list[str], lost: int) -> None:
    """Through the real deletion; the first `lost` go the old way (mind item only, no marker)."""
    for n, mind_id in enumerate(ids):
        if n < lost:
            tables.client().delete_item(
                TableName=tables.minds_table(), Key=tables.dump(tables.mind_key(mind_id))
            )
        else:
            mind_deletion.delete_mind(owner, mind_id)


def run(args: argparse.Namespace) -> None:
    with moto_tables():
        scale = FULL / args.minds
        calls = Calls()
        for label in ("before", "after"):
            base = DATA / "index"
            shutil.rmtree(base, ignore_errors=True)
            owner = f"user-{label}"
            alive = build(owner, args.minds, base)
            day = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
            print(
                f"\n{label}: {args.minds:,} index folders; {args.deleted} minds deleted a day,"
                f" {args.lost} of them without a marker"
            )
            for d in range(args.days):
                doomed, alive = alive[: args.deleted], alive[args.deleted :]
                moment = day + timedelta(days=d)
                clock_now = clock.now
                clock.now = lambda at=moment - timedelta(hours=2): at  # type: ignore[assignment]
                try:
                    delete(owner, doomed, args.lost)
                finally:
                    clock.now = clock_now  # type: ignore[assignment]
                calls.take()
                before_reads = sum(tables.reads.values())
                if label == "before":
                    listed, removed = old_sweep(base)
                    checked = listed
                else:
                    swept = orphans.sweep(base, folders=args.minds // 10, at=moment)
                    listed, removed, checked = swept.folders_listed, len(swept.removed), swept.folders_checked
                taken = calls.take()
                read = sum(tables.reads.values()) - before_reads
                ops = ", ".join(f"{n} {op}" for op, n in sorted(taken.items()))
                print(
                    f"  day {d + 1}: removed {removed} folders; listed {listed:,}, checked {checked:,};"
                    f" DynamoDB calls: {ops}; items read {read:,}"
                )
                if label == "before":
                    print(f"    x{scale:,.0f} for 1M minds: ~{seconds_at_scale(taken, listed, scale):,.0f} s")
        extrapolate(args)


def extrapolate(args: argparse.Namespace) -> None:
    """1M minds, the same share deleted a day: the old sweep grows with minds, the new one's marker
    part with deletions and its background pass with FOLDERS_PER_RUN."""
    deleted = FULL * args.deleted // args.minds
    shards = index_drops.SHARDS
    batches = shards * -(-deleted // shards // orphans.CHECK_BATCH)  # checked per shard, 100 at a time
    folders = orphans.FOLDERS_PER_RUN
    listing = FULL / READDIR_ENTRIES_PER_CALL * EFS_METADATA_MS / 1000
    before = FULL * GET_MS / 1000 + listing
    markers = (2 * shards * QUERY_MS + batches * (BATCH_GET_MS + PUT_MS) + PUT_MS) / 1000
    background = folders / orphans.CHECK_BATCH * BATCH_GET_MS / 1000 + listing
    print(f"\nat 1M minds, {deleted:,} deleted a day; assumed: GetItem {GET_MS} ms,")
    print(f"  BatchGetItem of 100 {BATCH_GET_MS} ms, Query {QUERY_MS} ms, PutItem {PUT_MS} ms,")
    print(f"  {READDIR_ENTRIES_PER_CALL} names per READDIRPLUS at {EFS_METADATA_MS} ms")
    print(f"  before: 1,000,000 GetItem x {GET_MS} ms + 1,000 READDIRPLUS = {before:,.0f} s a run")
    print("          (a 900 s Lambda stops at 30 %, and the next run starts from the top again)")
    print(f"  after, markers: 2 open days x {shards} Query x {QUERY_MS} ms")
    print(f"          + {batches:,} x (BatchGetItem + cursor PutItem) + 1 PutItem = {markers:,.1f} s")
    print(
        f"  after, background pass: {folders // 100:,} BatchGetItem x {BATCH_GET_MS} ms + 1,000 READDIRPLUS"
    )
    print(f"          = {background:,.0f} s; each folder checked once every {FULL // folders} daily runs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minds", type=int, default=2_000)
    parser.add_argument("--deleted", type=int, default=20)
    parser.add_argument("--lost", type=int, default=1)
    parser.add_argument("--days", type=int, default=3)
    run(parser.parse_args())
    shutil.rmtree(DATA, ignore_errors=True)


if __name__ == "__main__":
    main()
