"""Mind Keys: the credential an agent holds for one mind.

A Mind Key is shown once; only HMAC-SHA256(pepper, key) is stored, under a lookup item keyed by
that hash, so the authorizer finds a key with one GetItem and never holds a plain secret at rest.
Ownership is checked by the callers in `minds.minds`; this module knows only mind ids.
"""

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.ids import looks_like_id, new_id
from synapse.core.settings import get_settings
from synapse.storage import tables

MIND_KEY_PREFIX = "mk_"
KEY_PREFIX_CHARS = 10  # how much of a key its listing shows, so a person can tell keys apart
SCOPES = ("read", "write", "delete")  # in the order listings show them
ALL_SCOPES = frozenset(SCOPES)  # a key created without scopes, or before keys had any


def new_mind_key() -> str:
    return MIND_KEY_PREFIX + secrets.token_urlsafe(32)


def hash_mind_key(key: str) -> str:
    """HMAC-SHA256 under the server-side pepper: a leaked table does not reveal or verify keys."""
    return hmac.new(get_settings().key_pepper, key.encode(), hashlib.sha256).hexdigest()


def public(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item["id"],
        "label": item["label"],
        "prefix": item["prefix"],
        "scopes": scopes_of(item),
        "created_at": item["created_at"],
        "last_used_at": item.get("last_used_at"),
    }


def scopes_of(item: dict[str, Any]) -> list[str]:
    """A key's scopes in listing order; a key made before keys had scopes may do everything."""
    held = item.get("scopes")
    return list(SCOPES) if held is None else [scope for scope in SCOPES if scope in held]


def issue_operations(
    mind_id: str, label: str, scopes: Iterable[str] = SCOPES, creator: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The transaction operations that create a key (its item and its hash lookup, both holding its
    scopes and `creator`: who made it and in which tenure, `minds.tenure`), and the answer that
    shows the secret this one time."""
    held = [scope for scope in SCOPES if scope in set(scopes)]
    secret = new_mind_key()
    digest = hash_mind_key(secret)
    key_id = new_id("key_")
    now = clock.to_iso(clock.now())
    item = {
        **tables.mind_key_item_key(mind_id, key_id),
        "id": key_id,
        "label": label,
        "prefix": secret[:KEY_PREFIX_CHARS],
        "hash": digest,
        "scopes": held,
        "created_at": now,
        **(creator or {}),
    }
    lookup = {
        **tables.key_hash_key(digest),
        "hash": digest,
        "mind_id": mind_id,
        "key_id": key_id,
        "scopes": held,
        **(creator or {}),
    }
    ops = [
        {
            "Put": {
                "TableName": tables.minds_table(),
                "Item": tables.dump(new_item),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        for new_item in (item, lookup)
    ]
    shown = {"id": key_id, "key": secret, "label": label, "scopes": held, "created_at": now}
    return ops, shown


def key_items(mind_id: str) -> list[dict[str, Any]]:
    return list(
        tables.query_all(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :key)",
            ExpressionAttributeValues=tables.values(pk=f"MIND#{mind_id}", key="KEY#"),
        )
    )


def delete_all(mind_id: str) -> None:
    """Lookups (what authenticates) before the listed items (what a DELETE sent again finds)."""
    keys = key_items(mind_id)
    tables.batch_delete(tables.minds_table(), [tables.key_hash_key(key["hash"]) for key in keys])
    tables.batch_delete(tables.minds_table(), [tables.mind_key_item_key(mind_id, key["id"]) for key in keys])


def find(mind_id: str, key_id: str) -> dict[str, Any] | None:
    """A key's listed item, or None (also for anything that is not a key id)."""
    if not looks_like_id("key_", key_id):
        return None
    return tables.get(tables.minds_table(), tables.mind_key_item_key(mind_id, key_id))


def revoke_operations(mind_id: str, item: dict[str, Any]) -> list[dict[str, Any]]:
    """Transaction operations deleting a key: its lookup (what authenticates) and its listed item,
    all or none, each only if still there (a revocation racing another must not count twice)."""
    return [
        {
            "Delete": {
                "TableName": tables.minds_table(),
                "Key": tables.dump(key),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
        for key in (tables.key_hash_key(item["hash"]), tables.mind_key_item_key(mind_id, item["id"]))
    ]


class ResolvedKey(NamedTuple):
    mind_id: str
    key_id: str
    scopes: frozenset[str]
    created_by: str | None = None  # None: a key from before creators were recorded
    tenure: str | None = None


def resolve_key(presented: str) -> ResolvedKey | None:
    """The mind, id and scopes of a live Mind Key, else None. One GetItem of the key's lookup, which
    also carries a copy of `last_used_at`: the stamp is written only when that copy is older than
    USAGE_STAMP_PERIOD, so a steady agent costs no write per request."""
    digest = hash_mind_key(presented)
    lookup = tables.get(tables.minds_table(), tables.key_hash_key(digest))
    if lookup is None or not secrets.compare_digest(lookup.get("hash", ""), digest):
        return None
    _stamp_if_stale(lookup)
    scopes = frozenset(scopes_of(lookup))
    return ResolvedKey(
        lookup["mind_id"], lookup["key_id"], scopes, lookup.get("created_by"), lookup.get("tenure")
    )


def _stamp_if_stale(lookup: dict[str, Any]) -> None:
    """Record last_used_at on the lookup (what the next request reads) and on the listed key item."""
    stamped = (
        tables.key_hash_key(lookup["hash"]),
        tables.mind_key_item_key(lookup["mind_id"], lookup["key_id"]),
    )
    tables.stamp_if_stale(tables.minds_table(), stamped, "last_used_at", lookup.get("last_used_at"))
