"""The HTTP API Lambda authorizer's logic: a JWT, a Mind Key or an OAuth access token → a principal.

`authorize` never raises: a bad credential becomes an `error` in the context, and
`Principal.from_context` answers it with a 401 carrying SPEC's JSON body and `WWW-Authenticate`,
something an HTTP API authorizer's own deny (a bare 403) cannot do. Handlers read only the
principal; they never see or parse a token.
"""

from __future__ import annotations

from typing import Any

from synapse.auth.principal import Principal
from synapse.auth.tokens import decode_jwt
from synapse.core import clock
from synapse.core.errors import Unauthorized
from synapse.core.sources import Source
from synapse.minds import keys, tenure
from synapse.oauth import grants, urls

EMAIL_MAX_CHARS = 254
MCP_ROUTES = frozenset({"POST /mcp", "GET /mcp", "DELETE /mcp"})


def _bearer(headers: dict[str, str]) -> str | None:
    value = headers.get("authorization", "").strip()
    scheme, _, token = value.partition(" ")
    if value and scheme.lower() == "bearer" and token.strip():
        return token.strip()
    if value:
        raise Unauthorized("Authorization must be 'Bearer <token>'.")
    return None


def _connected_app(token: str, event: dict[str, Any]) -> Principal:
    """An OAuth access token: live, for this deployment's /mcp (RFC 8707 audience), nowhere else."""
    found = grants.resolve_access(token)
    if found is None or not tenure.holds(found.mind_id, found.created_by, found.tenure):
        raise Unauthorized("The access token is not valid or has been revoked.")
    if found.expires_at <= clock.to_iso(clock.now()):
        raise Unauthorized("The access token has expired.")
    if event.get("routeKey") not in MCP_ROUTES:
        raise Unauthorized(
            "An OAuth access token works on /mcp only; the REST API takes a Mind Key or a JWT."
        )
    if found.resource != urls.resource(urls.base_url(event)):
        raise Unauthorized("The access token was issued for another resource.")
    return Principal(source=Source.AGENT, grant_id=found.grant_id, mind_id=found.mind_id, scopes=found.scopes)


def authenticate(headers: dict[str, str], event: dict[str, Any]) -> Principal:
    token = _bearer(headers) or headers.get("x-mind-key", "").strip() or None
    if token is None:
        raise Unauthorized()
    if token.startswith(keys.MIND_KEY_PREFIX):
        found = keys.resolve_key(token)
        # A key ends with its creator's tenure as owner, revoked or not yet (`minds.tenure`)
        if found is None or not tenure.holds(found.mind_id, found.created_by, found.tenure):
            raise Unauthorized("The Mind Key is not valid or has been revoked.")
        return Principal(source=Source.AGENT, key_id=found.key_id, mind_id=found.mind_id, scopes=found.scopes)
    if token.startswith(grants.ACCESS_PREFIX):
        return _connected_app(token, event)
    claims = decode_jwt(token)
    email = claims.get("email")
    return Principal(
        source=Source.USER,
        user_id=claims["sub"],
        email=email.strip() if isinstance(email, str) and 0 < len(email) <= EMAIL_MAX_CHARS else None,
        email_verified=_verified(claims.get("email_verified")),
    )


def _verified(claim: Any) -> bool:
    """`email_verified` is JSON true, or the string "true" some providers send; not 1, 1.0 (which
    equal True in Python), "1" or "yes"."""
    return claim is True or (isinstance(claim, str) and claim == "true")


def authorize(event: dict[str, Any]) -> dict[str, Any]:
    """HTTP API simple-response authorizer result for a payload-2.0 request event."""
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    try:
        context = authenticate(headers, event).to_context()
    except Unauthorized as error:
        context = {"error": error.message}
    return {"isAuthorized": True, "context": context}
