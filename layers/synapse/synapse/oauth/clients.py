"""Dynamic client registration (RFC 7591) for public clients: no secret, the code flow with PKCE.

A registration is an item `OAUTHCLIENT#<client id>`. It carries `ttl` (24 h) until the first grant
is made with it, so registrations nobody uses disappear; registrations are admitted at most
PER_CALLER_PER_MINUTE from one address and TOTAL_PER_MINUTE from all, so a flood is bounded in
both rate and what it leaves behind (at most TOTAL_PER_MINUTE x 1,440 live unused registrations).
"""

from datetime import timedelta
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.ids import looks_like_id, new_id
from synapse.oauth import redirects
from synapse.oauth.errors import OAuthError
from synapse.storage import ratelimit, tables

CLIENT_PREFIX = "oc_"
UNUSED_LIFETIME = timedelta(hours=24)
PER_CALLER_PER_MINUTE = 10
TOTAL_PER_MINUTE = 120
MAX_REDIRECT_URIS = 10
MAX_NAME_CHARS = 100
GRANT_TYPES = ("authorization_code", "refresh_token")
UNNAMED = "An unnamed MCP client"


class Client(NamedTuple):
    id: str
    name: str
    redirect_uris: tuple[str, ...]


def client_key(client_id: str) -> dict[str, str]:
    return {"pk": f"OAUTHCLIENT#{client_id}", "sk": "CLIENT"}


def _redirect_uri(value: Any) -> str:
    try:
        redirects.check(value)
    except redirects.RedirectRefused as refused:
        raise OAuthError("invalid_redirect_uri", f"redirect_uris: {refused}.") from None
    return str(value)


def _metadata(body: dict[str, Any]) -> tuple[list[str], str]:
    uris = body.get("redirect_uris")
    if not isinstance(uris, list) or not 1 <= len(uris) <= MAX_REDIRECT_URIS:
        raise OAuthError(
            "invalid_redirect_uri", f"redirect_uris: a list of 1-{MAX_REDIRECT_URIS} URLs is required."
        )
    checked = list(dict.fromkeys(_redirect_uri(uri) for uri in uris))
    name = body.get("client_name", UNNAMED)
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
        raise OAuthError(
            "invalid_client_metadata", f"client_name must be text of 1-{MAX_NAME_CHARS} characters."
        )
    for field, allowed in (("grant_types", GRANT_TYPES), ("response_types", ("code",))):
        asked = body.get(field, [])
        if not isinstance(asked, list) or any(kind not in allowed for kind in asked):
            raise OAuthError("invalid_client_metadata", f"{field}: only {', '.join(allowed)} are supported.")
    return checked, " ".join(name.split())


def register(body: dict[str, Any], caller: str) -> dict[str, Any]:
    """A new public client, answered as RFC 7591 §3.2.1 does. A requested token endpoint auth
    method other than `none` is replaced by it (§3.2.1 lets the server do so): there is no secret."""
    uris, name = _metadata(body)
    ratelimit.admit(
        f"oauth-register:{caller}", PER_CALLER_PER_MINUTE, "Client registration from this address"
    )
    ratelimit.admit("oauth-register", TOTAL_PER_MINUTE, "Client registration")
    moment = clock.now()
    client_id = new_id(CLIENT_PREFIX)
    item = {
        **client_key(client_id),
        "id": client_id,
        "name": name,
        "redirect_uris": uris,
        "created_at": clock.to_iso(moment),
        "ttl": int((moment + UNUSED_LIFETIME).timestamp()),
    }
    tables.client().put_item(
        TableName=tables.minds_table(), Item=tables.dump(item), ConditionExpression="attribute_not_exists(pk)"
    )
    return {
        "client_id": client_id,
        "client_id_issued_at": int(moment.timestamp()),
        "client_name": name,
        "redirect_uris": uris,
        "grant_types": list(GRANT_TYPES),
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


def find(client_id: str) -> Client | None:
    """A live registration, or None (unknown, or unused past its 24 h: TTL deletes lazily). Its
    redirect URIs are those registration would accept today: one stored before a rule existed (a
    CR/LF, a backslash) is left out, unusable, rather than an error."""
    if not looks_like_id(CLIENT_PREFIX, client_id):
        return None
    item = tables.get(tables.minds_table(), client_key(client_id))
    if item is None or ("ttl" in item and int(item["ttl"]) <= clock.now().timestamp()):
        return None
    stored = item.get("redirect_uris")
    uris = [uri for uri in stored if redirects.usable(uri)] if isinstance(stored, list | set | tuple) else []
    return Client(item["id"], str(item.get("name") or UNNAMED), tuple(dict.fromkeys(uris)))


def require(client_id: str | None) -> Client:
    found = find(client_id or "")
    if found is None:
        raise OAuthError(
            "invalid_client", "client_id is not a registered client (or its registration expired)."
        )
    return found


def matching_redirect(client: Client, asked: str | None) -> str | None:
    """The redirect URI of a request, as it named it (what the token endpoint compares, RFC 6749
    §4.1.3): a registered one exactly, or a registered loopback one on any port (RFC 8252 §7.3);
    the only one when it names none; else None. A named URI that registration would refuse is an
    invalid_request naming the rule. The Location is built later from its checked parts."""
    registered = {uri: parts for uri in client.redirect_uris if (parts := redirects.usable(uri))}
    if asked is None:
        return next(iter(registered)) if len(registered) == 1 else None
    try:
        found = redirects.matching(registered, asked)
    except redirects.RedirectRefused as refused:
        raise OAuthError("invalid_request", f"redirect_uri: {refused}.") from None
    return asked if found else None


def keep_operation(client_id: str) -> dict[str, Any]:
    """The transaction operation that keeps a registration once a grant uses it (removes its ttl)."""
    return {
        "Update": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(client_key(client_id)),
            "UpdateExpression": "REMOVE #ttl",
            "ConditionExpression": "attribute_exists(pk)",
            "ExpressionAttributeNames": {"#ttl": "ttl"},
        }
    }
