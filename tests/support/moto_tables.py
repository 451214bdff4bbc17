"""The template's tables put straight into moto's DynamoDB backend, for the per-test `dynamo` fixture.

Creating them with CreateTable calls through a boto3 client cost ~0.1 s a test (botocore serialising
three requests, moto parsing them back): more than most integration tests spend on their own calls.
The backend takes the same arguments CreateTable's handler passes it, from the same template.yaml
definitions, in well under a millisecond; tests/integration/test_moto_tables.py holds that the
tables made this way describe exactly as the ones CreateTable makes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from infra import template

REGION = "us-east-1"


def create_tables(names: dict[str, str], region: str = REGION) -> None:
    """Each template table under the physical name `names[logical id]`, in the running mock_aws."""
    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][region]
    for logical, definition in template.table_definitions().items():
        backend.create_table(
            names[logical],
            schema=definition["KeySchema"],
            throughput=definition.get("ProvisionedThroughput"),
            attr=definition["AttributeDefinitions"],
            global_indexes=definition.get("GlobalSecondaryIndexes") or [],
            indexes=definition.get("LocalSecondaryIndexes") or [],
            streams=definition.get("StreamSpecification"),
            billing_mode=definition.get("BillingMode", "PROVISIONED"),
            sse_specification=definition.get("SSESpecification"),
            tags=definition.get("Tags", []),
            deletion_protection_enabled=definition.get("DeletionProtectionEnabled", False),
            warm_throughput=None,
        )


def saved(region: str = REGION) -> dict[str, Any]:
    """A deep copy of every table of the running mock_aws (items, indexes, stream records), for
    `put_back` to make a later test's tables exactly these: a state built through the API once per
    process instead of once per test."""
    return copy.deepcopy(dynamodb_backends[DEFAULT_ACCOUNT_ID][region].tables)


def put_back(tables: dict[str, Any], region: str = REGION) -> None:
    """The running mock_aws's tables made a fresh deep copy of what `saved` returned."""
    backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][region]
    backend.tables.clear()
    backend.tables.update(copy.deepcopy(tables))


def built_once[T](kept: dict[str, Any], build: Callable[[], T]) -> T:
    """`build()` made through the API by the first test of the process, its result and the tables
    just after it `kept`; each later test gets the tables put back exactly so, and the same result."""
    if "tables" in kept:
        put_back(kept["tables"])
    else:
        kept.update(built=build(), tables=saved())
    built: T = kept["built"]
    return built


def described(client: Any, name: str) -> dict[str, Any]:
    """DescribeTable's answer without what differs between two creations (times, ids, ARNs)."""
    table = client.describe_table(TableName=name)["Table"]
    volatile = {"CreationDateTime", "TableArn", "TableId", "LatestStreamArn", "LatestStreamLabel"}
    kept = {k: v for k, v in table.items() if k not in volatile}
    for index in kept.get("GlobalSecondaryIndexes", []):
        index.pop("IndexArn", None)
    return kept
