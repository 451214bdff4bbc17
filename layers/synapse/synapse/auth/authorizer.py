"""The HTTP API Lambda authorizer's logic: a JWT or a Mind Key → a principal.

`authorize` never raises: a bad credential becomes an `error` in the context, and
`Principal.from_context` answers it with a 401 carrying SPEC's JSON body and `WWW-Authenticate`,
something an HTTP API authorizer's own deny (a bare 403) cannot do. Handlers read only the
principal; they never see or parse a token.
"""

from __future__ import annotations

from typing import Any

from synapse.auth.principal import Principal
from synapse.auth.tokens import decode_jwt
from synapse.core.errors import Unauthorized
from synapse.memory.kinds import Source
from synapse.minds import keys


def _bearer(headers: dict[str, str]) -> str | None:
    value = headers.get("authorization", "").strip()
    scheme, _, token = value.partition(" ")
    if value and scheme.lower() == "bearer" and token.strip():
        return token.strip()
    if value:
        raise Unauthorized("Authorization must be 'Bearer <token>'.")
    return None


def authenticate(headers: dict[str, str]) -> Principal:
    token = _bearer(headers) or headers.get("x-mind-key", "").strip() or None
    if token is None:
        raise Unauthorized()
    if token.startswith(keys.MIND_KEY_PREFIX):
        found = keys.resolve_key(token)
        if found is None:
            raise Unauthorized("The Mind Key is not valid or has been revoked.")
        return Principal(source=Source.AGENT, key_id=found.key_id, mind_id=found.mind_id, scopes=found.scopes)
    claims = decode_jwt(token)
    return Principal(source=Source.USER, user_id=claims["sub"])


def authorize(event: dict[str, Any]) -> dict[str, Any]:
    """HTTP API simple-response authorizer result for a payload-2.0 request event."""
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    try:
        context = authenticate(headers).to_context()
    except Unauthorized as error:
        context = {"error": error.message}
    return {"isAuthorized": True, "context": context}
