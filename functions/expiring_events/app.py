"""Hourly: memory.expiring for memories expiring within 24 h, once per memory and expiry time."""

from typing import Any

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.core.observability import COUNT, entry_point, logger, metrics
from synapse.webhooks import producers


@entry_point()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    tally = producers.publish_expiring()
    logger.info("memory.expiring run", extra=tally)
    metrics.add_metric(name="ExpiringEventsQueued", unit=COUNT, value=tally["messages"])
    return tally
