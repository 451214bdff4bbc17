"""Shared fixtures: a test environment set before any `synapse` import, moto DynamoDB built from
template.yaml, and an in-process API Gateway over the real handlers."""

from __future__ import annotations

import os

# Settings are read once per process, so the environment is fixed before anything imports synapse.
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "SYNAPSE_MEMORIES_TABLE": "test-memories",
        "SYNAPSE_MINDS_TABLE": "test-minds",
        "SYNAPSE_JWT_SECRET": "test-jwt-secret-0123456789abcdef0123456789",
        "SYNAPSE_KEY_PEPPER": "test-pepper-0123456789abcdef0123456789",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "Synapse",
        "POWERTOOLS_SERVICE_NAME": "synapse",
    }
)
os.environ.pop("SYNAPSE_DYNAMODB_ENDPOINT", None)

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from infra import motofix, template
from tests.support.api import Api

TABLE_NAMES = {"MemoriesTable": "test-memories", "MindsTable": "test-minds"}


@pytest.fixture
def dynamo() -> Iterator[object]:
    """Fresh moto DynamoDB with the template's tables."""
    from synapse.storage import tables

    motofix.apply()
    with mock_aws():
        tables.client.cache_clear()
        client = boto3.client("dynamodb", region_name="us-east-1")
        template.create_tables(client, TABLE_NAMES)
        yield client
        tables.client.cache_clear()


@pytest.fixture
def api(dynamo: object) -> Api:
    return Api()
