"""The local stream pump (infra.stream_pump): its reads of the stream, and each stream function
fed on a lane of its own, as each of Lambda's event source mappings polls for its function alone."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from infra import stream_pump
from infra.stream_pump import Lane, Pump, StreamReader


def record(n: int) -> dict[str, Any]:
    return {"eventName": "INSERT", "dynamodb": {"SequenceNumber": f"{n:021d}", "Keys": {}}}


class FakeStreams:
    """A stream of one shard holding `available` records, counting the calls the reader makes."""

    def __init__(self, available: int) -> None:
        self.records = [record(n) for n in range(available)]
        self.calls: list[str] = []

    def describe_table(self, TableName: str) -> dict[str, Any]:
        self.calls.append("DescribeTable")
        return {"Table": {"LatestStreamArn": "arn:stream"}}

    def describe_stream(self, StreamArn: str) -> dict[str, Any]:
        self.calls.append("DescribeStream")
        return {"StreamDescription": {"Shards": [{"ShardId": "shard-1"}]}}

    def get_shard_iterator(self, **where: Any) -> dict[str, Any]:
        self.calls.append("GetShardIterator")
        return {"ShardIterator": "0"}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:
        self.calls.append("GetRecords")
        start = int(ShardIterator)
        got = self.records[start : start + Limit]
        return {"Records": got, "NextShardIterator": str(start + len(got))}


def test_a_poll_reads_a_shard_until_an_answer_is_short_and_lists_shards_now_and_then(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a stream holding more records than one read returns
    monkeypatch.setattr(stream_pump, "READ_LIMIT", 10)
    streams = FakeStreams(25)
    reader = StreamReader(streams, streams, "memories")
    # When it is polled, then polled again with nothing new, then again once records arrive
    first = reader.poll()
    streams.calls.clear()
    idle = reader.poll()
    streams.records.append(record(25))
    busy = reader.poll()
    # Then the first poll drains the shard, and later polls read it once each, without listing the
    # shards again (no empty read after a short answer, no DescribeStream every poll)
    assert [r["dynamodb"]["SequenceNumber"] for r in first] == [f"{n:021d}" for n in range(25)]
    assert idle == [] and [r["dynamodb"]["SequenceNumber"] for r in busy] == [f"{25:021d}"]
    assert streams.calls == ["GetRecords", "GetRecords"]


def test_shards_are_listed_again_once_one_closes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a reader whose shard closes (no next iterator)
    streams = FakeStreams(3)
    reader = StreamReader(streams, streams, "memories")
    reader.poll()
    monkeypatch.setattr(streams, "get_records", lambda **_: {"Records": []})
    reader.poll()
    streams.calls.clear()
    # When it polls next
    reader.poll()
    # Then it lists the shards again (to find the closed one's children)
    assert streams.calls == ["DescribeStream"]


def test_a_slow_function_does_not_hold_back_another_and_each_gets_every_record_in_order() -> None:
    # Given two stream functions, one of them stuck in its handler
    release = threading.Event()
    slow_got: list[str] = []
    fast_got: list[str] = []

    def slow(event: dict[str, Any], context: Any) -> None:
        release.wait(10)
        slow_got.extend(r["dynamodb"]["SequenceNumber"] for r in event["Records"])

    def fast(event: dict[str, Any], context: Any) -> None:
        fast_got.extend(r["dynamodb"]["SequenceNumber"] for r in event["Records"])

    reader = StreamReader(None, None, "memories")
    lanes = [Lane(Pump(reader, slow, "slow", [])), Lane(Pump(reader, fast, "fast", []))]
    # When three polls' records are handed to both
    for n in range(3):
        for lane in lanes:
            lane.put([record(n)])
    lanes[1].close()
    # Then the other function has them all while the slow one is still busy
    assert fast_got == [f"{n:021d}" for n in range(3)] and slow_got == []
    # And the slow one gets them all too, in order, once it goes on (closing delivers what was read)
    release.set()
    lanes[0].close()
    assert slow_got == [f"{n:021d}" for n in range(3)]
