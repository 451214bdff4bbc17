"""The expiry sweep over its shards: shards swept in any order, one failing, or left for lack of
time miss nothing; each has its own watermark; memories written before the shards are swept too."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from synapse.core import clock
from synapse.memory import counts, expiry, kinds, model, store, sweep
from synapse.minds import minds
from synapse.storage import tables

from infra import template
from infra.gateway import LambdaContext, load_handler
from tests.support import metrics as emitted
from tests.support.clock import EXPIRY_START, MovableClock
from tests.support.clock import moved_fixture as moved_fixture
from tests.support.expiry import swept_before

T0 = EXPIRY_START
SOON = clock.to_iso(T0 + timedelta(hours=1))


@pytest.fixture
def memories(dynamo: object, moved: MovableClock) -> dict[str, tuple[str, str]]:
    """12 minds, each with one memory expiring in an hour; the clock then moved 2 h on.

    Returns memory id -> (mind id, item sk)."""
    stored: dict[str, tuple[str, str]] = {}
    for i in range(12):
        mind, _ = minds.create_mind("owner", f"Mind {i}")
        moved.advance(seconds=1)
        body = {"category": "fact", "key": f"k{i}", "content": "soon gone", "tags": ["t"], "expires_at": SOON}
        done = store.store(mind.id, model.MemoryWrite.from_body(body), kinds.Source.USER)
        stored[done.memory.id] = (mind.id, tables.memory_sk("fact", f"k{i}"))
    moved.advance(hours=2)
    return stored


def unswept(memories: dict[str, tuple[str, str]]) -> set[str]:
    return {
        memory_id
        for memory_id, (mind_id, sk) in memories.items()
        if expiry.SWEPT_AT not in (tables.get(tables.memories_table(), {"pk": mind_id, "sk": sk}) or {})
    }


def shard_of(memories: dict[str, tuple[str, str]], memory_id: str) -> int:
    return expiry.shard_of(memories[memory_id][0])


def watermark(shard: int | None) -> Any:
    state = tables.get(tables.memories_table(), sweep.state_key(shard))
    return None if state is None else state["from"]


def put_watermark(shard: int | None, hour: str) -> None:
    item = {**sweep.state_key(shard), "from": hour}
    tables.client().put_item(TableName=tables.memories_table(), Item=tables.dump(item))


def test_the_minds_spread_over_shards_and_every_shard_is_swept(memories: dict[str, Any]) -> None:
    # Given expired memories of 12 minds, in several shards
    used = {shard_of(memories, m) for m in memories}
    assert len(used) > 1
    # When the sweep runs
    tally = sweep.run()
    # Then it swept all of them, reading every shard and the legacy one
    assert (tally["swept"], tally["failed"], tally["shards"]) == (12, 0, expiry.SHARDS + 1)
    assert unswept(memories) == set()
    # And every shard's watermark is at the previous hour
    previous = expiry.bucket_of(clock.now() - expiry.BUCKET_WIDTH)
    assert {watermark(shard) for shard in sweep.ALL_SHARDS} == {previous}


def test_shards_swept_in_any_order_miss_nothing(memories: dict[str, Any]) -> None:
    # Given expired memories in several shards, swept last the hour before they were written
    swept_before(T0)
    # When the shards run one at a time, in reverse order, each in its own run
    for shard in reversed(sweep.ALL_SHARDS):
        sweep.run(shards=[shard])
    # Then every memory was swept, each by its own shard's run
    assert unswept(memories) == set()
    assert sweep.run()["swept"] == 0


def test_a_failing_shard_keeps_its_watermark_and_the_next_run_sweeps_it(
    memories: dict[str, Any], moved: MovableClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given one shard whose index reads fail, and a watermark the previous run left for it
    broken = shard_of(memories, next(iter(memories)))
    hour_before = expiry.bucket_of(T0)
    for shard in sweep.ALL_SHARDS:
        put_watermark(shard, hour_before)
    real_due = sweep._due

    def due(bucket: str, now: str) -> Any:
        if bucket.endswith(f"#{broken:02d}"):
            raise RuntimeError("throttled")
        return real_due(bucket, now)

    monkeypatch.setattr(sweep, "_due", due)
    # When the sweep runs
    tally = sweep.run()
    # Then that shard counts as failed, its memories stay, and its watermark did not move
    in_broken = {m for m in memories if shard_of(memories, m) == broken}
    assert tally["failed"] == 1 and tally["swept"] == len(memories) - len(in_broken)
    assert unswept(memories) == in_broken
    assert watermark(broken) == hour_before
    # And every other shard's watermark moved on
    previous = expiry.bucket_of(clock.now() - expiry.BUCKET_WIDTH)
    assert {watermark(s) for s in sweep.ALL_SHARDS if s != broken} == {previous}
    # When the reads work again, hours later
    monkeypatch.setattr(sweep, "_due", real_due)
    moved.advance(hours=5)
    # Then the next run sweeps what that shard held
    assert sweep.run()["swept"] == len(in_broken)
    assert unswept(memories) == set()


def test_a_run_out_of_time_starts_no_shard_and_moves_no_watermark(memories: dict[str, Any]) -> None:
    # Given a run whose deadline has passed before it starts
    tally = sweep.run(deadline=0.0)
    # Then it deferred every shard, swept nothing and wrote no watermark
    assert (tally["deferred"], tally["swept"]) == (expiry.SHARDS + 1, 0)
    assert {watermark(shard) for shard in sweep.ALL_SHARDS} == {None}
    # And the next run sweeps everything
    assert sweep.run()["swept"] == len(memories)


def test_memories_written_before_the_shards_are_swept(memories: dict[str, Any]) -> None:
    # Given memories as the unsharded release wrote them (the bare hour as bucket), and its watermark
    for mind_id, sk in memories.values():
        tables.client().update_item(
            TableName=tables.memories_table(),
            Key=tables.dump({"pk": mind_id, "sk": sk}),
            UpdateExpression=f"SET {expiry.BUCKET} = :hour",
            ExpressionAttributeValues=tables.values(hour=SOON[:13]),
        )
    put_watermark(None, expiry.bucket_of(T0))
    # When the sharded sweep runs
    tally = sweep.run()
    # Then it sweeps them all from the legacy keys, and moves the old watermark on
    assert (tally["swept"], tally["failed"]) == (len(memories), 0)
    assert unswept(memories) == set()
    assert watermark(None) == expiry.bucket_of(clock.now() - expiry.BUCKET_WIDTH)


def test_the_scheduled_function_fails_when_a_shard_failed(
    memories: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a shard whose index reads fail
    resource = template.resources("AWS::Serverless::Function")["ExpirySweepFunction"]
    handler = load_handler(template.ROOT / resource["Properties"]["CodeUri"], "app.handler")
    broken = fail_reads_of_one_shard(memories, monkeypatch)
    # When the scheduled function runs for that shard's group
    group = broken % sweep.GROUPS
    # Then it fails (its errors alarm sees it), after sweeping the group's other shards
    with pytest.raises(RuntimeError, match="1 shard"):
        handler({"group": group}, LambdaContext("ExpirySweepFunction"))
    left = {
        m
        for m in memories
        if shard_of(memories, m) == broken or shard_of(memories, m) % sweep.GROUPS != group
    }
    assert unswept(memories) == left and any(shard_of(memories, m) == broken for m in left)


# ---------------------------------------------------------------- groups: one invocation each


def test_the_groups_split_the_shards_and_the_template_schedules_each_one() -> None:
    # Given the shard groups
    groups = [sweep.group_shards(g) for g in range(sweep.GROUPS)]
    # Then every shard, the legacy one included, is in exactly one group, and they are even
    assert sorted(map(str, (s for g in groups for s in g))) == sorted(map(str, sweep.ALL_SHARDS))
    assert {len(g) for g in groups} <= {expiry.SHARDS // sweep.GROUPS, expiry.SHARDS // sweep.GROUPS + 1}
    # And the template schedules one invocation per group, all on the same period
    resource = template.resources("AWS::Serverless::Function")["ExpirySweepFunction"]
    schedules = [e["Properties"] for e in resource["Properties"]["Events"].values()]
    assert sorted(json.loads(p["Input"])["group"] for p in schedules) == list(range(sweep.GROUPS))
    assert {p["Schedule"] for p in schedules} == {"rate(15 minutes)"}


def test_each_group_sweeps_only_its_shards_and_all_groups_sweep_everything(
    memories: dict[str, Any],
) -> None:
    # Given expired memories in several shards, swept last the hour before they were written
    swept_before(T0)
    previous = expiry.bucket_of(clock.now() - expiry.BUCKET_WIDTH)
    ran: set[int | None] = set()
    for group in reversed(range(sweep.GROUPS)):
        # When one group's invocation runs
        tally = sweep.run(shards=sweep.shards_for({"group": group}))
        ran |= set(sweep.group_shards(group))
        # Then it swept its shards' memories, and moved only its shards' watermarks
        mine = {m for m in memories if shard_of(memories, m) % sweep.GROUPS == group}
        assert tally["swept"] == len(mine) and unswept(memories).isdisjoint(mine)
        assert {s for s in sweep.ALL_SHARDS if watermark(s) == previous} == ran
    # And after every group ran, nothing is left
    assert unswept(memories) == set()


@pytest.mark.parametrize("event", [{"group": -1}, {"group": 8}, {"group": "0"}, {"group": True}])
def test_an_invocation_naming_no_valid_group_is_refused(event: dict[str, Any]) -> None:
    # Given an invocation by hand with a bad group
    # Then it is refused before sweeping anything
    with pytest.raises(ValueError, match="group"):
        sweep.shards_for(event)


def test_an_invocation_naming_no_group_sweeps_every_shard() -> None:
    # Given a schedule's event without an input (an invocation by hand, the local stack)
    event = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
    # Then every shard is swept
    assert sweep.shards_for(event) == sweep.ALL_SHARDS


def test_a_shard_sweeps_its_memories_on_several_threads(dynamo: object, moved: MovableClock) -> None:
    # Given 20 expired memories in one mind (one shard)
    mind, _ = minds.create_mind("owner", "Busy")
    for i in range(20):
        body = {"category": "fact", "key": f"k{i}", "content": "gone", "tags": ["a", "b"], "expires_at": SOON}
        store.store(mind.id, model.MemoryWrite.from_body(body), kinds.Source.USER)
    moved.advance(hours=2)
    # When the shard is swept 8 memories at a time
    tally = sweep.sweep_shard(expiry.shard_of(mind.id), clock.now(), threads=8)
    # Then all 20 are swept, and the mind's counters count none of them
    assert (tally["swept"], tally["conflict"]) == (20, 0)
    assert counts.total(counts.stored(mind.id, None, None)).n == 0


def _raise() -> Any:
    raise RuntimeError("throttled")


def fail_reads_of_one_shard(memories: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> int:
    """Makes every index read of the first memory's shard fail; returns that shard."""
    broken, real_due = shard_of(memories, next(iter(memories))), sweep._due
    monkeypatch.setattr(
        sweep, "_due", lambda b, now: _raise() if b.endswith(f"#{broken:02d}") else real_due(b, now)
    )
    return broken


