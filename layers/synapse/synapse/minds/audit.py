"""The audit of a mind's credentials and settings: who created or revoked a key, a hook or a webhook,
renamed the mind or changed a setting, and when.

An event is an append-only item under the mind (`MIND#<mind>` / `AUDIT#<at>#<id>`), written by the
caller in the same transaction as the change it records (`put_operation`), so there is never a
change without its event nor an event without its change. Events carry `ttl` and DynamoDB removes
them after RETENTION; deleting the mind removes them at once (`delete_all`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from synapse.core import clock
from synapse.core.ids import new_id
from synapse.storage import pages, tables

PREFIX = "AUDIT#"
RETENTION = timedelta(days=90)
ACTIONS = frozenset(
    {
        "key.created",
        "key.revoked",
        "hook.created",
        "hook.rotated",
        "hook.revoked",
        "webhook.created",
        "webhook.updated",
        "webhook.deleted",
        "mind.renamed",
        "mind.settings_changed",
        "grant.created",
        "grant.revoked",
        "member.invited",
        "member.joined",
        "member.role_changed",
        "member.removed",
        "member.left",
        "member.ownership_transferred",
        "invitation.revoked",
        "invitation.declined",
    }
)


def by_user(user_id: str) -> dict[str, str]:
    """The `by` of a change a person made (every audited change is: credentials and members are JWT
    only): the acting person, whichever member of the mind they are."""
    return {"source": "user", "user_id": user_id}


def put_operation(mind_id: str, action: str, by: dict[str, str], target: dict[str, Any]) -> dict[str, Any]:
    """The transaction operation that records `action` on `target` by `by`, now."""
    assert action in ACTIONS, action
    moment = clock.now()
    at = clock.to_iso(moment)
    event_id = new_id("aud_")
    item = {
        "pk": f"MIND#{mind_id}",
        "sk": f"{PREFIX}{at}#{event_id}",
        "id": event_id,
        "action": action,
        "at": at,
        "by": by,
        "target": target,
        "ttl": int((moment + RETENTION).timestamp()),
    }
    return {
        "Put": {
            "TableName": tables.minds_table(),
            "Item": tables.dump(item),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


def public(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item["id"],
        "action": item["action"],
        "at": item["at"],
        "by": item["by"],
        "target": item["target"],
    }


def _position(mind_id: str) -> pages.Position:
    partition = f"MIND#{mind_id}"

    def start_key(position: dict[str, Any]) -> dict[str, str] | None:
        sort_key = position["sk"]
        fits = isinstance(sort_key, str) and sort_key.startswith(PREFIX) and len(sort_key) > len(PREFIX)
        return {"pk": partition, "sk": sort_key} if fits else None

    return pages.Position(("sk",), start_key)


def list_events(mind_id: str, limit: int, after: str | None) -> pages.Page[dict[str, Any]]:
    """A page of the mind's audit events, newest first. Ownership is the caller's check."""
    params = {
        "TableName": tables.minds_table(),
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
        "ExpressionAttributeValues": tables.values(pk=f"MIND#{mind_id}", prefix=PREFIX),
        "ScanIndexForward": False,
        "ConsistentRead": True,
    }
    page = pages.read(params, mind_id, "audit", limit, after, _position(mind_id))
    return pages.Page([public(item) for item in page.items], page.next_cursor)


def delete_all(mind_id: str) -> None:
    """Every audit event of a mind (deleting the mind)."""
    found = tables.query_all(
        TableName=tables.minds_table(),
        KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues=tables.values(pk=f"MIND#{mind_id}", prefix=PREFIX),
        ProjectionExpression="pk, sk",
    )
    tables.batch_delete(tables.minds_table(), [{"pk": item["pk"], "sk": item["sk"]} for item in found])
