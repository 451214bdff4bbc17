"""What a change of membership leaves behind: an audit event, written in the change's own
transaction (`audited`), and the outbound webhook event of the same name (`member.*`,
`invitation.*`), queued once the change is committed (`announce`).

Membership lives in the Minds table, which has no stream: the request that changed it enqueues the
event itself, one message per subscription that wants it, as the stream consumer does for memories.
A queue that fails loses the event (logged and counted), never the change; the audit keeps it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from synapse.core import clock
from synapse.core.ids import new_id
from synapse.core.observability import logger, metrics
from synapse.minds import audit
from synapse.webhooks import delivery_queue, subscriptions


class Announcement:
    """One membership event: its audit operation now, its webhook event after the commit."""

    def __init__(self, mind_id: str, action: str, actor: str, target: dict[str, Any]) -> None:
        self.mind_id, self.action, self.target = mind_id, action, target
        self.by = audit.by_user(actor)
        self.cause = new_id("chg_")
        self.at = clock.to_iso(clock.now())

    def audited(self) -> dict[str, Any]:
        """The transaction operation that records it in the mind's audit."""
        return audit.put_operation(self.mind_id, self.action, self.by, self.target)

    def payload(self, subscription_id: str) -> dict[str, Any]:
        digest = hashlib.sha256(f"{self.cause}\n{self.action}\n{subscription_id}".encode()).hexdigest()
        return {
            "id": f"evt_{digest[:32]}",
            "type": self.action,
            "created_at": self.at,
            "mind_id": self.mind_id,
            "data": {**self.target, "by": self.by},
        }


def announce(*announcements: Announcement) -> None:
    """Queue each committed change's webhook event for the mind's subscriptions that want it."""
    for event in announcements:
        try:
            queued = _enqueue(event)
        except Exception:
            logger.exception("membership event not queued", extra={"action": event.action})
            metrics.add_metric(name="MembershipEventsLost", unit=MetricUnit.Count, value=1)
            continue
        metrics.add_metric(name="WebhookEventsQueued", unit=MetricUnit.Count, value=queued)


def _enqueue(event: Announcement) -> int:
    sent = 0
    for subscription in subscriptions.list_subscriptions(event.mind_id):
        if subscription.wants(event.action):
            message = {
                "subscription_id": subscription.id,
                "mind_id": event.mind_id,
                "event": event.payload(subscription.id),
                "attempt": 1,
                "first_attempt_at": None,
                "not_before": None,
            }
            delivery_queue.current().send(json.dumps(message, ensure_ascii=False, separators=(",", ":")), 0)
            sent += 1
    return sent
