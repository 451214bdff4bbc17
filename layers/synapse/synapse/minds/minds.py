"""Minds: create, read, rename, and the owner checks every mind-scoped operation starts with.

A foreign mind answers exactly like a missing one (404). Key operations check ownership here and
leave the key items to `minds.keys`; deleting a mind with everything in it is `lifecycle`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from synapse.core import clock
from synapse.core.errors import NotFound
from synapse.core.ids import looks_like_id, new_id
from synapse.minds import keys
from synapse.storage import tables


@dataclass(frozen=True)
class Mind:
    id: str
    name: str
    owner: str
    created_at: str
    updated_at: str
    memory_count: int

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "memory_count": self.memory_count,
        }


def _mind_from_item(item: dict[str, Any]) -> Mind:
    return Mind(
        id=item["id"],
        name=item["name"],
        owner=item["owner"],
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        memory_count=int(item.get("memory_count", 0)),
    )


# ---------------------------------------------------------------- minds


def mind_exists_check(mind_id: str) -> dict[str, Any]:
    """A transaction operation that holds only while the mind exists."""
    return {
        "ConditionCheck": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(tables.mind_key(mind_id)),
            "ConditionExpression": "attribute_exists(pk)",
        }
    }


def transact_in_live_mind(mind_id: str, operations: list[dict[str, Any]]) -> None:
    """Commit `operations` only while the mind exists, so nothing written can outlive a deleted
    mind (a key, a hook, a webhook). 404 if it is gone; other cancellations are raised as they are.
    """
    try:
        tables.transact([mind_exists_check(mind_id), *operations])
    except tables.client().exceptions.TransactionCanceledException as error:
        if tables.cancellation_codes(error)[:1] == ["ConditionalCheckFailed"]:
            raise NotFound(f"No mind {mind_id!r}.") from None
        raise


def get_mind(mind_id: str) -> Mind:
    item = (
        tables.get(tables.minds_table(), tables.mind_key(mind_id)) if looks_like_id("m_", mind_id) else None
    )
    if item is None:
        raise NotFound(f"No mind {mind_id[:80]!r}.")
    return _mind_from_item(item)


def same_owner(stored: str, presented: str) -> bool:
    """Constant-time equality of two owners (JWT subs), which need not be ASCII."""
    return secrets.compare_digest(stored.encode(), presented.encode())


def owned_mind(owner: str, mind_id: str) -> Mind:
    """A mind the user owns; another user's mind answers 404 exactly like a missing one."""
    mind = get_mind(mind_id)
    if not same_owner(mind.owner, owner):
        raise NotFound(f"No mind {mind_id[:80]!r}.")
    return mind


def list_minds(owner: str) -> list[Mind]:
    return [
        _mind_from_item(item)
        for item in tables.query_all(
            TableName=tables.minds_table(),
            IndexName="owner",
            KeyConditionExpression="#owner = :owner",
            ExpressionAttributeNames={"#owner": "owner"},
            ExpressionAttributeValues=tables.values(owner=owner),
        )
    ]


def create_mind(owner: str, name: str) -> tuple[Mind, dict[str, Any]]:
    """A mind and its first Mind Key, in one transaction."""
    now = clock.to_iso(clock.now())
    mind = Mind(id=new_id("m_"), name=name, owner=owner, created_at=now, updated_at=now, memory_count=0)
    item = {**tables.mind_key(mind.id), **mind.public(), "owner": owner}
    key_ops, shown_key = keys.issue_operations(mind.id, "default")
    tables.transact(
        [
            {
                "Put": {
                    "TableName": tables.minds_table(),
                    "Item": tables.dump(item),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            *key_ops,
        ]
    )
    return mind, shown_key


def rename_mind(owner: str, mind_id: str, name: str) -> Mind:
    owned_mind(owner, mind_id)
    try:
        answer = tables.client().update_item(
            TableName=tables.minds_table(),
            Key=tables.dump(tables.mind_key(mind_id)),
            UpdateExpression="SET #name = :name, updated_at = :now",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={"#name": "name"},
            ExpressionAttributeValues=tables.values(name=name, now=clock.to_iso(clock.now())),
            ReturnValues="ALL_NEW",
        )
    except tables.client().exceptions.ConditionalCheckFailedException:
        raise NotFound(f"No mind {mind_id!r}.") from None  # deleted since we looked
    return _mind_from_item(tables.load(answer["Attributes"]))


# ---------------------------------------------------------------- keys, for the mind's owner


def create_key(owner: str, mind_id: str, label: str) -> dict[str, Any]:
    owned_mind(owner, mind_id)
    ops, shown = keys.issue_operations(mind_id, label)
    transact_in_live_mind(mind_id, ops)
    return shown


def list_keys(owner: str, mind_id: str) -> list[dict[str, Any]]:
    owned_mind(owner, mind_id)
    return [keys.public(item) for item in keys.key_items(mind_id)]


def revoke_key(owner: str, mind_id: str, key_id: str) -> None:
    owned_mind(owner, mind_id)
    keys.revoke(mind_id, key_id)
