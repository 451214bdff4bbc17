"""The delivery log: every attempt to deliver an event, kept 7 days under its mind
(`MIND#<mind>` / `DELIVERY#<webhook>#<time>#<event>#<attempt>`), for
`GET /minds/{mind_id}/webhooks/{webhook_id}/deliveries`."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from synapse.core import clock
from synapse.storage import tables
from synapse.webhooks import subscriptions, transport

KEEP_LOG = timedelta(days=7)

_LOG_FIELDS = (
    "event_id",
    "event_type",
    "attempt",
    "attempted_at",
    "state",
    "status_code",
    "error",
    "latency_ms",
    "next_retry_at",
)


def record(
    subscription: subscriptions.Subscription,
    payload: dict[str, Any],
    attempt_number: int,
    at: datetime,
    result: transport.Outcome,
    state: str,
    next_retry_at: datetime | None,
) -> None:
    """Log one attempt; `state` is delivered, retrying, gave_up or failed (a test ping)."""
    stamp = clock.to_iso(at)
    sk = f"{tables.DELIVERY_PREFIX}{subscription.id}#{stamp}#{payload['id']}#{attempt_number:04d}"
    item = {
        "pk": f"MIND#{subscription.mind_id}",
        "sk": sk,
        "webhook_id": subscription.id,
        "event_id": payload["id"],
        "event_type": payload["type"],
        "attempt": attempt_number,
        "attempted_at": stamp,
        "status_code": result.status_code,
        "error": result.error,
        "latency_ms": result.latency_ms,
        "state": state,
        "next_retry_at": clock.to_iso(next_retry_at) if next_retry_at else None,
        "ttl": int((at + KEEP_LOG).timestamp()),
    }
    tables.client().put_item(TableName=tables.minds_table(), Item=tables.dump(item))


def list_deliveries(owner: str, mind_id: str, webhook_id: str, limit: int) -> list[dict[str, Any]]:
    """The most recent attempts first."""
    subscriptions.owned(owner, mind_id, webhook_id)
    items = next(
        tables.query_pages(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=tables.values(
                pk=f"MIND#{mind_id}", prefix=f"{tables.DELIVERY_PREFIX}{webhook_id}#"
            ),
            ScanIndexForward=False,
            Limit=limit,
        )
    )[0]
    return [{name: item.get(name) for name in _LOG_FIELDS} for item in items]
