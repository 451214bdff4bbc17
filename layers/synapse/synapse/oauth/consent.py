"""The authorization request (`GET /oauth/authorize`) and the person's decision on it.

The request is checked in RFC 6749 §4.1.2.1's order: an unknown client or a redirect URI it did
not register (or one registration would refuse) is answered here, never redirected. Anything else
wrong is not redirected either before the person is signed in (RFC 9700 §4.11.2: a client anyone
can register could otherwise use Synapse's address to send people to its own site): the request
is kept with its error and the consent view shows it; going back to the client with the error is
the person's choice. A valid request is kept for REQUEST_LIFETIME as `OAUTHREQ#<id>` and the
browser goes to the console's consent view, where the signed-in person (a JWT: the console's
sign-in, whatever AuthMode) sees the client and picks a mind and scopes. The decision deletes the
request (one decision per request) in the same transaction that records the authorization code.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from synapse.core import clock
from synapse.core.errors import Conflict, NotFound, field_error
from synapse.core.ids import looks_like_id, new_id
from synapse.minds.keys import SCOPES
from synapse.oauth import clients, redirects, tokens, urls
from synapse.oauth.errors import OAuthError
from synapse.storage import ratelimit, tables
from synapse.teams import roles, tenure

REQUEST_PREFIX = "oar_"
REQUEST_LIFETIME = timedelta(minutes=10)
MAX_STATE_CHARS = 1024
REQUESTS_PER_CALLER_PER_MINUTE = 30
S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")


def request_key(request_id: str) -> dict[str, str]:
    return {"pk": f"OAUTHREQ#{request_id}", "sk": "REQUEST"}


def requested_scopes(raw: str | None) -> list[str]:
    """The Synapse scopes a `scope` parameter names; others (offline_access, openid) are ignored,
    as RFC 6749 §3.3 allows; none named means all."""
    named = set((raw or "").split())
    return [scope for scope in SCOPES if scope in named] or list(SCOPES)


def _fault(params: dict[str, str], base: str) -> tuple[str, str] | None:
    """What is wrong with a request whose client and redirect URI are verified (RFC 6749 §4.1.2.1's
    error and description), or None."""
    state = params.get("state")
    if state is not None and len(state) > MAX_STATE_CHARS:
        return "invalid_request", f"state is longer than {MAX_STATE_CHARS} characters."
    if params.get("response_type") != "code":
        return "unsupported_response_type", "response_type must be code."
    challenge, method = params.get("code_challenge"), params.get("code_challenge_method")
    if not challenge:
        return "invalid_request", "code_challenge is required: PKCE with S256."
    if method != "S256":
        return "invalid_request", "code_challenge_method must be S256 (plain is not accepted)."
    if not S256_CHALLENGE.fullmatch(challenge):
        return "invalid_request", "code_challenge must be the 43-character BASE64URL of a SHA-256."
    resource = params.get("resource") or urls.resource(base)
    if resource.rstrip("/") != urls.resource(base):
        return "invalid_target", f"resource must be {urls.resource(base)}."
    return None


def start(params: dict[str, str], base: str, caller: str) -> str:
    """The consent page's URL for a request from a registered client to a redirect URI it
    registered; OAuthError (answered here, never redirected) otherwise. A request that is wrong in
    any other way is kept with its error and shown on the consent page too: the person, signed in,
    decides whether to go back to the client with it (RFC 9700 §4.11.2). Each stored request is
    bounded per caller, like registrations: nobody signs in to send one."""
    client = clients.find(params.get("client_id") or "")
    if client is None:  # a 400, not the token endpoint's 401: no client credential was presented
        raise OAuthError(
            "invalid_request", "client_id is not a registered client (or its registration expired)."
        )
    redirect_uri = clients.matching_redirect(client, params.get("redirect_uri"))
    if redirect_uri is None:
        raise OAuthError("invalid_request", "redirect_uri is not one this client registered.")
    fault = _fault(params, base)
    state = params.get("state")
    ratelimit.admit(f"oauth-authorize:{caller}", REQUESTS_PER_CALLER_PER_MINUTE, "Authorization requests")
    moment = clock.now()
    request_id = new_id(REQUEST_PREFIX)
    item: dict[str, Any] = {
        **request_key(request_id),
        "id": request_id,
        "client_id": client.id,
        "redirect_uri": redirect_uri,
        "state": state if state is None or len(state) <= MAX_STATE_CHARS else None,
        "resource": urls.resource(base),
        "expires_at": clock.to_iso(moment + REQUEST_LIFETIME),
        "ttl": int((moment + REQUEST_LIFETIME).timestamp()),
    }
    if fault:
        item |= {"scopes": [], "error": fault[0], "error_description": fault[1]}
    else:
        item |= {
            "code_challenge": params["code_challenge"],
            "scopes": requested_scopes(params.get("scope")),
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
    """What the consent page shows: who asks, where the answer goes, for which scopes; or, for a
    request that cannot be granted, its error (going back tells the client)."""
    item, client = _pending(request_id)
    return {
        "id": item["id"],
        "client": {"id": client.id, "name": client.name, "redirect_host": _target(item).netloc},
        "scopes": item["scopes"],
        "resource": item["resource"],
        "expires_at": item["expires_at"],
        "error": (
            {"error": item["error"], "error_description": item.get("error_description", "")}
            if item.get("error")
            else None
        ),
    }


def _target(item: dict[str, Any]) -> redirects.RedirectUri:
    """The request's redirect URI in its checked parts (a Location is rebuilt from them)."""
    parts = redirects.usable(item.get("redirect_uri"))
    if parts is None:  # not stored by this version's start(): nothing to send back to
        raise NotFound("No such authorization request: start again from the app.")
    return parts


def _chosen_scopes(raw: Any) -> list[str]:
    if not isinstance(raw, list) or not raw or any(scope not in SCOPES for scope in raw):
        raise field_error("scopes", "scopes", f"scopes must be a non-empty list of {', '.join(SCOPES)}.")
    return [scope for scope in SCOPES if scope in raw]


def decide(user_id: str, request_id: str, body: dict[str, Any]) -> str:
    """The URL the browser goes to next: the client's redirect URI with a code, or access_denied,
    or (a request that cannot be granted, only denied) its error."""
    item, client = _pending(request_id)
    target = _target(item)
    approve = body.get("approve")
    if not isinstance(approve, bool):
        raise field_error("approve", "type", "approve must be true or false.")
    if approve and item.get("error"):
        raise Conflict(
            f"approve: this request cannot be approved ({item['error']}: {item.get('error_description')})"
            " Deny it to go back to the app, which may start again."
        )
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
        if item.get("error"):
            failed = {"error": item["error"], "error_description": item.get("error_description", "")}
            return target.location({**failed, **state})
        denied = {"error": "access_denied", "error_description": "The person declined.", **state}
        return target.location(denied)
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
    return target.location({"code": code, **state})


def _apply(request_id: str, operations: list[dict[str, Any]]) -> None:
    try:
        tables.transact(operations)
    except tables.client().exceptions.TransactionCanceledException:
        raise NotFound("No such authorization request: it was already answered.") from None
