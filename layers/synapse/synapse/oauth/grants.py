"""Grants: what a person's consent gives one client on one mind, the secrets that carry it, and
their lookup by the authorizer (kept light: this module is on every request's path).

Items (Minds table; secrets only as HMAC-SHA256 under the pepper, like Mind Keys):

  OAUTHCODE#<hmac>       the authorization code: one use, CODE_LIFETIME; `used_by` once exchanged
  MIND#<mind> / GRANT#<id>   the grant: client, scopes, who consented (`user_id`, `tenure`), its
                         current token hashes
  OAUTHTOKEN#<hmac>      an access token's lookup: mind, grant, scopes, resource, expiry, who
                         consented (checked on every request: `minds.tenure`)
  OAUTHREFRESH#<hmac>    a refresh token's lookup; `used` once rotated, kept so a reuse is seen

The authorizer resolves an access token with one GetItem, as it does a Mind Key. Issuing and
rotating tokens is `tokens`; listing and revoking grants is `revocation`.
"""

import secrets
from datetime import timedelta
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.minds.grant_items import GRANT_SK as GRANT_SK
from synapse.minds.grant_items import access_key as access_key
from synapse.minds.grant_items import delete as delete
from synapse.minds.grant_items import grant_key as grant_key
from synapse.minds.grant_items import refresh_key as refresh_key
from synapse.minds.keys import SCOPES, hash_mind_key
from synapse.storage import tables

CODE_PREFIX, ACCESS_PREFIX, REFRESH_PREFIX, GRANT_PREFIX = "oac_", "oat_", "ort_", "grant_"


class AccessGrant(NamedTuple):
    """What a live access token lets its bearer do."""

    mind_id: str
    grant_id: str
    scopes: frozenset[str]
    resource: str
    expires_at: str
    created_by: str | None = None  # who approved it, and in which tenure (`minds.tenure`)
    tenure: str | None = None


def code_key(digest: str) -> dict[str, str]:
    return {"pk": f"OAUTHCODE#{digest}", "sk": "CODE"}


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
    approver = (item.get("user_id"), item.get("tenure"))
    return AccessGrant(
        item["mind_id"], item["grant_id"], scopes, item["resource"], item["expires_at"], *approver
    )
