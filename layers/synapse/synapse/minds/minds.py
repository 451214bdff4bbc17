"""Minds and their Mind Keys.

A Mind Key is shown once; only HMAC-SHA256(pepper, key) is stored, under a lookup item keyed by
that hash, so the authorizer finds a key with one GetItem and never holds a plain secret at rest.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from synapse.auth import auth
from synapse.core import clock
from synapse.core.errors import NotFound
from synapse.memory import store
from synapse.memory.model import looks_like_id, new_id
from synapse.storage import tables

KEY_PREFIX_CHARS = 10
LAST_USED_RESOLUTION = timedelta(seconds=60)


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


def _key_public(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item["id"],
        "label": item["label"],
        "prefix": item["prefix"],
        "created_at": item["created_at"],
        "last_used_at": item.get("last_used_at"),
    }


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


def _same(stored: str, presented: str) -> bool:
    """Constant-time equality of two owners (JWT subs), which need not be ASCII."""
    return secrets.compare_digest(stored.encode(), presented.encode())


def owned_mind(owner: str, mind_id: str) -> Mind:
    """A mind the user owns; another user's mind answers 404 exactly like a missing one."""
    mind = get_mind(mind_id)
    if not _same(mind.owner, owner):
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


def _key_operations(mind_id: str, label: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    secret = auth.new_mind_key()
    digest = auth.hash_mind_key(secret)
    key_id = new_id("key_")
    now = clock.to_iso(clock.now())
    item = {
        **tables.mind_key_item_key(mind_id, key_id),
        "id": key_id,
        "label": label,
        "prefix": secret[:KEY_PREFIX_CHARS],
        "hash": digest,
        "created_at": now,
    }
    lookup = {**tables.key_hash_key(digest), "hash": digest, "mind_id": mind_id, "key_id": key_id}
    ops = [
        {
            "Put": {
                "TableName": tables.minds_table(),
                "Item": tables.dump(item),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        },
        {
            "Put": {
                "TableName": tables.minds_table(),
                "Item": tables.dump(lookup),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        },
    ]
    shown = {"id": key_id, "key": secret, "label": label, "created_at": now}
    return ops, shown


def create_mind(owner: str, name: str) -> tuple[Mind, dict[str, Any]]:
    """A mind and its first Mind Key, in one transaction."""
    now = clock.to_iso(clock.now())
    mind = Mind(id=new_id("m_"), name=name, owner=owner, created_at=now, updated_at=now, memory_count=0)
    item = {**tables.mind_key(mind.id), **mind.public(), "owner": owner}
    key_ops, shown_key = _key_operations(mind.id, "default")
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


def _key_items(mind_id: str) -> list[dict[str, Any]]:
    return list(
        tables.query_all(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :key)",
            ExpressionAttributeValues=tables.values(pk=f"MIND#{mind_id}", key="KEY#"),
        )
    )


def _delete_keys(mind_id: str) -> None:
    """Lookups (what authenticates) before the listed items (what a DELETE sent again finds)."""
    keys = _key_items(mind_id)
    tables.batch_delete(tables.minds_table(), [tables.key_hash_key(key["hash"]) for key in keys])
    tables.batch_delete(tables.minds_table(), [tables.mind_key_item_key(mind_id, key["id"]) for key in keys])


def delete_mind(owner: str, mind_id: str) -> None:
    """The mind first (memory writes and new keys need it, and the search indexer takes its absence
    as the order to drop the index), then its keys, then every memory item.

    A tombstone naming the owner outlives the mind until the purge is done, so a DELETE cut short
    (say a Lambda timeout on a large mind) can be sent again and finishes the job instead of
    leaving memories nobody can reach.
    """
    tombstone = tables.mind_tombstone_key(mind_id)
    try:
        owned_mind(owner, mind_id)
    except NotFound:
        left = tables.get(tables.minds_table(), tombstone) if looks_like_id("m_", mind_id) else None
        if left is None or not _same(str(left.get("deleted_by", "")), owner):
            raise
    else:
        marker = {**tombstone, "deleted_by": owner, "deleted_at": clock.to_iso(clock.now())}
        tables.client().put_item(TableName=tables.minds_table(), Item=tables.dump(marker))
        tables.batch_delete(tables.minds_table(), [tables.mind_key(mind_id)])
    _delete_keys(mind_id)
    from synapse.webhooks import hooks  # late import: both import this module
    from synapse.webhooks import subscriptions as webhooks

    lookups, listed = hooks.hook_keys_of_mind(mind_id)
    tables.batch_delete(tables.minds_table(), lookups)  # first, like the keys' lookups
    tables.batch_delete(tables.minds_table(), listed)
    # Webhooks stay to deliver the purge's memory.deleted events, then TTL removes them: set here
    # too, since a mind without memories sends no event through the stream that would set it.
    webhooks.expire_orphans(mind_id, webhooks.list_subscriptions(mind_id), clock.now())
    store.purge_mind(mind_id)
    tables.batch_delete(tables.minds_table(), [tombstone])


# ---------------------------------------------------------------- keys


def create_key(owner: str, mind_id: str, label: str) -> dict[str, Any]:
    owned_mind(owner, mind_id)
    ops, shown = _key_operations(mind_id, label)
    transact_in_live_mind(mind_id, ops)
    return shown


def list_keys(owner: str, mind_id: str) -> list[dict[str, Any]]:
    owned_mind(owner, mind_id)
    return [_key_public(item) for item in _key_items(mind_id)]


def revoke_key(owner: str, mind_id: str, key_id: str) -> None:
    owned_mind(owner, mind_id)
    found = looks_like_id("key_", key_id)
    item = tables.get(tables.minds_table(), tables.mind_key_item_key(mind_id, key_id)) if found else None
    if item is None:
        raise NotFound(f"No key {key_id[:80]!r} on this mind.")
    tables.delete_together(
        tables.minds_table(), [tables.key_hash_key(item["hash"]), tables.mind_key_item_key(mind_id, key_id)]
    )


def resolve_key(presented: str) -> tuple[str, str] | None:
    """(mind id, key id) for a live Mind Key, else None. Records last_used_at at most once a minute."""
    digest = auth.hash_mind_key(presented)
    lookup = tables.get(tables.minds_table(), tables.key_hash_key(digest))
    if lookup is None or not secrets.compare_digest(lookup.get("hash", ""), digest):
        return None
    _touch(lookup["mind_id"], lookup["key_id"])
    return lookup["mind_id"], lookup["key_id"]


def _touch(mind_id: str, key_id: str) -> None:
    now = clock.now()
    tables.stamp_at_most_every(
        tables.minds_table(),
        tables.mind_key_item_key(mind_id, key_id),
        "last_used_at",
        now=clock.to_iso(now),
        stale=clock.to_iso(now - LAST_USED_RESOLUTION),
    )
