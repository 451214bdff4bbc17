"""A temp folder as the search index root (in place of EFS), and the stream pump that indexes into it,
for the search and indexer tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest

from infra.stream_pump import Pump, StreamReader
from tests.support.settings import Configure


@pytest.fixture(name="index_root")
def index_root_fixture(configure: Configure, tmp_path: Path) -> Path:
    root = tmp_path / "index"
    configure(SYNAPSE_INDEX_DIR=str(root))
    return root


@pytest.fixture(name="pump")
def pump_fixture(dynamo: Any, index_root: Path) -> Pump:
    """The Memories stream fed to the real indexer, into `index_root`, when a test calls run_once."""
    streams = boto3.client("dynamodbstreams", region_name="us-east-1")
    return Pump(StreamReader(dynamo, streams, "test-memories"))
