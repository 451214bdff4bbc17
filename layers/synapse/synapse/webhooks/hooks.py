"""Inbound hooks, managed: agent platforms post memories to `POST /hooks/{hook_id}` (see `receive`).

A hook belongs to one mind. Its signing secret is shown once and kept sealed (`sealed`), because the
server must compute the same HMAC again; a rotation keeps the previous secret valid for a grace
period. The lookup item `HOOK#<id>` finds mind and secrets with one GetItem; the metadata item under
the mind (`MIND#<mind>` / `HOOK#<id>`) is what the owner lists.

Only the mind's owner (JWT) manages its hooks.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from synapse.core import clock
from synapse.core.errors import Conflict, NotFound
from synapse.core.ids import looks_like_id, new_id
from synapse.minds import audit, limits, minds
from synapse.storage import pages, tables
from synapse.teams import tenure
from synapse.webhooks import sealed, signing

HOOK_ID_PREFIX = "hook_"
SHOWN_SECRET_CHARS = 10
DEFAULT_GRACE_SECONDS = 24 * 3600
MAX_GRACE_SECONDS = 7 * 24 * 3600


def _bound(hook_id: str) -> str:
    """What a sealed secret is bound to: a secret copied onto another hook's item does not open."""
    return f"hook:{hook_id}"


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _public(item: dict[str, Any], base: str) -> dict[str, Any]:
    return {
        "id": item["id"],
        "url": f"{base}/hooks/{item['id']}",
        "label": item["label"],
        "secret_prefix": item["secret_prefix"],
        "created_at": item["created_at"],
        "rotated_at": item.get("rotated_at"),
        "previous_secret_valid_until": item.get("previous_secret_valid_until"),
        "last_delivery_at": item.get("last_delivery_at"),
    }


def _put(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "Put": {
            "TableName": tables.minds_table(),
            "Item": tables.dump(item),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }


def _audited(owner: str, mind_id: str, action: str, hook: dict[str, Any], **more: Any) -> dict[str, Any]:
    """The audit event of a change to a hook, for the change's own transaction."""
    target = {"hook_id": hook["id"], "label": hook["label"], **more}
    return audit.put_operation(mind_id, action, audit.by_user(owner), target)


# ---------------------------------------------------------------- management (JWT, owner only)


def create_hook(owner: str, mind_id: str, label: str, base: str = "") -> dict[str, Any]:
    """A new hook; its secret appears in this answer and never again.

    `base` is where the API answers (`https://host`), so the hook's URL is absolute; empty gives a
    relative one.
    """
    minds.get_mind(mind_id)
    hold = tenure.hold(mind_id, owner)  # the hook records its creator and ends with their tenure
    hook_id = new_id(HOOK_ID_PREFIX)
    secret = signing.new_secret()
    now = clock.to_iso(clock.now())
    item = {
        **tables.hook_key(mind_id, hook_id),
        "id": hook_id,
        "mind_id": mind_id,
        "label": label,
        "secret_prefix": secret[:SHOWN_SECRET_CHARS],
        "created_at": now,
        **hold.recorded,
    }
    lookup = {
        **tables.hook_lookup_key(hook_id),
        "hook_id": hook_id,
        "mind_id": mind_id,
        "secret": sealed.seal(secret, _bound(hook_id)),
        **hold.recorded,
    }
    event = _audited(owner, mind_id, "hook.created", item)
    held = [hold.operation] if hold.operation else []
    try:
        minds.transact_in_live_mind(
            mind_id, [_put(item), _put(lookup), event, *held], limits.hooks_of(mind_id), +1
        )
    except tables.client().exceptions.TransactionCanceledException:
        raise tenure.lost() from None
    return {**_public(item, base), "secret": secret}


def _hook_items(mind_id: str) -> list[dict[str, Any]]:
    return list(
        tables.query_all(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :hook)",
            ExpressionAttributeValues=tables.values(pk=f"MIND#{mind_id}", hook=tables.HOOK_PREFIX),
        )
    )


def list_hooks(
    owner: str, mind_id: str, base: str = "", limit: int = pages.DEFAULT_LIMIT, after: str | None = None
) -> pages.Page[dict[str, Any]]:
    """A page of the mind's hooks, in id order."""
    minds.get_mind(mind_id)
    page = pages.in_mind(mind_id, tables.HOOK_PREFIX, limit, after)
    return pages.Page([_public(item, base) for item in page.items], page.next_cursor)


def _owned_hook(owner: str, mind_id: str, hook_id: str) -> dict[str, Any]:
    minds.get_mind(mind_id)
    found = looks_like_id(HOOK_ID_PREFIX, hook_id)
    item = tables.get(tables.minds_table(), tables.hook_key(mind_id, hook_id)) if found else None
    if item is None:
        raise NotFound(f"No hook {hook_id[:80]!r} on this mind.")
    return item


