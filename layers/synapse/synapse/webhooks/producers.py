"""Producers of webhook events: they only enqueue one message per (subscription, event), so a slow
or dead receiver never slows a write. Delivering is `delivery`'s work.

- `publish_stream`: the Memories table's stream → memory.created / updated / verified / deleted.
- `publish_expiring`: hourly, memory.expiring for memories expiring within 24 h, once per memory
  and expiry time (a conditional marker per pair).

Each sends only to the subscriptions whose creator still holds the tenure they made them in
(`subscriptions.sending`): checked once per mind and creator per invocation, so a removed or
demoted owner's webhook gets nothing even before its revocation is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from synapse.core import clock
from synapse.core.observability import COUNT, logger, metrics
from synapse.memory import event_names, events, expiring_reads
from synapse.storage import pages, tables
from synapse.webhooks import delivery_queue, subscriptions

EXPIRING_AHEAD = timedelta(hours=24)
# How long a "memory.expiring sent" marker outlives the expiry time it names.
MARKER_KEPT = timedelta(days=2)


def _message(subscription_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "subscription_id": subscription_id,
        "mind_id": payload["mind_id"],
        "event": payload,
        "attempt": 1,
        "first_attempt_at": None,
        "not_before": None,
    }


def _enqueue(change: events.Change, wanting: Iterable[subscriptions.Subscription]) -> int:
    sent = 0
    target = delivery_queue.current()
    for subscription in wanting:
        if subscription.wants(change.type):
            message = _message(subscription.id, change.payload(subscription.id))
            target.send(json.dumps(message, ensure_ascii=False, separators=(",", ":")), 0)
            sent += 1
    return sent


# ---------------------------------------------------------------- the stream


def publish_stream(records: list[dict[str, Any]]) -> list[str]:
    """Enqueue the events of a batch of Memories stream records, in order.

    Returns the sequence number of the first record that failed (Lambda retries the batch from
    there; the event ids are stable, so a receiver can drop what it already got), or nothing.
    """
    found: dict[str, list[subscriptions.Subscription]] = {}  # each mind's that may send
    checked_alive: set[str] = set()
    queued = 0
    for record in records:
        try:
            for change in events.from_stream_record(record):
                if change.mind_id not in found:
                    listed = subscriptions.list_subscriptions(change.mind_id)
                    found[change.mind_id] = subscriptions.sending(listed)
                wanting = found[change.mind_id]
                queued += _enqueue(change, wanting)
                if change.type == event_names.DELETED and wanting and change.mind_id not in checked_alive:
                    checked_alive.add(change.mind_id)
                    if tables.get(tables.minds_table(), tables.mind_key(change.mind_id)) is None:
                        subscriptions.expire_orphans(change.mind_id, wanting, clock.now())
        except Exception:
            logger.exception(
                "webhook events: a stream record failed", extra={"event_id": record.get("eventID")}
            )
            metrics.add_metric(name="WebhookEventsQueued", unit=COUNT, value=queued)
            return [str(record["dynamodb"]["SequenceNumber"])]
    metrics.add_metric(name="WebhookEventsQueued", unit=COUNT, value=queued)
    return []


# ---------------------------------------------------------------- memory.expiring


def claim_expiry(mind_id: str, memory_id: str, expires_at: str) -> bool:
    """True once per (memory, expiry time): the caller then sends memory.expiring."""
    ttl = int((clock.from_iso(expires_at) + MARKER_KEPT).timestamp())
    marker = {**tables.expiry_sent_key(mind_id, memory_id, expires_at), "ttl": ttl}
    try:
        tables.client().put_item(
            TableName=tables.minds_table(),
            Item=tables.dump(marker),
            ConditionExpression="attribute_not_exists(pk)",
        )
    except tables.client().exceptions.ConditionalCheckFailedException:
        return False
    return True


def release_expiry(mind_id: str, memory_id: str, expires_at: str) -> None:
    """Undo a claim whose events could not be queued, so the next run tries again."""
    tables.client().delete_item(
        TableName=tables.minds_table(),
        Key=tables.dump(tables.expiry_sent_key(mind_id, memory_id, expires_at)),
    )


def publish_expiring(at: datetime | None = None) -> dict[str, int]:
    """memory.expiring, once per memory and expiry time, for memories expiring within 24 h.

    The minds come from the registry (no scan), each mind's memories from the `expiring` index.
    A conditional marker per (memory, expiry time) makes a second run, or an overlapping one, send
    nothing twice; a marker whose events could not be queued is released for the next run.
    """
    moment = at or clock.now()
    tally = {"minds": 0, "memories": 0, "messages": 0, "failed_minds": 0}
    for mind_id in subscriptions.minds_wanting_expiring():
        try:
            listed = subscriptions.list_subscriptions(mind_id)
            wanting = subscriptions.sending([s for s in listed if s.wants(event_names.EXPIRING)])
            if not wanting:
                continue
            tally["minds"] += 1
            after: str | None = None
            while True:
                page = expiring_reads.expiring(mind_id, EXPIRING_AHEAD, pages.MAX_LIMIT, after, at=moment)
                for memory in page.memories:
                    assert memory.expires_at is not None
                    if not claim_expiry(mind_id, memory.id, memory.expires_at):
                        continue
                    try:
                        change = events.expiring(mind_id, memory.public(moment), moment)
                        tally["messages"] += _enqueue(change, wanting)
                    except Exception:
                        release_expiry(mind_id, memory.id, memory.expires_at)
                        raise
                    tally["memories"] += 1
                if not page.next_cursor:
                    break
                after = page.next_cursor
        except Exception:
            tally["failed_minds"] += 1
            logger.exception(
                "memory.expiring: a mind failed; the next run tries again", extra={"mind": mind_id}
            )
    return tally
