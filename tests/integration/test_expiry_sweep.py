"""The expiry sweep: expired memories leave recall's and by-tag's indexes, stay readable by id and
listable with include_expired, counts stay exact, and a later write or delete puts things right."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from synapse.core import clock
from synapse.index import stream
from synapse.memory import events, expiry, items, sweep, writes
from synapse.storage import tables

from infra import template
from infra.gateway import LambdaContext, load_handler
from tests.integration.test_reads import store
from tests.integration.test_template import _dynamodb_calls, _not_granted
from tests.support import events as sample_events
from tests.support.api import Api, MindHandle
from tests.support.checks import as_agent, as_user
from tests.support.clock import EXPIRY_START, MovableClock
from tests.support.clock import moved_fixture as moved_fixture
from tests.support.expiry import swept_before

T0 = EXPIRY_START


@pytest.fixture(autouse=True)
def earlier_sweep(dynamo: object) -> None:
    """The sweep last ran the hour before T0: these tests are about what it does to memories; what
    its first run reads (a day back) is tests/integration/test_expiry_shards.py's."""
    swept_before(T0)


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def get(api: Api, mind: MindHandle, path: str, **query: Any) -> Any:
    answer = api.call("GET", path, query=query, **as_agent(mind))
    assert answer.status == 200, answer.text
    return answer.json()


def recall(api: Api, mind: MindHandle, **query: Any) -> dict[str, Any]:
    body: dict[str, Any] = get(api, mind, "/memory/recall", format="json", **query)
    return body


def counts_and_keys(api: Api, mind: MindHandle, **query: Any) -> tuple[Any, ...]:
    body = recall(api, mind, **query)
    return body["total"], body["verified"], [m["key"] for m in body["memories"]]


def by_tag_keys(api: Api, mind: MindHandle, tag: str, **query: Any) -> list[str]:
    return [m["key"] for m in get(api, mind, "/memory/by-tag", tag=tag, **query)["memories"]]


def memory_item(mind: MindHandle, category: str, key: str) -> dict[str, Any]:
    found = tables.get(tables.memories_table(), {"pk": mind.id, "sk": tables.memory_sk(category, key)})
    assert found is not None
    return found


def partition(mind: MindHandle, prefix: str) -> list[str]:
    return [
        str(i["sk"])
        for i in tables.query_all(
            TableName=tables.memories_table(),
            KeyConditionExpression="pk = :mind AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=tables.values(mind=mind.id, prefix=prefix),
        )
    ]


def a_mind_with_expiring_memories(
    api: Api, mind: MindHandle, moved: MovableClock
) -> dict[str, dict[str, Any]]:
    """Two live memories and three expiring in an hour, tagged and prioritised variously."""
    soon = clock.to_iso(T0 + timedelta(hours=1))
    stored = {
        "live_a": store(api, mind, moved, key="live_a", tags=["trip"]),
        "live_b": store(api, mind, moved, key="live_b", priority="low"),
        "gone_a": store(api, mind, moved, key="gone_a", tags=["trip", "rome"], expires_at=soon),
        "gone_b": store(api, mind, moved, key="gone_b", priority="low", expires_at=soon),
        "gone_c": store(api, mind, moved, category="note", key="gone_c", tags=["trip"], expires_at=soon),
    }
    return {key: body.get("memory", body) for key, body in stored.items()}


# ---------------------------------------------------------------- the sweep


