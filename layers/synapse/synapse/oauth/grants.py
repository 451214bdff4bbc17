"""Grants: what a person's consent gives one client on one mind, and the secrets that carry it.

Items (Minds table; secrets only as HMAC-SHA256 under the pepper, like Mind Keys):

  OAUTHCODE#<hmac>       the authorization code: one use, CODE_LIFETIME; `used_by` once exchanged
  MIND#<mind> / GRANT#<id>   the grant: client, scopes, who consented, its current token hashes
  OAUTHTOKEN#<hmac>      an access token's lookup: mind, grant, scopes, resource, expiry
  OAUTHREFRESH#<hmac>    a refresh token's lookup; `used` once rotated, kept so a reuse is seen

The authorizer resolves an access token with one GetItem, as it does a Mind Key. Revoking a grant
deletes it and both current lookups in one transaction, so the next request is refused (SPEC's 60 s,
with nothing cached). A refresh rotates both tokens; a refresh token presented again after its
rotation (stolen, or replayed) revokes the grant (OAuth 2.1 §4.3.1), and so does a code
exchanged twice (RFC 6749 §4.1.2).
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.errors import NotFound
from synapse.core.ids import looks_like_id
from synapse.minds import audit, minds
from synapse.minds.keys import SCOPES, hash_mind_key
from synapse.storage import pages, tables

CODE_PREFIX, ACCESS_PREFIX, REFRESH_PREFIX, GRANT_PREFIX = "oac_", "oat_", "ort_", "grant_"
GRANT_SK = "GRANT#"
SYSTEM = {"source": "system"}  # the `by` of a revocation the authorization server decides


class AccessGrant(NamedTuple):
    """What a live access token lets its bearer do."""

    mind_id: str
    grant_id: str
    scopes: frozenset[str]
    resource: str
    expires_at: str


def code_key(digest: str) -> dict[str, str]:
    return {"pk": f"OAUTHCODE#{digest}", "sk": "CODE"}


def access_key(digest: str) -> dict[str, str]:
    return {"pk": f"OAUTHTOKEN#{digest}", "sk": "TOKEN"}


def refresh_key(digest: str) -> dict[str, str]:
    return {"pk": f"OAUTHREFRESH#{digest}", "sk": "REFRESH"}


def grant_key(mind_id: str, grant_id: str) -> dict[str, str]:
    return {"pk": f"MIND#{mind_id}", "sk": f"{GRANT_SK}{grant_id}"}


def new_secret(prefix: str) -> tuple[str, str]:
    secret = prefix + secrets.token_urlsafe(32)
    return secret, hash_mind_key(secret)


def put(item: dict[str, Any], condition: str = "attribute_not_exists(pk)") -> dict[str, Any]:
    return {
        "Put": {
            "TableName": tables.minds_table(),
            "Item": tables.dump(item),
            "ConditionExpression": condition,
        }
    }


def delete(key: dict[str, str], condition: str | None = None) -> dict[str, Any]:
    operation: dict[str, Any] = {"TableName": tables.minds_table(), "Key": tables.dump(key)}
    if condition:
        operation["ConditionExpression"] = condition
    return {"Delete": operation}


def expiring(moment: Any, lifetime: timedelta) -> dict[str, Any]:
    return {"expires_at": clock.to_iso(moment + lifetime), "ttl": int((moment + lifetime).timestamp())}


def live(item: dict[str, Any] | None) -> bool:
    return item is not None and str(item.get("expires_at", "")) > clock.to_iso(clock.now())


def resolve_access(presented: str) -> AccessGrant | None:
    """The grant behind a live access token (one GetItem), else None; stamps the grant's
    last_used_at at most once a minute, as a Mind Key's."""
    if not presented.startswith(ACCESS_PREFIX):
        return None
    digest = hash_mind_key(presented)
    item = tables.get(tables.minds_table(), access_key(digest))
    if item is None:
        return None
    if not live(item):
        return AccessGrant(
            item["mind_id"], item["grant_id"], frozenset(), item["resource"], item["expires_at"]
        )
    stamped = (access_key(digest), grant_key(item["mind_id"], item["grant_id"]))
    tables.stamp_if_stale(tables.minds_table(), stamped, "last_used_at", item.get("last_used_at"))
    scopes = frozenset(scope for scope in item["scopes"] if scope in SCOPES)
    return AccessGrant(item["mind_id"], item["grant_id"], scopes, item["resource"], item["expires_at"])


