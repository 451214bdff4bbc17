"""Delivery queue → signed POSTs. Each message on its own thread with its own timeout, so one slow
receiver holds up no other; a message whose retry could not be queued is reported as failed."""

from typing import Any

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.core.observability import entry_point
from synapse.webhooks import delivery


@entry_point()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return delivery.deliver_batch(event.get("Records") or [])
