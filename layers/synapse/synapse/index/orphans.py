"""Indexes of minds that no longer exist: deleting a mind deletes its index files.

The indexer removes a mind's index when it sees the mind's memories deleted after the mind; a mind
whose memories were all deleted before it leaves no such record, so a scheduled sweep catches it:

- **Markers.** Deleting a mind writes a marker (`index_drops`); the sweep reads the markers written
  since its cursor (one item, `SWEEP#ORPHANS / MARKERS`): per day from the oldest open one, per
  shard the last marker handled. A day closes once every shard is read and the day ended
  `DAY_GRACE` ago (a marker committed at 23:59:59 is still seen). Work is what was deleted since the
  last run, never a directory listing; a run out of time keeps its place and the next resumes there.
- **Background pass.** For folders whose marker was lost (minds deleted before markers existed, a
  sweep broken for longer than a marker's `ttl`): per run the next `FOLDERS_PER_RUN` folder names
  after its cursor (`SWEEP#ORPHANS / FOLDERS`), checked 100 at a time; past the last name it
  starts again from the first. One stream over the directory (names only, no stat, no DynamoDB call
  per entry) picks them.
- **Lag.** `lag_seconds` (alarmed on as `LAG_METRIC`) is the age of the oldest marker the run may
  have left unhandled: 0 when it caught up, else from the start of the cursor's day.

A folder is removed only when a strongly consistent read finds no mind item (ids are never reused,
and a mind's item is written before any of its memories, so before its folder), after waiting for
a writer in flight (the writer lock), as the indexer does.
"""

from __future__ import annotations

import heapq
import itertools
import os
import random
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from synapse.core import clock
from synapse.index import generations, index_drops
from synapse.storage import tables

MARKERS_STATE = {"pk": "SWEEP#ORPHANS", "sk": "MARKERS"}
FOLDERS_STATE = {"pk": "SWEEP#ORPHANS", "sk": "FOLDERS"}
FIRST_RUN_LOOKBACK = timedelta(days=7)  # the first run reads this far back; older: background pass
DAY_GRACE = timedelta(hours=1)
FOLDERS_PER_RUN = 100_000  # 1M folders: a full background pass every 10 daily runs
CHECK_BATCH = 100  # one BatchGetItem
DAY_DONE = "~"  # a shard's cursor once its (closed) day was read to the end; sorts after MIND#…
# Namespace Synapse, dimension service: template.yaml's OrphanSweepLagAlarm reads it.
LAG_METRIC = "OrphanSweepLagSeconds"


def never() -> bool:
    return False


def mind_exists(mind_id: str) -> bool:
    return tables.get(tables.minds_table(), tables.mind_key(mind_id)) is not None


def existing_minds(mind_ids: Iterable[str]) -> set[str]:
    """The ids among these whose mind item exists: strongly consistent BatchGetItem, 100 keys per
    call, resending what DynamoDB returns unprocessed after a growing pause (as `batch_delete`)."""
    keys, found = [tables.dump(tables.mind_key(m)) for m in mind_ids], set()
    table = tables.minds_table()
    for start in range(0, len(keys), CHECK_BATCH):
        request: dict[str, Any] = {"Keys": keys[start : start + CHECK_BATCH], "ConsistentRead": True}
        for attempt in itertools.count():
            answer = tables.client().batch_get_item(
                RequestItems={table: {**request, "ProjectionExpression": "pk"}}
            )
            items = [tables.load(i) for i in answer.get("Responses", {}).get(table, [])]
            tables.reads["batch_get"] += len(items)
            found |= {str(item["pk"]).removeprefix("MIND#") for item in items}
            request = {**request, "Keys": answer.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])}
            if not request["Keys"]:
                break
            time.sleep(min(2.0, 0.05 * 2**attempt) * random.uniform(0.5, 1.0))
    return found


def remove_mind(mind_id: str, base: Path | None = None) -> bool:
    """Delete every file of a mind's index (the mind is gone). Returns whether anything was there."""
    folder = generations.mind_dir(mind_id, base)
    if not folder.exists():
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True


def remove_after_writer(mind_id: str, base: Path | None = None) -> None:
    """Wait for a writer in flight to finish, then remove everything."""
    with generations.writer_lock(generations.mind_dir(mind_id, base)):
        pass
    remove_mind(mind_id, base)


@dataclass
class Swept:
    """What one run did: the minds whose folders it removed, and what it read to find them."""

    removed: list[str] = field(default_factory=list)
    markers_read: int = 0
    folders_listed: int = 0
    folders_checked: int = 0
    markers_caught_up: bool = False
    background_passes: int = 0
    lag_seconds: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "removed": list(self.removed)}


def _drop_gone(mind_ids: list[str], folder: Path, swept: Swept) -> None:
    """Remove the folders of those that are gone (no mind item) and exist; live ones are left alone."""
    live = existing_minds(mind_ids)
    for mind_id in mind_ids:
        if mind_id not in live and (folder / mind_id).is_dir():
            remove_after_writer(mind_id, folder)
            swept.removed.append(mind_id)


def _start_of(day: str) -> datetime:
    return datetime.fromisoformat(day + "T00:00:00+00:00")


def _days(first: str, last: str) -> Iterator[str]:
    moment = _start_of(first)
    while (day := index_drops.day_of(moment)) <= last:
        yield day
        moment += timedelta(days=1)