def test_swept_memories_leave_the_read_indexes_and_stay_readable(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given a mind whose three expiring memories have just expired
    stored = a_mind_with_expiring_memories(api, mind, moved)
    moved.advance(hours=2)
    before = counts_and_keys(api, mind), counts_and_keys(api, mind, tag="trip")
    assert before[0] == (2, 2, ["live_a", "live_b"])
    item_before = memory_item(mind, "fact", "gone_a")
    # When the sweep runs
    tally = sweep.run()
    # Then it swept exactly the three expired memories
    assert (tally["swept"], tally["conflict"]) == (3, 0)
    # And recall and its counts are what they were before the sweep
    assert (counts_and_keys(api, mind), counts_and_keys(api, mind, tag="trip")) == before
    # And the swept memory left the recall indexes, keeping its version and updated_at
    item = memory_item(mind, "fact", "gone_a")
    assert "recall_sk" not in item and "mind_category" not in item and expiry.BUCKET not in item
    assert (item["version"], item["updated_at"]) == (item_before["version"], item_before["updated_at"])
    # And its live tag copies moved behind the tag's live ones
    assert [sk for sk in partition(mind, tables.tag_prefix("trip")) if expiry.SWEPT_TAG_MARK in sk] != []
    assert by_tag_keys(api, mind, "trip") == ["live_a"]
    assert by_tag_keys(api, mind, "trip", include_expired="true") == ["live_a", "gone_c", "gone_a"]
    # And it is still readable by id and listed with include_expired
    answer = get(api, mind, f"/memory/{stored['gone_a']['id']}")
    assert answer["expired"] is True and answer["version"] == stored["gone_a"]["version"]
    listed = {m["key"] for m in get(api, mind, "/memory", include_expired="true")["memories"]}
    assert listed == set(stored)
    # And a second run finds nothing more to do
    assert sweep.run()["swept"] == 0


def test_recall_reads_no_swept_memory(api: Api, mind: MindHandle, moved: MovableClock) -> None:
    # Given two live memories and thirty expired ones, swept
    store(api, mind, moved, key="live_a")
    store(api, mind, moved, key="live_b", tags=["x"])
    soon = clock.to_iso(T0 + timedelta(minutes=30))
    for i in range(30):
        store(api, mind, moved, key=f"old_{i}", tags=["x"], expires_at=soon)
    moved.advance(hours=1)
    unswept_reads = _reads(lambda: recall(api, mind))
    sweep.run()
    # When recall and by-tag run
    swept_reads = _reads(lambda: recall(api, mind))
    tag_reads = _reads(lambda: by_tag_keys(api, mind, "x"))
    # Then they read the two live memories and the counters, not the thirty expired ones (the +1: the
    # authorizer reads the Mind Key's creator's member item, as every key request does)
    assert unswept_reads >= 30 + 2
    assert swept_reads <= 2 + 8 + 1
    assert tag_reads <= 1 + 1 + 1


def _reads(action: Any) -> int:
    before = sum(tables.reads.values())
    action()
    return sum(tables.reads.values()) - before


# ---------------------------------------------------------------- later writes


def test_a_write_of_a_swept_memory_puts_it_back(api: Api, mind: MindHandle, moved: MovableClock) -> None:
    # Given a swept memory
    stored = a_mind_with_expiring_memories(api, mind, moved)
    moved.advance(hours=2)
    sweep.run()
    # When a person gives it a new expiry time and a new tag
    later = clock.to_iso(moved.now() + timedelta(days=1))
    moved.advance(seconds=1)
    answer = api.call(
        "PUT",
        f"/memory/{stored['gone_a']['id']}",
        json_body={"expires_at": later, "tags": ["trip", "paris"]},
        **as_user(mind),
    )
    assert answer.status == 200, answer.text
    # Then recall shows it again and counts it, and its tags find it
    assert counts_and_keys(api, mind) == (3, 3, ["gone_a", "live_a", "live_b"])
    assert by_tag_keys(api, mind, "paris") == ["gone_a"]
    assert by_tag_keys(api, mind, "trip", include_expired="true") == ["gone_a", "live_a", "gone_c"]
    assert counts_and_keys(api, mind, tag="trip") == (2, 2, ["gone_a", "live_a"])
    # And none of its moved tag copies is left
    assert [sk for sk in partition(mind, "TAG#") if stored["gone_a"]["id"] in sk and "~" in sk] == []
    # And when it expires again, the next sweep takes it out again
    moved.advance(days=2)
    assert sweep.run()["swept"] == 1
    assert counts_and_keys(api, mind) == (2, 2, ["live_a", "live_b"])


def test_a_swept_memory_can_be_deleted_and_leaves_nothing(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given swept memories
    stored = a_mind_with_expiring_memories(api, mind, moved)
    moved.advance(hours=2)
    sweep.run()
    # When one is deleted
    answer = api.call("DELETE", f"/memory/{stored['gone_c']['id']}", **as_user(mind))
    # Then the delete succeeds and removes its moved tag copies too
    assert answer.status == 204, answer.text
    assert [sk for sk in partition(mind, "TAG#") if stored["gone_c"]["id"] in sk] == []
    # And the counts are unchanged (it was expired already)
    assert counts_and_keys(api, mind) == (2, 2, ["live_a", "live_b"])
    assert by_tag_keys(api, mind, "trip", include_expired="true") == ["live_a", "gone_a"]


def test_a_write_that_read_before_the_sweep_retries_and_stays_exact(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given an expired memory a writer has read, then the sweep takes it out
    stored = a_mind_with_expiring_memories(api, mind, moved)
    moved.advance(hours=2)
    read_before = writes.read_by_id(mind.id, stored["gone_b"]["id"])
    ops_before = writes.replace_ops(read_before, read_before)
    sweep.run()
    # When the writer commits what it prepared before the sweep
    # Then its condition fails (it must read again), and nothing changed
    with pytest.raises(writes.Retry):
        writes.commit(ops_before)
    assert counts_and_keys(api, mind) == (2, 2, ["live_a", "live_b"])


def test_a_write_between_the_sweeps_read_and_commit_wins(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given an expired memory as the sweep read it
    stored = a_mind_with_expiring_memories(api, mind, moved)
    moved.advance(hours=2)
    seen = memory_item(mind, "fact", "gone_a")
    # When a person rewrites it before the sweep commits
    moved.advance(seconds=1)
    answer = api.call(
        "PUT", f"/memory/{stored['gone_a']['id']}", json_body={"content": "New"}, **as_user(mind)
    )
    assert answer.status == 200, answer.text
    # Then the sweep's transaction fails on the version, and the write stands
    with pytest.raises(Exception, match=r"ConditionalCheckFailed|TransactionCanceled"):
        tables.transact(sweep.sweep_ops(seen, clock.to_iso(moved.now())))
    assert "recall_sk" in memory_item(mind, "fact", "gone_a")
    # And the next run sweeps it (the write put it in the current hour's bucket)
    assert sweep.run()["swept"] == 3


# ---------------------------------------------------------------- the stream: no user-visible change


def _record(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    return {
        "eventID": "1",
        "eventName": "MODIFY",
        "dynamodb": {
            "Keys": tables.dump({"pk": new["pk"], "sk": new["sk"]}),
            "NewImage": tables.dump(new),
            "OldImage": tables.dump(old),
            "SequenceNumber": "1",
        },
    }


def test_the_sweep_makes_no_webhook_event_and_no_index_change(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given a memory item before and after the sweep
    a_mind_with_expiring_memories(api, mind, moved)
    moved.advance(hours=2)
    before = memory_item(mind, "fact", "gone_a")
    sweep.run()
    after = memory_item(mind, "fact", "gone_a")
    record = _record(before, after)
    # Then its stream record is the sweep's: no memory.updated, nothing for the search index
    assert expiry.is_sweep_record(record)
    assert events.from_stream_record(record) == []
    assert stream.change_from_record(record) is None
    # And a later write of it is an ordinary change again
    rewritten = items.memory_item(items.memory_from_item(after))
    assert not expiry.is_sweep_record(_record(after, rewritten))


# ---------------------------------------------------------------- the scheduled function


def test_the_schedule_sample_sweeps_within_the_policy(
    api: Api, mind: MindHandle, moved: MovableClock
) -> None:
    # Given expired memories
    a_mind_with_expiring_memories(api, mind, moved)
    moved.advance(hours=2)
    resource = template.resources("AWS::Serverless::Function")["ExpirySweepFunction"]
    handler = load_handler(template.ROOT / resource["Properties"]["CodeUri"], "app.handler")
    # When the scheduled function gets the sample event, for the group of the mind's shard
    event = {**sample_events.load("expiry_sweep"), "group": expiry.shard_of(mind.id) % sweep.GROUPS}
    with _dynamodb_calls() as needs:
        tally = handler(event, LambdaContext("ExpirySweepFunction"))
    # Then it sweeps them, touching DynamoDB only as its policy allows
    assert tally["swept"] == 3
    assert needs and _not_granted("ExpirySweepFunction", needs) == []
    # And its schedules are in the template, one per group
    events_of = resource["Properties"]["Events"]
    assert [e["Type"] for e in events_of.values()] == ["Schedule"] * sweep.GROUPS
