"""Connected apps as their mind's owner sees them, and the end of a grant: listed, revoked by the
person, by the app itself (RFC 7009) or by the authorization server when a code or refresh token is
replayed, and deleted with the mind. A revocation deletes the grant and both token lookups in one
transaction with its audit event, so the next request is refused (nothing is cached)."""

from __future__ import annotations

from typing import Any

from synapse.core.errors import NotFound
from synapse.core.ids import looks_like_id
from synapse.minds import audit, minds
from synapse.minds.keys import hash_mind_key
from synapse.oauth import clients, forms
from synapse.oauth.errors import OAuthError
from synapse.oauth.grants import (
    ACCESS_PREFIX,
    GRANT_PREFIX,
    GRANT_SK,
    REFRESH_PREFIX,
    access_key,
    delete,
    grant_key,
    refresh_key,
)
from synapse.storage import pages, tables

SYSTEM = {"source": "system"}  # the `by` of a revocation the authorization server decides


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


def revoke_token(fields: dict[str, str]) -> None:
    """RFC 7009 §2.1: the client says who it is (a public client by its client_id, in the form or
    HTTP Basic), then the grant of an access or refresh token issued to it is revoked. Another
    client's token is refused (invalid_grant, RFC 6749 §5.2: "issued to another client") and stays
    valid; a token Synapse does not know is fine (§2.2: 200)."""
    if not fields.get("client_id"):
        raise OAuthError(
            "invalid_request",
            "client_id is required: a token is revoked only for the client it was issued to (RFC 7009 §2.1).",
        )
    client = clients.require(fields["client_id"])
    presented = forms.required(fields, "token")
    if presented.startswith(ACCESS_PREFIX):
        lookup = tables.get(tables.minds_table(), access_key(hash_mind_key(presented)))
    elif presented.startswith(REFRESH_PREFIX):
        lookup = tables.get(tables.minds_table(), refresh_key(hash_mind_key(presented)))
    else:
        return
    if lookup is None:
        return
    grant = tables.get(tables.minds_table(), grant_key(lookup["mind_id"], lookup["grant_id"]))
    issued_to = lookup.get("client_id") or (grant or {}).get("client_id")
    if issued_to != client.id:
        raise OAuthError(
            "invalid_grant", "token: it was issued to another client, so it is not revoked (RFC 7009 §2.1)."
        )
    if grant is not None:
        revoke(lookup["mind_id"], lookup["grant_id"], SYSTEM, "client")


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
    minds.get_mind(mind_id)
    return list_grants(mind_id, limit, after)


def revoke_owned(owner: str, mind_id: str, grant_id: str) -> None:
    """The person disconnects an app: its tokens stop working on the next request."""
    minds.get_mind(mind_id)
    if not revoke(mind_id, grant_id, audit.by_user(owner), "user"):
        raise NotFound(f"No connected app {grant_id[:80]!r} on this mind.")
