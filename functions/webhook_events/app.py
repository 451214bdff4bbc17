"""Memories stream → webhook events, one queued message per (subscription, event); never delivers."""

from typing import Any

from synapse.core.observability import logger, metrics
from synapse.webhooks import delivery


@logger.inject_lambda_context(log_event=False, clear_state=True)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    failed = delivery.publish_stream(event.get("Records") or [])
    return {"batchItemFailures": [{"itemIdentifier": sequence} for sequence in failed]}
