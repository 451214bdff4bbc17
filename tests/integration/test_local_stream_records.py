"""The local stack's GetRecords (infra.motofix): moto's records written out as JSON directly, not
through its generic serializer (~4 ms of CPU a record, most of what the local runner's indexing
cost), must read back exactly as moto's own answer does."""

from __future__ import annotations

from typing import Any

import boto3
from moto import mock_aws
from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

from infra import motofix
from infra.stream_pump import StreamReader

TABLE = "streamed"


def records(client: Any, streams: Any) -> list[dict[str, Any]]:
    arn = client.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    (shard,) = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]
    where = {"StreamArn": arn, "ShardId": shard["ShardId"], "ShardIteratorType": "TRIM_HORIZON"}
    iterator = streams.get_shard_iterator(**where)["ShardIterator"]
    found: list[dict[str, Any]] = streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
    return found


def test_stream_records_read_back_as_motos_serializer_writes_them(monkeypatch: Any) -> None:
    # Given a table whose stream holds an insert, a change and a removal of an item of every type
    motofix.apply()
    fast = DynamoDBStreamsHandler.get_records
    item = {
        "pk": {"S": 'Müller ✓ "quoted"\n'},
        "n": {"N": "1.5"},
        "b": {"B": b"\x00\xffxy"},
        "l": {"L": [{"S": "x"}, {"N": "2"}]},
        "m": {"M": {"k": {"BOOL": True}, "z": {"NULL": True}}},
        "ss": {"SS": ["p", "q"]},
        "ns": {"NS": ["1", "2"]},
        "bs": {"BS": [b"\x01", b"\x02"]},
    }
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        streamed(client, item)
        streams = boto3.client("dynamodbstreams", region_name="us-east-1")
        # When they are read through the local stack's GetRecords, and through moto's own
        ours = records(client, streams)
        monkeypatch.setattr(DynamoDBStreamsHandler, "get_records", _motos_own())
        theirs = records(client, streams)
        monkeypatch.setattr(DynamoDBStreamsHandler, "get_records", fast)
    # Then both read back the same
    assert [r["eventName"] for r in ours] == ["INSERT", "MODIFY", "REMOVE"]
    assert ours == theirs


def streamed(client: Any, item: dict[str, Any]) -> None:
    """A table with a stream holding the item's insert, a change of its `n` and its removal."""
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    client.put_item(TableName=TABLE, Item=item)
    client.put_item(TableName=TABLE, Item={**item, "n": {"N": "2"}})
    client.delete_item(TableName=TABLE, Key={"pk": item["pk"]})


def _motos_own() -> Any:
    from moto.core.responses import ActionResult

    def get_records(self: Any) -> ActionResult:
        limit = self._get_param("Limit")
        return ActionResult(self.backend.get_records(self._get_param("ShardIterator"), limit or 1000))

    return get_records


def test_the_pump_reads_in_process_what_it_reads_through_the_endpoint() -> None:
    # Given a table whose stream holds an insert, a change and a removal, and a binary attribute
    motofix.apply()
    item = {
        "pk": {"S": "Müller ✓"},
        "n": {"N": "1.5"},
        "l": {"L": [{"S": "x"}, {"N": "2"}]},
        "m": {"M": {"k": {"BOOL": True}, "z": {"NULL": True}}},
        "ss": {"SS": ["p", "q"]},
    }
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        streamed(client, item)
        client.put_item(TableName=TABLE, Item={"pk": {"S": "bin"}, "b": {"B": b"\x00\xff"}})
        # When the local pump's reader reads it through the endpoint, and in-process
        streams = boto3.client("dynamodbstreams", region_name="us-east-1")
        through = StreamReader(client, streams, TABLE).poll()
        within = StreamReader(client, motofix.InProcessStreams(), TABLE)
        read = within.poll()
        client.put_item(TableName=TABLE, Item={"pk": {"S": "later"}})
        later = within.poll()
    # Then both read the same records, binary as the base64 text Lambda hands a function
    assert [r["eventName"] for r in read] == ["INSERT", "MODIFY", "REMOVE", "INSERT"]
    assert read[:3] == through[:3]
    assert read[3]["dynamodb"]["NewImage"]["b"] == {"B": "AP8="}
    assert through[3]["dynamodb"]["NewImage"]["b"] == {"B": b"\x00\xff"}
    # And the in-process reader goes on after what it read
    assert [r["dynamodb"]["Keys"] for r in later] == [{"pk": {"S": "later"}}]
