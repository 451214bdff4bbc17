"""Delivery queue → signed POSTs. Each message on its own thread with its own timeout, so one slow
receiver holds up no other; a message whose retry could not be queued is reported as failed."""

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from synapse.core.observability import entry_point, logger
from synapse.webhooks import delivery


def _deliver(record: dict[str, Any]) -> str:
    try:
        return delivery.handle_message(record["body"])
    except Exception:
        logger.exception("webhook delivery: message failed; SQS will redeliver it")
        return "failed"


@entry_point()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    records = event.get("Records") or []
    with ThreadPoolExecutor(max_workers=max(1, min(10, len(records)))) as pool:
        outcomes = list(pool.map(_deliver, records))
    delivery.count_outcomes(outcomes)
    failed = [r["messageId"] for r, outcome in zip(records, outcomes, strict=True) if outcome == "failed"]
    return {"batchItemFailures": [{"itemIdentifier": str(m)} for m in failed]}
