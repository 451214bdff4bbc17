"""Shared fixtures: a test environment set before any `synapse` import, moto DynamoDB built from
template.yaml, an in-process API Gateway over the real handlers, and the local runners that the e2e,
client and browser tests share (one of each kind per test process: a start costs seconds, java and
the model included, and the tests that share one each work in their own fresh mind)."""

from __future__ import annotations

import functools
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
from typing import Any

import boto3
import pytest
from moto import mock_aws

from infra import motofix
from tests.support import moto_speed, moto_tables
from tests.support.api import Api
from tests.support.botocore_speed import without_unread_headers
from tests.support.runner import LOOPBACK, SHARED, STARTUP, RunningService, SharedStore, running

TABLE_NAMES = {"MemoriesTable": "test-memories", "MindsTable": "test-minds"}


# moto's own default resets boto3's default session on every start, so each test re-read botocore's
# service models and endpoint data for new clients: ~90 ms of a ~100 ms fixture. Keeping the one boto3
# session of the process makes a new client ~2 ms; moto itself still starts per test, and its start
# and stop reset every backend, so no table, item, stream record or queue survives a test.
_MOCK_CONFIG: Any = {"core": {"reset_boto3_session": False}}


@functools.cache
def _test_client() -> Any:
    """The tests' own DynamoDB client, one per process: moto's stubber sits on every client made after
    moto's import and answers from whichever backend is current, so a client outlives its mock."""
    return boto3.client("dynamodb", region_name="us-east-1")


def _layer_client_is_the_default() -> bool:
    """Whether the layer's cached client is the one every test starts with (default settings' region
    and endpoint), so the next test may keep it rather than pay for a new one."""
    from synapse.storage import tables

    if tables.client.cache_info().currsize == 0:
        return True
    meta = tables.client().meta
    return meta.region_name == "us-east-1" and meta.endpoint_url == "https://dynamodb.us-east-1.amazonaws.com"


@pytest.fixture
def dynamo() -> Iterator[object]:
    """Fresh moto DynamoDB with the template's tables (put straight into moto's backend:
    tests/support/moto_tables.py)."""
    from synapse.storage import tables

    motofix.apply()
    moto_speed.apply()
    with mock_aws(config=_MOCK_CONFIG), without_unread_headers():
        if not _layer_client_is_the_default():
            tables.client.cache_clear()
        moto_tables.create_tables(TABLE_NAMES)
        yield _test_client()
        if not _layer_client_is_the_default():
            tables.client.cache_clear()


@pytest.fixture
def api(dynamo: object) -> Api:
    return Api()


@pytest.fixture(scope="session")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedStore]:
    """The DynamoDB Local of this test process's own-settings runners, e2e and browser
    (tests/support/runner.py), started by the first one to ask, stopped at the end."""
    store = SharedStore(tmp_path_factory.mktemp("shared-dynamodb"))
    yield store
    store.stop()


@pytest.fixture(scope="session")
def shared_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    """The runner on its default settings, one per test process (xdist worker), stopped cleanly at the
    end: none of the requests it served may have been answered with a 5xx. Its store is its own (the
    default, DynamoDB Local in CI): tests lock its data dir and rebuild from the store it prints."""
    with running(tmp_path_factory, "runner", SHARED, timeout=STARTUP) as service:
        yield service


@pytest.fixture(scope="session")
def loopback_runner(
    tmp_path_factory: pytest.TempPathFactory, shared_store: SharedStore
) -> Iterator[RunningService]:
    """The runner that may deliver webhooks to receivers on this machine, one per test process. Its
    tables are in the process's shared DynamoDB Local (no JVM start of its own); `shared_runner` keeps
    a store of its own, for the tests of what it locks and prints about it (test_persistence.py's
    second runner on its data dir, test_search_e2e.py's README rebuild)."""
    environment = SHARED | LOOPBACK | shared_store.env("loopback")
    with running(tmp_path_factory, "loopback-runner", environment, timeout=STARTUP) as service:
        yield service


# The files whose tests take longest (`--durations`, 2026-12-08: the contract fuzz ~130-175 s, the
# attack run, the signal, durability and paging e2e tests ~25-40 s each), costliest first. They run
# first: pytest-xdist's worksteal hands each worker a contiguous half of the collection and lets an
# idle worker take half of another's queue, but never a test already running, so a long test left
# near the end of a half ran on alone while the other worker stood idle (pytest 570 s for 4,072
# tests, one worker idle for the contract fuzz's last minutes). In front, the other worker meanwhile
# takes the short tests of its half and then half of what is left behind them.
RUN_FIRST = (
    "tests/e2e/test_contract.py",
    "tests/e2e/test_runner_signals.py",
    "tests/e2e/test_attacks.py",
    "tests/e2e/test_search_e2e.py",
    "tests/e2e/test_durability.py",
    "tests/integration/test_malformed_input.py",
    "tests/e2e/test_demo.py",
    "tests/e2e/test_expiry_sweep_e2e.py",
    "tests/integration/test_recall_calls.py",
    "tests/e2e/test_persistence.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The RUN_FIRST files' tests first, in that order, each file's own order kept."""
    rank = {path: at for at, path in enumerate(RUN_FIRST)}

    def place(item: pytest.Item) -> int:
        return rank.get(item.nodeid.split("::", 1)[0], len(RUN_FIRST))

    items.sort(key=place)  # stable: every other test keeps its collected order
