"""The search indexer: stream batches → one new FTS5 generation per mind; partial failures reported."""

from typing import Any

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.core.observability import entry_point
from synapse.index import stream


@entry_point()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    # A batch whose every record fails is reported like any other (Lambda retries from the first failure).
    return stream.index_stream(event)
