"""Invoked asynchronously by DELETE /minds/{mind_id}: the deleted mind's memories, members and
invitations purged (synapse.lifecycle.mind_deletion.finish_deletion). Lambda retries a failed or
timed-out run twice; each run deletes what is left."""

from typing import Any

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.core.observability import COUNT, entry_point, logger, metrics
from synapse.lifecycle import mind_deletion


@entry_point()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    mind_id = str(event["mind_id"])
    purged = mind_deletion.finish_deletion(mind_id)
    logger.info("mind purged", extra={"mind_id": mind_id, "items": purged})
    metrics.add_metric(name="MindItemsPurged", unit=COUNT, value=purged)
    return {"mind_id": mind_id, "purged": purged}