def delete_hook(owner: str, mind_id: str, hook_id: str) -> None:
    """Revoke at once: the lookup goes, so the next delivery is a 401."""
    hook = _owned_hook(owner, mind_id, hook_id)
    operations = [
        {
            "Delete": {
                "TableName": tables.minds_table(),
                "Key": tables.dump(key),
                "ConditionExpression": "attribute_exists(pk)",  # a racing revocation counts once
            }
        }
        for key in (tables.hook_lookup_key(hook_id), tables.hook_key(mind_id, hook_id))
    ]
    operations.append(_audited(owner, mind_id, "hook.revoked", hook))
    try:
        minds.transact_in_live_mind(mind_id, operations, limits.hooks_of(mind_id), -1)
    except tables.client().exceptions.TransactionCanceledException:
        raise NotFound(f"No hook {hook_id[:80]!r} on this mind.") from None


def hook_keys_of_mind(mind_id: str) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The keys of the mind's hooks' (lookups, metadata items), for deleting the mind."""
    found = _hook_items(mind_id)
    return (
        [tables.hook_lookup_key(item["id"]) for item in found],
        [tables.hook_key(mind_id, item["id"]) for item in found],
    )


def rotate_secret(
    owner: str, mind_id: str, hook_id: str, grace_seconds: int, base: str = ""
) -> dict[str, Any]:
    """A new secret, shown once; the one it replaces stays valid for `grace_seconds`.

    Only the latest previous secret is kept: rotating again during a grace ends the older one.
    """
    hook = _owned_hook(owner, mind_id, hook_id)
    lookup = tables.get(tables.minds_table(), tables.hook_lookup_key(hook_id))
    if lookup is None:
        raise NotFound(f"No hook {hook_id[:80]!r} on this mind.")
    secret = signing.new_secret()
    now = clock.now()
    until = _epoch(now) + grace_seconds
    until_iso = clock.to_iso(datetime.fromtimestamp(until, now.tzinfo))
    try:
        tables.transact(
            [
                {
                    "Update": {
                        "TableName": tables.minds_table(),
                        "Key": tables.dump(tables.hook_lookup_key(hook_id)),
                        "UpdateExpression": "SET secret = :new, previous = :old, "
                        "previous_valid_until = :until",
                        "ConditionExpression": "secret = :old",
                        "ExpressionAttributeValues": tables.values(
                            new=sealed.seal(secret, _bound(hook_id)), old=lookup["secret"], until=until
                        ),
                    }
                },
                {
                    "Update": {
                        "TableName": tables.minds_table(),
                        "Key": tables.dump(tables.hook_key(mind_id, hook_id)),
                        "UpdateExpression": "SET rotated_at = :now, secret_prefix = :prefix, "
                        "previous_secret_valid_until = :until",
                        "ConditionExpression": "attribute_exists(pk)",
                        "ExpressionAttributeValues": tables.values(
                            now=clock.to_iso(now), prefix=secret[:SHOWN_SECRET_CHARS], until=until_iso
                        ),
                    }
                },
                _audited(owner, mind_id, "hook.rotated", hook, grace_seconds=grace_seconds),
            ]
        )
    except tables.client().exceptions.TransactionCanceledException:
        raise Conflict("The hook was rotated or revoked at the same moment; look again and retry.") from None
    item = tables.get(tables.minds_table(), tables.hook_key(mind_id, hook_id))
    if item is None:  # revoked the moment it was rotated
        raise NotFound(f"No hook {hook_id[:80]!r} on this mind.")
    return {**_public(item, base), "secret": secret}


# ---------------------------------------------------------------- what a delivery needs of its hook


def find_lookup(hook_id: str) -> dict[str, Any] | None:
    """The hook's lookup item (`hook_id`, `mind_id`, sealed secrets), or None for no such hook."""
    if not looks_like_id(HOOK_ID_PREFIX, hook_id):
        return None
    return tables.get(tables.minds_table(), tables.hook_lookup_key(hook_id))


def live_secrets(lookup: dict[str, Any], now: int) -> list[str]:
    """The secrets a delivery may be signed with at `now` (unix seconds): the current one, and the
    previous one while its grace lasts."""
    bound = _bound(lookup["hook_id"])
    live = [sealed.unseal(lookup["secret"], bound)]
    if lookup.get("previous") and now < int(lookup.get("previous_valid_until", 0)):
        live.append(sealed.unseal(lookup["previous"], bound))
    return live


def record_delivery(lookup: dict[str, Any]) -> None:
    """Record `last_delivery_at` on the hook's lookup (which the next delivery reads anyway) and on
    the listed hook, only when the lookup's copy is missing or older than a minute."""
    hook_id, mind_id = lookup["hook_id"], lookup["mind_id"]
    stamped = (tables.hook_lookup_key(hook_id), tables.hook_key(mind_id, hook_id))
    tables.stamp_if_stale(tables.minds_table(), stamped, "last_delivery_at", lookup.get("last_delivery_at"))