# ---------------------------------------------------------------- how far behind: the lag it reports


def hours_behind(hour: str) -> int:
    """The lag a run at the current clock reports for a shard whose next run starts from `hour`."""
    return int((clock.now() - sweep._start_of(hour)).total_seconds())


def test_a_run_that_keeps_up_reports_under_two_hours_even_with_nothing_to_expire(
    dynamo: object, moved: MovableClock
) -> None:
    # Given a stack where nothing expires, swept for the first time, then every 15 minutes for 2 h
    # (runs at every quarter of an hour, across hour boundaries)
    lags = [sweep.run()["lag_seconds"]]
    for _ in range(8):
        moved.advance(minutes=15)
        lags.append(sweep.run()["lag_seconds"])
    # Then every run reports its watermarks at the previous hour: 1 to 2 h, under the alarm's 2 h
    assert all(3600 <= lag < 7200 for lag in lags), lags
    assert min(lags) == 3600 and max(lags) == 3600 + 45 * 60


def test_a_failing_shard_makes_the_lag_grow_until_it_sweeps_again(
    memories: dict[str, Any], moved: MovableClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given every shard's watermark at the hour before the memories expired, and one shard failing
    hour_before = expiry.bucket_of(T0)
    for shard in sweep.ALL_SHARDS:
        put_watermark(shard, hour_before)
    real_due = sweep._due
    fail_reads_of_one_shard(memories, monkeypatch)
    # When the sweep runs, and again 5 hours later
    first = sweep.run()
    moved.advance(hours=5)
    later = sweep.run()
    # Then each reports the failed shard's watermark: over 2 h behind, then 5 h more
    assert (first["failed"], first["lag_seconds"]) == (1, hours_behind(hour_before) - 5 * 3600)
    assert first["lag_seconds"] > 7200
    assert (later["failed"], later["lag_seconds"]) == (1, hours_behind(hour_before))
    # And once the shard reads again (on the same moved clock), the lag is back under 2 h
    monkeypatch.setattr(sweep, "_due", real_due)
    assert sweep.run()["lag_seconds"] < 7200


def test_a_run_out_of_time_reports_the_shards_it_left(memories: dict[str, Any]) -> None:
    # Given a run whose deadline passed before it started any shard (none was ever swept)
    tally = sweep.run(deadline=0.0)
    # Then its lag is where the next run starts: a day back
    assert tally["lag_seconds"] == hours_behind(expiry.bucket_of(clock.now() - sweep.FIRST_RUN_LOOKBACK))
    assert tally["lag_seconds"] > 24 * 3600


def test_the_scheduled_function_writes_its_lag_and_failed_shards(
    memories: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the scheduled function and a shard whose reads fail, with a watermark 2 h back
    resource = template.resources("AWS::Serverless::Function")["ExpirySweepFunction"]
    handler = load_handler(template.ROOT / resource["Properties"]["CodeUri"], "app.handler")
    hour_before = expiry.bucket_of(T0)
    for shard in sweep.ALL_SHARDS:
        put_watermark(shard, hour_before)
    broken = fail_reads_of_one_shard(memories, monkeypatch)
    capsys.readouterr()
    # When it runs for that shard's group (and fails, for the errors alarm)
    group = broken % sweep.GROUPS
    with pytest.raises(RuntimeError):
        handler({"group": group}, LambdaContext("ExpirySweepFunction"))
    # Then it wrote how far behind the failed shard is, and that one shard failed
    written = emitted.values(capsys.readouterr().out)
    assert written[sweep.LAG_METRIC] == [hours_behind(hour_before)]
    assert written[sweep.FAILED_METRIC] == [1]
    in_group = [m for m in memories if shard_of(memories, m) % sweep.GROUPS == group]
    assert written["ExpiredMemoriesSwept"] == [sum(1 for m in in_group if shard_of(memories, m) != broken)]
