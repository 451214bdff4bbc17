"""Credentials: JWTs for people, Mind Keys for agents, and the principal both turn into.

The authorizer (functions/authorizer) calls `authorize`, which never raises: a bad credential
becomes an `error` in the context, and `Principal.from_context` answers it with a 401 carrying
SPEC's JSON body and `WWW-Authenticate` — something an HTTP API authorizer's own deny (a bare
403) cannot do. Handlers read only the principal; they never see or parse a token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from functools import cache
from typing import Any

import jwt

from synapse.core.errors import Forbidden, Unauthorized
from synapse.core.settings import get_settings
from synapse.memory.model import Source

MIND_KEY_PREFIX = "mk_"
JWT_REQUIRED_CLAIMS = ("exp", "sub")
SUB_MAX_CHARS = 256  # the sub becomes a DynamoDB key (mind owner); keep it well inside key limits


# ---------------------------------------------------------------- Mind Keys


def new_mind_key() -> str:
    return MIND_KEY_PREFIX + secrets.token_urlsafe(32)


def hash_mind_key(key: str) -> str:
    """HMAC-SHA256 under the server-side pepper: a leaked table does not reveal or verify keys."""
    return hmac.new(get_settings().key_pepper, key.encode(), hashlib.sha256).hexdigest()


# ---------------------------------------------------------------- JWTs


@cache
def _jwks_client(url: str) -> jwt.PyJWKClient:
    return jwt.PyJWKClient(url, cache_keys=True, lifespan=600, timeout=5)


def decode_jwt(token: str) -> dict[str, Any]:
    """Verified claims, or Unauthorized with a reason a person can act on."""
    settings = get_settings()
    try:
        if settings.jwks_url:
            # The PyJWK itself, not its .key: it binds the key's own algorithm, so a token that names
            # an RSA key's kid under ES256 is refused instead of crashing in key preparation.
            key: Any = _jwks_client(settings.jwks_url).get_signing_key_from_jwt(token)
        else:
            key = settings.jwt_secret
            if not key:
                raise Unauthorized("This deployment has no JWT secret configured.")
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=list(settings.jwt_algorithms),
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
            options={"require": list(JWT_REQUIRED_CLAIMS), "verify_aud": settings.jwt_audience is not None},
        )
    except jwt.ExpiredSignatureError:
        raise Unauthorized("The JWT has expired.") from None
    except jwt.PyJWKClientError:
        raise Unauthorized("The JWT's signing key is not in the configured JWKS.") from None
    except jwt.PyJWTError as error:  # InvalidTokenError, and the key errors a hostile header provokes
        raise Unauthorized(f"The JWT is not valid: {error}.") from None
    if not isinstance(claims.get("sub"), str) or not 1 <= len(claims["sub"]) <= SUB_MAX_CHARS:
        raise Unauthorized(f"The JWT's sub claim must be a string of 1-{SUB_MAX_CHARS} characters.")
    try:
        claims["sub"].encode("utf-8")  # a lone surrogate ("\ud800" in the JSON) is no text to store
    except UnicodeEncodeError:
        raise Unauthorized("The JWT's sub claim is not valid Unicode text.") from None
    return claims


# ---------------------------------------------------------------- principal


@dataclass(frozen=True)
class Principal:
    """Who is calling: a user (JWT) or an agent holding a Mind Key for one mind."""

    source: Source
    user_id: str | None = None
    key_id: str | None = None
    mind_id: str | None = None

    @property
    def is_user(self) -> bool:
        return self.source is Source.USER

    def to_context(self) -> dict[str, str]:
        return {
            "source": self.source.value,
            "user_id": self.user_id or "",
            "key_id": self.key_id or "",
            "mind_id": self.mind_id or "",
        }

    @classmethod
    def from_context(cls, context: dict[str, Any] | None) -> Principal:
        context = context or {}
        if context.get("error") or context.get("source") not in {"user", "agent"}:
            raise Unauthorized(str(context.get("error") or "A valid JWT or Mind Key is required."))
        return cls(
            source=Source(context["source"]),
            user_id=context.get("user_id") or None,
            key_id=context.get("key_id") or None,
            mind_id=context.get("mind_id") or None,
        )

    def require_user(self, action: str) -> str:
        if not self.is_user or not self.user_id:
            raise Forbidden(f"Only a person signed in with a JWT may {action}; a Mind Key may not.")
        return self.user_id

    def writer(self, claimed: Source | None) -> Source:
        """The source a write carries: the credential's. A body that claims otherwise is refused."""
        if claimed is not None and claimed is not self.source:
            raise Forbidden(
                f"source: the body says {claimed.value!r} but the credential writes as {self.source.value!r}."
            )
        return self.source


def _bearer(headers: dict[str, str]) -> str | None:
    value = headers.get("authorization", "").strip()
    scheme, _, token = value.partition(" ")
    if value and scheme.lower() == "bearer" and token.strip():
        return token.strip()
    if value:
        raise Unauthorized("Authorization must be 'Bearer <token>'.")
    return None


def authenticate(headers: dict[str, str]) -> Principal:
    from synapse.minds import minds  # late import: minds imports this module

    token = _bearer(headers) or headers.get("x-mind-key", "").strip() or None
    if token is None:
        raise Unauthorized()
    if token.startswith(MIND_KEY_PREFIX):
        found = minds.resolve_key(token)
        if found is None:
            raise Unauthorized("The Mind Key is not valid or has been revoked.")
        mind_id, key_id = found
        return Principal(source=Source.AGENT, key_id=key_id, mind_id=mind_id)
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
