"""Counting the layer's DynamoDB calls: by operation and, for queries, by index."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.races import dynamodb_hook


@contextmanager
def counted_calls() -> Iterator[Counter[str]]:
    """Every DynamoDB call the block makes, on any thread: `Query` (base table), `Query:<index>`,
    `GetItem:<table>`, `TransactWriteItems`, …"""
    found: Counter[str] = Counter()
    lock = threading.Lock()

    def count(params: dict[str, Any], model: Any, **_: Any) -> None:
        name = model.name
        if name == "Query" and "IndexName" in params:
            name = f"Query:{params['IndexName']}"
        elif name in ("GetItem", "PutItem"):
            name = f"{name}:{params['TableName']}"
        with lock:
            found[name] += 1

    with dynamodb_hook("before-parameter-build.dynamodb", count):
        yield found