def _closed(day: str, now: datetime) -> bool:
    return now >= _start_of(day) + timedelta(days=1) + DAY_GRACE


def _save(key: dict[str, str], state: dict[str, Any], now: datetime) -> None:
    item = {**key, **state, "at": clock.to_iso(now)}
    tables.client().put_item(TableName=tables.minds_table(), Item=tables.dump(item))


@dataclass
class _MarkerCursor:
    """The oldest day that may still get markers, and per day#shard the last marker handled."""

    day: str
    after: dict[str, str]
    now: datetime

    def save(self) -> None:
        _save(MARKERS_STATE, {"day": self.day, "after": self.after}, self.now)


def sweep_markers(base: Path, out_of_time: Callable[[], bool], now: datetime, swept: Swept) -> None:
    """Handle the markers after the cursor; the cursor is saved after every batch and at the end."""
    state = tables.get(tables.minds_table(), MARKERS_STATE) or {}
    first = str(state.get("day") or index_drops.day_of(now - FIRST_RUN_LOOKBACK))
    cursor = _MarkerCursor(first, {str(k): str(v) for k, v in (state.get("after") or {}).items()}, now)
    for day in _days(first, index_drops.day_of(now)):
        slots = [f"{day}#{shard:02d}" for shard in range(index_drops.SHARDS)]
        for shard, slot in enumerate(slots):
            if cursor.after.get(slot) == DAY_DONE:
                continue
            if not _sweep_shard(day, shard, slot, cursor, base, out_of_time, swept):
                cursor.save()
                swept.lag_seconds = int((now - _start_of(cursor.day)).total_seconds())
                return
            if _closed(day, now):
                cursor.after[slot] = DAY_DONE
        if _closed(day, now):  # every shard read to the end: the day is done
            cursor.after = {k: v for k, v in cursor.after.items() if k not in slots}
            cursor.day = index_drops.day_of(_start_of(day) + timedelta(days=1))
    cursor.save()
    swept.markers_caught_up = True


def _sweep_shard(
    day: str,
    shard: int,
    slot: str,
    cursor: _MarkerCursor,
    base: Path,
    out_of_time: Callable[[], bool],
    swept: Swept,
) -> bool:
    """One shard of one day from its cursor, CHECK_BATCH markers at a time; False if time ran out
    (the markers read by then are handled first, so every run, however short, makes progress)."""
    pending: list[tuple[str, str]] = []
    for marker in index_drops.markers(day, shard, cursor.after.get(slot), page=CHECK_BATCH):
        if out_of_time():
            if pending:
                _handle_markers(pending, slot, cursor, base, swept)
            return False
        swept.markers_read += 1
        pending.append(marker)
        if len(pending) == CHECK_BATCH:
            _handle_markers(pending, slot, cursor, base, swept)
            cursor.save()
            pending = []
    if pending:
        _handle_markers(pending, slot, cursor, base, swept)
    return True


def _handle_markers(
    markers: list[tuple[str, str]], slot: str, cursor: _MarkerCursor, base: Path, swept: Swept
) -> None:
    _drop_gone([m for _, m in markers if generations.is_mind_folder_name(m)], base, swept)
    cursor.after[slot] = markers[-1][0]


def _smallest_after(folder: Path, after: str, count: int) -> tuple[list[str], int]:
    """The `count` smallest mind folder names after `after`, and how many entries were listed."""
    listed = 0

    def names() -> Iterator[str]:
        nonlocal listed
        with os.scandir(folder) as entries:
            for entry in entries:
                listed += 1
                if entry.name > after and generations.is_mind_folder_name(entry.name):
                    yield entry.name

    chosen = heapq.nsmallest(count, names())
    return chosen, listed


def sweep_folders(
    base: Path, out_of_time: Callable[[], bool], now: datetime, swept: Swept, limit: int
) -> None:
    """The background pass: the next `limit` folders after its cursor; past the last, from the top."""
    state = tables.get(tables.minds_table(), FOLDERS_STATE) or {}
    after, passes = str(state.get("after") or ""), int(state.get("passes") or 0)
    chosen, swept.folders_listed = _smallest_after(base, after, limit)
    done = 0
    for start in range(0, len(chosen), CHECK_BATCH):
        if out_of_time():
            break
        batch = chosen[start : start + CHECK_BATCH]
        _drop_gone(batch, base, swept)
        after, done = batch[-1], done + len(batch)
        swept.folders_checked += len(batch)
    if done == len(chosen) and len(chosen) < limit:
        after, passes = "", passes + 1  # reached the last folder: the next run starts from the first
    swept.background_passes = passes
    _save(FOLDERS_STATE, {"after": after or None, "passes": passes}, now)


def sweep(
    base: Path | None = None,
    out_of_time: Callable[[], bool] = never,
    folders: int = FOLDERS_PER_RUN,
    at: datetime | None = None,
) -> Swept:
    """The markers first (what was deleted since the last run), then the background pass with the
    time left; `out_of_time` is asked before each step, so a run can stop anywhere and resume."""
    folder = base or generations.root()
    now = at or clock.now()
    swept = Swept()
    if not folder.is_dir():
        return swept
    sweep_markers(folder, out_of_time, now, swept)
    if folders > 0 and not out_of_time():
        sweep_folders(folder, out_of_time, now, swept, folders)
    return swept
