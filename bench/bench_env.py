"""The environment every benchmark runs with: fake AWS credentials, its own table names, tracing off."""

from __future__ import annotations

import base64
import random
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

BENCH_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "SYNAPSE_MEMORIES_TABLE": "bench-memories",
    "SYNAPSE_MINDS_TABLE": "bench-minds",
    "SYNAPSE_JWT_SECRET": "bench-jwt-secret-0123456789abcdef0123456789",
    "SYNAPSE_KEY_PEPPER": "bench-pepper-0123456789abcdef0123456789",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_SERVICE_NAME": "synapse",
    "POWERTOOLS_METRICS_NAMESPACE": "Synapse",
}


@contextmanager
def moto_tables() -> Iterator[None]:
    """In-process moto holding the template's tables under the bench's names, with the layer's
    DynamoDB client made inside it (and dropped after)."""
    import boto3
    from moto import mock_aws
    from synapse.storage import tables

    from infra import motofix, template

    motofix.apply()
    with mock_aws():
        tables.client.cache_clear()
        names = {
            "MemoriesTable": BENCH_ENV["SYNAPSE_MEMORIES_TABLE"],
            "MindsTable": BENCH_ENV["SYNAPSE_MINDS_TABLE"],
        }
        template.create_tables(boto3.client("dynamodb", region_name="us-east-1"), names)
        try:
            yield
        finally:
            tables.client.cache_clear()


def index_module(name: str) -> Any:
    """A module of the index package, in this tree (`synapse.index`) or a baseline's from before the
    split (`synapse.search`): the benches run both sides with one script."""
    import importlib

    try:
        return importlib.import_module(f"synapse.index.{name}")
    except ModuleNotFoundError:
        return importlib.import_module(f"synapse.search.{name}")


def seeded_ids(seed: int) -> None:
    """The service's ids (`core.ids.new_id`) drawn from a seeded generator, for this process: equal
    scores are ordered by id, so random ids moved a tied answer between ranks from one run to the
    next (bench/questions.py: between 2 and 5; bench/updates.py: a pair's newer above its older or
    not, 0.53 or 0.56 on one set). Benchmark-side only."""
    from synapse.core import ids

    drawn = random.Random(seed)

    def token_urlsafe(nbytes: int) -> str:
        return base64.urlsafe_b64encode(drawn.randbytes(nbytes)).rstrip(b"=").decode()

    ids.secrets = types.SimpleNamespace(token_urlsafe=token_urlsafe)  # type: ignore[assignment]
