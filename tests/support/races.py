"""Shared tools for race and failure tests: threads released together, and DynamoDB calls intercepted."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from threading import Barrier
from typing import Any

from synapse.storage import tables


def race[T](count: int, call: Callable[[int], T]) -> list[T]:
    """Run `call(i)` on `count` threads released at the same moment."""
    start = Barrier(count)

    def run(i: int) -> T:
        start.wait()
        return call(i)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(run, range(count)))


@contextmanager
def dynamodb_hook(event: str, handler: Callable[..., Any]) -> Iterator[None]:
    """Put `handler` first on the layer's DynamoDB client's botocore `event` (e.g.
    `before-call.dynamodb.TransactWriteItems`) for the block: a handler that returns a response
    answers the call in DynamoDB's place."""
    events = tables.client().meta.events
    unique_id = f"test-{event}-{id(handler)}"
    events.register_first(event, handler, unique_id=unique_id)
    try:
        yield
    finally:
        events.unregister(event, unique_id=unique_id)
