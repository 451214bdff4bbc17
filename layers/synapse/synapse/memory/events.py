"""What happened to a mind, as outbound webhook events.

Events come from the Memories table's stream, not from the handlers, so every write path emits
them (store, replace by key, update, verify, delete, mind deletion's purge). One stream record of a
memory item (sort key `MEM#…`) becomes:

    INSERT                         → memory.created
    MODIFY                         → memory.updated, and memory.verified when `verified` turns true
    REMOVE                         → memory.deleted

A MODIFY that keeps the version only marks or unmarks a pending proposal: no memory event. A
proposal item (`PROP#…`) becomes proposal.created (INSERT) and proposal.accepted / rejected (MODIFY
from pending); its data is `{"proposal": …, "memory": …}` (the memory as the proposal keeps it).
An event item (`EVENT#…`, `outbox_operation`) becomes the event it holds (INSERT): a change made
outside this table (membership, in the Minds table, which has no stream) puts one in its own
transaction, so its event is as durable as the change; DynamoDB's TTL removes it a day later.
Revisions (`REV#…`) and every other item make no event.

`memory.expiring` comes from the hourly scheduled function (see `webhooks.expiring_changes`), and
`ping` from `POST …/webhooks/{id}/test`.

An event id is derived from what caused the event (the stream record's id, or memory id and expiry
time) and the subscription, so a replayed stream record or a second scheduler run yields the same
id and receivers can deduplicate on it.
"""

import hashlib
from datetime import UTC, datetime
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.memory.event_names import (
    CREATED,
    DELETED,
    EXPIRING,
    PING,
    PROPOSAL_ACCEPTED,
    PROPOSAL_CREATED,
    PROPOSAL_REJECTED,
    SUPERSEDED,
    UPDATED,
    VERIFIED,
)
from synapse.memory.items import memory_from_item
from synapse.storage import tables

_DECIDED = {"accepted": PROPOSAL_ACCEPTED, "rejected": PROPOSAL_REJECTED}
EVENT_PREFIX = "EVENT#"
EVENT_KEPT_SECONDS = 24 * 3600  # an event item's TTL: the stream has it within seconds


class Change(NamedTuple):
    """One event before it fans out to subscriptions: `cause` makes its id unique and stable."""

    type: str
    mind_id: str
    cause: str
    created_at: str
    data: dict[str, Any]

    def event_id(self, subscription_id: str) -> str:
        digest = hashlib.sha256(f"{self.cause}\n{self.type}\n{subscription_id}".encode()).hexdigest()
        return f"evt_{digest[:32]}"

    def payload(self, subscription_id: str) -> dict[str, Any]:
        """The JSON body a receiver gets."""
        return {
            "id": self.event_id(subscription_id),
            "type": self.type,
            "created_at": self.created_at,
            "mind_id": self.mind_id,
            "data": self.data,
        }


def _public(image: dict[str, Any], at: datetime) -> dict[str, Any]:
    return memory_from_item(tables.load(image)).public(at)


def _record_time(body: dict[str, Any]) -> datetime:
    moment = body.get("ApproximateCreationDateTime")
    if isinstance(moment, int | float) and not isinstance(moment, bool):
        return datetime.fromtimestamp(moment, UTC)
    return clock.now()


def _sort_key(record: dict[str, Any]) -> str:
    sk = ((record.get("dynamodb") or {}).get("Keys") or {}).get("sk") or {}
    return str(sk.get("S", ""))


def is_memory_record(record: dict[str, Any]) -> bool:
    return _sort_key(record).startswith(tables.MEMORY_PREFIX)


def _proposal_changes(record: dict[str, Any]) -> list[Change]:
    from synapse.memory import proposals  # on first use: see `from_stream_record`

    body = record["dynamodb"]
    new = tables.load(body.get("NewImage") or {})
    if not new:
        return []
    old = tables.load(body.get("OldImage") or {})
    name = record.get("eventName")
    if name == "INSERT" and new.get("status") == proposals.Status.PENDING.value:
        kind = PROPOSAL_CREATED
    elif (
        name == "MODIFY" and old.get("status") == proposals.Status.PENDING.value and new["status"] in _DECIDED
    ):
        kind = _DECIDED[new["status"]]
    else:
        return []
    at = _record_time(body)
    data = {"proposal": proposals.public(new), "memory": proposals.memory_of(new).public(at)}
    cause = f"stream:{record.get('eventID') or body.get('SequenceNumber')}"
    return [Change(kind, str(new["pk"]), cause, clock.to_iso(at), data)]


