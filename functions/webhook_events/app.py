"""Memories stream → webhook events, one queued message per (subscription, event); never delivers."""

from typing import Any

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.core.observability import entry_point
from synapse.webhooks import producers


@entry_point()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    failed = producers.publish_stream(event.get("Records") or [])
    return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in failed]}
