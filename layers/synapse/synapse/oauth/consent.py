"""The authorization request (`GET /oauth/authorize`) and the person's decision on it.

The request is checked in RFC 6749 §4.1.2.1's order: an unknown client or a redirect URI it did
not register is answered here (never redirected, so Synapse is no open redirector); anything
else wrong goes back to the client's redirect URI as `error=…`. A valid request is kept for
REQUEST_LIFETIME as `OAUTHREQ#<id>` and the browser goes to the console's consent view, where the
signed-in person (a JWT: the console's sign-in, whatever AuthMode) sees the client and picks a
mind and scopes. The decision deletes the request (one decision per request) in the same
transaction that records the authorization code.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

from synapse.core import clock
from synapse.core.errors import NotFound, field_error
from synapse.core.ids import looks_like_id, new_id
from synapse.minds.keys import SCOPES
from synapse.oauth import clients, tokens, urls
from synapse.oauth.errors import OAuthError, RedirectableError
from synapse.storage import ratelimit, tables
from synapse.teams import roles, tenure

REQUEST_PREFIX = "oar_"
REQUEST_LIFETIME = timedelta(minutes=10)
MAX_STATE_CHARS = 1024
REQUESTS_PER_CALLER_PER_MINUTE = 30
S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")


def request_key(request_id: str) -> dict[str, str]:
    return {"pk": f"OAUTHREQ#{request_id}", "sk": "REQUEST"}


def with_query(uri: str, params: dict[str, str]) -> str:
    """`uri` with `params` added to its query (a registered URI may carry one)."""
    return uri + ("&" if urlsplit(uri).query else "?") + urlencode(params)


def requested_scopes(raw: str | None) -> list[str]:
    """The Synapse scopes a `scope` parameter names; others (offline_access, openid) are ignored,
    as RFC 6749 §3.3 allows; none named means all."""
    named = set((raw or "").split())
    return [scope for scope in SCOPES if scope in named] or list(SCOPES)


def start(params: dict[str, str], base: str, caller: str) -> str:
    """The consent page's URL for a valid request; OAuthError (answered here) or RedirectableError.
    Each stored request is bounded per caller, like registrations: nobody signs in to send one."""
    client = clients.find(params.get("client_id") or "")
    if client is None:  # a 400, not the token endpoint's 401: no client credential was presented
        raise OAuthError(
            "invalid_request", "client_id is not a registered client (or its registration expired)."
        )
    redirect_uri = clients.matching_redirect(client, params.get("redirect_uri"))
    if redirect_uri is None:
        raise OAuthError("invalid_request", "redirect_uri is not one this client registered.")
    state = params.get("state")

    def refuse(error: str, description: str) -> RedirectableError:
        return RedirectableError(error, description, redirect_uri, state)

    if state is not None and len(state) > MAX_STATE_CHARS:
        raise refuse("invalid_request", f"state is longer than {MAX_STATE_CHARS} characters.")
    if params.get("response_type") != "code":
        raise refuse("unsupported_response_type", "response_type must be code.")
    challenge, method = params.get("code_challenge"), params.get("code_challenge_method")
    if not challenge:
        raise refuse("invalid_request", "code_challenge is required: PKCE with S256.")
    if method != "S256":
        raise refuse("invalid_request", "code_challenge_method must be S256 (plain is not accepted).")
    if not S256_CHALLENGE.fullmatch(challenge):
        raise refuse("invalid_request", "code_challenge must be the 43-character BASE64URL of a SHA-256.")
    resource = params.get("resource") or urls.resource(base)
    if resource.rstrip("/") != urls.resource(base):
        raise refuse("invalid_target", f"resource must be {urls.resource(base)}.")
    ratelimit.admit(f"oauth-authorize:{caller}", REQUESTS_PER_CALLER_PER_MINUTE, "Authorization requests")
    moment = clock.now()
    request_id = new_id(REQUEST_PREFIX)
    item = {
        **request_key(request_id),
        "id": request_id,
        "client_id": client.id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": challenge,
        "scopes": requested_scopes(params.get("scope")),
        "resource": urls.resource(base),
        "expires_at": clock.to_iso(moment + REQUEST_LIFETIME),
        "ttl": int((moment + REQUEST_LIFETIME).timestamp()),
    }
    tables.client().put_item(TableName=tables.minds_table(), Item=tables.dump(item))
    return urls.consent_page(base, request_id)


def _pending(request_id: str) -> tuple[dict[str, Any], clients.Client]:
    item = (
        tables.get(tables.minds_table(), request_key(request_id))
        if looks_like_id(REQUEST_PREFIX, request_id)
        else None
    )
    client = clients.find(item["client_id"]) if item else None
    if item is None or client is None or item["expires_at"] <= clock.to_iso(clock.now()):
        raise NotFound(
            "No such authorization request: it expired or was already answered. Start again from the app."
        )
    return item, client


def describe(request_id: str) -> dict[str, Any]:
    """What the consent page shows: who asks, where the answer goes, for which scopes."""
    item, client = _pending(request_id)
    return {
        "id": item["id"],
        "client": {
            "id": client.id,
            "name": client.name,
            "redirect_host": urlsplit(item["redirect_uri"]).netloc,
        },
        "scopes": item["scopes"],
        "resource": item["resource"],
        "expires_at": item["expires_at"],
    }


def _chosen_scopes(raw: Any) -> list[str]:
    if not isinstance(raw, list) or not raw or any(scope not in SCOPES for scope in raw):
        raise field_error("scopes", "scopes", f"scopes must be a non-empty list of {', '.join(SCOPES)}.")
    return [scope for scope in SCOPES if scope in raw]


def decide(user_id: str, request_id: str, body: dict[str, Any]) -> str:
    """The URL the browser goes to next: the client's redirect URI with a code, or access_denied."""
    item, client = _pending(request_id)
    approve = body.get("approve")
    if not isinstance(approve, bool):
        raise field_error("approve", "type", "approve must be true or false.")
    remove = {
        "Delete": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(request_key(request_id)),
            "ConditionExpression": "attribute_exists(pk)",
        }
    }
    state = {"state": item["state"]} if item.get("state") is not None else {}
    if not approve:
        _apply(request_id, [remove])
        denied = {"error": "access_denied", "error_description": "The person declined.", **state}
        return with_query(item["redirect_uri"], denied)
    mind_id = body.get("mind_id")
    if not isinstance(mind_id, str) or not mind_id:
        raise field_error("mind_id", "required", "mind_id: name the mind the app may use.")
    roles.require(mind_id, user_id, roles.OWNER)  # a grant is an agent's credential, as a key is
    hold = tenure.hold(mind_id, user_id)  # and ends with the approver's tenure as owner, as a key does
    code, put_code = tokens.code_operation(
        tokens.CodeGrant(
            client_id=client.id,
            client_name=client.name,
            redirect_uri=item["redirect_uri"],
            code_challenge=item["code_challenge"],
            resource=item["resource"],
            mind_id=mind_id,
            scopes=tuple(_chosen_scopes(body.get("scopes"))),
            user_id=user_id,
            tenure=hold.recorded.get("tenure"),
        )
    )
    _apply(request_id, [remove, put_code, *([hold.operation] if hold.operation else [])])
    return with_query(item["redirect_uri"], {"code": code, **state})


def _apply(request_id: str, operations: list[dict[str, Any]]) -> None:
    try:
        tables.transact(operations)
    except tables.client().exceptions.TransactionCanceledException:
        raise NotFound("No such authorization request: it was already answered.") from None