def outbox_operation(change: Change) -> dict[str, Any]:
    """The transaction operation that puts `change` in the mind's partition as an event item, for
    the stream to carry to the webhook producer (a second put of the same cause is refused)."""
    item = {
        "pk": change.mind_id,
        "sk": EVENT_PREFIX + change.cause,
        "type": change.type,
        "created_at": change.created_at,
        "data": change.data,
        "ttl": int(clock.now().timestamp()) + EVENT_KEPT_SECONDS,
    }
    return {
        "Put": {
            "TableName": tables.memories_table(),
            "Item": tables.dump(item),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


def _event_item_changes(record: dict[str, Any]) -> list[Change]:
    new = tables.load((record.get("dynamodb") or {}).get("NewImage") or {})
    if record.get("eventName") != "INSERT" or not new:
        return []  # its removal by TTL is no event
    cause = str(new["sk"])[len(EVENT_PREFIX) :]
    return [Change(str(new["type"]), str(new["pk"]), cause, str(new["created_at"]), dict(new["data"]))]


def from_stream_record(record: dict[str, Any]) -> list[Change]:
    """The events one stream record means; none for items that are neither memories, proposals nor
    event items. Proposals (and through them the write path and the body rules) are imported
    here, by the stream's reader: the membership and webhook handlers that only write an event item
    (`outbox_operation`) or ping (`ping`) do not load them at cold start (issue 35)."""
    from synapse.memory import proposals

    if _sort_key(record).startswith(proposals.PROPOSAL_PREFIX):
        return _proposal_changes(record)
    if _sort_key(record).startswith(EVENT_PREFIX):
        return _event_item_changes(record)
    if not is_memory_record(record):
        return []
    body = record["dynamodb"]
    at = _record_time(body)
    stamp = clock.to_iso(at)
    mind_id = str(body["Keys"]["pk"]["S"])
    cause = f"stream:{record.get('eventID') or body.get('SequenceNumber')}"
    name = record.get("eventName")
    new = body.get("NewImage")
    old = body.get("OldImage")
    if name == "INSERT" and new:
        return [Change(CREATED, mind_id, cause, stamp, {"memory": _public(new, at)})]
    if name == "REMOVE" and old:
        return [Change(DELETED, mind_id, cause, stamp, {"memory": _public(old, at)})]
    if name == "MODIFY" and new:
        if old and new.get("version") == old.get("version"):
            return []  # a proposal's mark, set or cleared: the memory itself did not change
        data: dict[str, Any] = {"memory": _public(new, at)}
        if old:
            data["previous"] = _public(old, at)
        changes = [Change(UPDATED, mind_id, cause, stamp, data)]
        if data["memory"]["verified"] and not (old and data["previous"]["verified"]):
            changes.append(Change(VERIFIED, mind_id, cause, stamp, data))
        replaced_by = data["memory"]["superseded_by"]
        if replaced_by and not (old and data["previous"]["superseded_by"] == replaced_by):
            changes.append(Change(SUPERSEDED, mind_id, cause, stamp, data))
        return changes
    return []


def expiring(mind_id: str, memory: dict[str, Any], at: datetime) -> Change:
    """`memory.expiring` for one memory and its expiry time (a new expiry time is a new event)."""
    cause = f"expiring:{memory['id']}:{memory['expires_at']}"
    return Change(EXPIRING, mind_id, cause, clock.to_iso(at), {"memory": memory})


def ping(mind_id: str, at: datetime, nonce: str) -> Change:
    return Change(PING, mind_id, f"ping:{nonce}", clock.to_iso(at), {"message": "Synapse webhook test"})
