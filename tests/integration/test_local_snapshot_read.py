"""The local runner's snapshot of its embedded moto (infra.motofix.table_items): the tables read
in-process, not Scanned through moto's serializer (half the runner's CPU while memories arrived),
must save exactly what a Scan saves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from infra import motofix
from infra.local_snapshot import TableSnapshot

TABLE = "snapshotted"


def _create(client: Any) -> None:
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def _saved(path: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(path.read_text())["tables"]["Things"]
    return sorted(items, key=lambda item: (item["pk"]["S"], item["sk"]["S"]))


def test_an_in_process_read_saves_what_a_scan_saves(tmp_path: Path) -> None:
    # Given a moto table holding items of every type (changed in place once), across chunks
    motofix.apply()
    item = {
        "pk": {"S": 'Müller ✓ "quoted"\n'},
        "n": {"N": "1.50"},
        "b": {"B": b"\x00\xffxy"},
        "l": {"L": [{"S": "x"}, {"N": "2"}, {"B": b"\x01"}]},
        "m": {"M": {"k": {"BOOL": True}, "z": {"NULL": True}, "bin": {"B": b"\x02"}}},
        "ss": {"SS": ["p", "q"]},
        "ns": {"NS": ["1", "2"]},
        "bs": {"BS": [b"\x01", b"\x02"]},
    }
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        _create(client)
        for n in range(7):
            client.put_item(TableName=TABLE, Item={**item, "sk": {"S": f"item#{n}"}})
        client.update_item(
            TableName=TABLE,
            Key={"pk": item["pk"], "sk": {"S": "item#3"}},
            UpdateExpression="ADD ss :more SET n = :n",
            ExpressionAttributeValues={":more": {"SS": ["r"]}, ":n": {"N": "3"}},
        )
        # When it is saved through a Scan, and read in-process three items at a time
        scanned = TableSnapshot(tmp_path / "scan", client, {"Things": TABLE})
        read = TableSnapshot(
            tmp_path / "read", client, {"Things": TABLE}, lambda name: motofix.table_items(name, chunk=3)
        )
        assert scanned.save() == read.save() == 7
    # Then both files hold the same items
    assert _saved(read.path) == _saved(scanned.path)
    assert sorted(_saved(read.path)[3]["ss"]["SS"]) == ["p", "q", "r"]


def test_an_in_process_read_restores_as_a_scan_would(tmp_path: Path) -> None:
    # Given a snapshot read in-process from a table with a binary attribute
    motofix.apply()
    item = {"pk": {"S": "a"}, "sk": {"S": "b"}, "b": {"B": b"\x00\xff"}, "bs": {"BS": [b"\x03"]}}
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        _create(client)
        client.put_item(TableName=TABLE, Item=item)
        TableSnapshot(tmp_path, client, {"Things": TABLE}, motofix.table_items).save()
        client.delete_item(TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]})
        # When it is restored into the emptied table
        TableSnapshot(tmp_path, client, {"Things": TABLE}).restore()
        # Then the item comes back byte for byte
        assert client.get_item(TableName=TABLE, Key={"pk": item["pk"], "sk": item["sk"]})["Item"] == item
