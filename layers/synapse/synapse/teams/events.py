"""What a change of membership leaves behind, in the change's own transaction (`operations`): an
audit event, and the outbound webhook event of the same name (`member.*`, `invitation.*`) as an
event item in the mind's Memories partition (`memory.events.outbox_operation`).

Membership lives in the Minds table, which has no stream; the event item puts the event on the
Memories stream, where the webhook producer fans it out to subscriptions as it does a memory's. The
event is committed with the change or not at all: neither can be had without the other.
"""

from __future__ import annotations

from typing import Any

from synapse.core import clock
from synapse.core.ids import new_id
from synapse.memory import events
from synapse.minds import audit


class Announcement:
    """One membership event: its audit entry and its webhook event, written with the change."""

    def __init__(self, mind_id: str, action: str, actor: str, target: dict[str, Any]) -> None:
        self.mind_id, self.action, self.target = mind_id, action, target
        self.by = audit.by_user(actor)
        self.cause = new_id("chg_")
        self.at = clock.to_iso(clock.now())

    def change(self) -> events.Change:
        return events.Change(self.action, self.mind_id, self.cause, self.at, {**self.target, "by": self.by})

    def operations(self) -> list[dict[str, Any]]:
        """The transaction operations that record it in the mind's audit and on its event stream."""
        audited = audit.put_operation(self.mind_id, self.action, self.by, self.target)
        return [audited, events.outbox_operation(self.change())]