def public(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": item["id"],
        "client_id": item["client_id"],
        "client_name": item["client_name"],
        "redirect_host": item["redirect_host"],
        "scopes": list(item["scopes"]),
        "created_at": item["created_at"],
        "last_used_at": item.get("last_used_at"),
    }


def list_grants(mind_id: str, limit: int, after: str | None) -> pages.Page[dict[str, Any]]:
    """The mind's connected apps. Ownership is the caller's check."""
    page = pages.in_mind(mind_id, GRANT_SK, limit, after)
    return pages.Page([public(item) for item in page.items], page.next_cursor)


def revoke(mind_id: str, grant_id: str, by: dict[str, str], reason: str) -> bool:
    """Delete the grant and its current tokens, with its audit event; False when it is not there."""
    item = (
        tables.get(tables.minds_table(), grant_key(mind_id, grant_id))
        if looks_like_id(GRANT_PREFIX, grant_id)
        else None
    )
    if item is None:
        return False
    target = {"grant_id": grant_id, "client_name": item["client_name"], "reason": reason}
    operations = [
        delete(grant_key(mind_id, grant_id), "attribute_exists(pk)"),
        delete(access_key(item["access_hash"])),
        delete(refresh_key(item["refresh_hash"])),
        audit.put_operation(mind_id, "grant.revoked", by, target),
    ]
    try:
        tables.transact(operations)
    except tables.client().exceptions.TransactionCanceledException:
        return False
    return True


def revoke_reused(mind_id: str, grant_id: str, reason: str) -> None:
    """A revocation the authorization server decides (a reused code or refresh token)."""
    revoke(mind_id, grant_id, SYSTEM, reason)


def revoke_token(presented: str) -> None:
    """RFC 7009: revoke the grant an access or refresh token belongs to; unknown tokens are fine."""
    if presented.startswith(ACCESS_PREFIX):
        item = tables.get(tables.minds_table(), access_key(hash_mind_key(presented)))
    elif presented.startswith(REFRESH_PREFIX):
        item = tables.get(tables.minds_table(), refresh_key(hash_mind_key(presented)))
    else:
        return
    if item is not None:
        revoke(item["mind_id"], item["grant_id"], SYSTEM, "client")


def delete_all(mind_id: str) -> None:
    """Every grant of a mind and its tokens' lookups (deleting the mind): lookups first."""
    found = list(
        tables.query_all(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=tables.values(pk=f"MIND#{mind_id}", prefix=GRANT_SK),
        )
    )
    lookups = [access_key(g["access_hash"]) for g in found] + [refresh_key(g["refresh_hash"]) for g in found]
    tables.batch_delete(tables.minds_table(), lookups)
    tables.batch_delete(tables.minds_table(), [grant_key(mind_id, g["id"]) for g in found])


def owned_grants(owner: str, mind_id: str, limit: int, after: str | None) -> pages.Page[dict[str, Any]]:
    """The connected apps of a mind the person owns (another's mind: 404)."""
    minds.owned_mind(owner, mind_id)
    return list_grants(mind_id, limit, after)


def revoke_owned(owner: str, mind_id: str, grant_id: str) -> None:
    """The person disconnects an app: its tokens stop working on the next request."""
    minds.owned_mind(owner, mind_id)
    if not revoke(mind_id, grant_id, audit.by_user(owner), "user"):
        raise NotFound(f"No connected app {grant_id[:80]!r} on this mind.")
