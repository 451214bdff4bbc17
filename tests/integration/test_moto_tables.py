"""The `dynamo` fixture's shortcut (tables put straight into moto's backend) makes the tables
CreateTable would: same keys, indexes, billing and stream, from the same template.yaml."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto import mock_aws

from infra import template
from tests.conftest import TABLE_NAMES
from tests.support import moto_tables


def _both_ways() -> tuple[dict[str, Any], dict[str, Any]]:
    with mock_aws(config={"core": {"reset_boto3_session": False}}):
        client = boto3.client("dynamodb", region_name="us-east-1")
        template.create_tables(client, TABLE_NAMES)
        through_the_api = {name: moto_tables.described(client, name) for name in TABLE_NAMES.values()}
    with mock_aws(config={"core": {"reset_boto3_session": False}}):
        client = boto3.client("dynamodb", region_name="us-east-1")
        moto_tables.create_tables(TABLE_NAMES)
        shortcut = {name: moto_tables.described(client, name) for name in TABLE_NAMES.values()}
    return through_the_api, shortcut


def test_the_fixtures_tables_describe_as_createtable_makes_them() -> None:
    # Given the template's tables made by CreateTable calls, and by the fixture's shortcut
    through_the_api, shortcut = _both_ways()
    # Then both describe alike, streams and secondary indexes included
    assert shortcut == through_the_api
    memories = shortcut[TABLE_NAMES["MemoriesTable"]]
    assert memories["StreamSpecification"]["StreamEnabled"] is True
    assert memories.get("GlobalSecondaryIndexes")


@pytest.mark.parametrize("run", ["first", "second"])
def test_a_test_starts_with_empty_tables_whatever_the_last_one_left(dynamo: Any, run: str) -> None:
    # Given the fixture's client (one per process, outliving each mock), and a run before this one
    # that left an item behind (in one process, the other of these two)
    # Then the tables it sees are this test's: empty
    for name in TABLE_NAMES.values():
        assert dynamo.scan(TableName=name)["Count"] == 0
    dynamo.put_item(TableName=TABLE_NAMES["MindsTable"], Item={"pk": {"S": "left"}, "sk": {"S": "behind"}})
