"""How a subscription's deliveries fare: the last success, the last failure and its error, and
since when it has been failing.

A subscription that keeps failing (no success for 3 days while events are being delivered) is
disabled and says why (`disabled_reason`); re-enabling it with PATCH starts the count afresh.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from synapse.core import clock
from synapse.storage import tables
from synapse.webhooks import subscriptions

DISABLE_AFTER = timedelta(days=3)


def record_success(subscription: subscriptions.Subscription, at: datetime) -> None:
    """A delivery got through: the failure count starts afresh."""
    try:
        tables.client().update_item(
            TableName=tables.minds_table(),
            Key=tables.dump(tables.webhook_key(subscription.mind_id, subscription.id)),
            UpdateExpression="SET last_success_at = :now REMOVE failing_since",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues=tables.values(now=clock.to_iso(at)),
        )
    except tables.client().exceptions.ConditionalCheckFailedException:
        pass  # deleted meanwhile


def record_failure(
    subscription: subscriptions.Subscription, at: datetime, error: str
) -> subscriptions.Subscription | None:
    """Note a failed attempt; disable the subscription once it has failed for `DISABLE_AFTER`.

    Returns the subscription as it now stands (None if it was deleted meanwhile).
    """
    now = clock.to_iso(at)
    key = tables.dump(tables.webhook_key(subscription.mind_id, subscription.id))
    try:
        answer = tables.client().update_item(
            TableName=tables.minds_table(),
            Key=key,
            UpdateExpression=(
                "SET failing_since = if_not_exists(failing_since, :now), last_failure_at = :now, "
                "last_error = :error"
            ),
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues=tables.values(now=now, error=error[:300]),
            ReturnValues="ALL_NEW",
        )
    except tables.client().exceptions.ConditionalCheckFailedException:
        return None
    current = subscriptions.from_item(tables.load(answer["Attributes"]))
    since = current.failing_since or now
    if not current.enabled or clock.from_iso(since) > at - DISABLE_AFTER:
        return current
    reason = (
        f"Disabled after failing since {since} (more than {DISABLE_AFTER.days} days) "
        f"with no successful delivery; last error: {error[:200]}"
    )
    try:
        answer = tables.client().update_item(
            TableName=tables.minds_table(),
            Key=key,
            UpdateExpression="SET enabled = :off, disabled_reason = :reason, updated_at = :now",
            ConditionExpression="enabled = :on AND failing_since = :since",
            ExpressionAttributeValues=tables.values(off=False, on=True, reason=reason, now=now, since=since),
            ReturnValues="ALL_NEW",
        )
    except tables.client().exceptions.ConditionalCheckFailedException:
        return subscriptions.find(subscription.mind_id, subscription.id)
    return subscriptions.from_item(tables.load(answer["Attributes"]))
