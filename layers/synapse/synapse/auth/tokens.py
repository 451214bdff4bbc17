"""JWTs for people: verified against the configured secret or JWKS, with an algorithm allow-list
and required claims, so a forged, expired or `alg: none` token is a 401 with a reason.

Three modes (`Settings.auth_mode`): `shared-secret` (HS256 with this deployment's secret), `oidc`
(any provider's JWKS, issuer and audience) and `cognito` (the pool's JWKS and issuer, and the app
client: an access token's `client_id` or an id token's `aud`, as Cognito's tokens carry them)."""

from __future__ import annotations

from functools import cache
from typing import Any

from synapse.core.errors import Unauthorized
from synapse.core.settings import get_settings

JWT_REQUIRED_CLAIMS = ("exp", "sub")
COGNITO_REQUIRED_CLAIMS = ("exp", "sub", "iss", "token_use")
COGNITO_CLIENT_CLAIM = {"access": "client_id", "id": "aud"}
SUB_MAX_CHARS = 256  # the sub becomes a DynamoDB key (mind owner); keep it well inside key limits

# PyJWT (and through it cryptography) is imported by the functions that verify a JWT, on first use:
# a cold start that checks a Mind Key never pays for it (issue 14).


@cache
def _jwks_client(url: str) -> Any:  # a jwt.PyJWKClient
    import jwt

    return jwt.PyJWKClient(url, cache_keys=True, lifespan=600, timeout=5)


def _cognito_client(claims: dict[str, Any], client_id: str | None) -> None:
    """The token was issued to this deployment's app client, for signing in (not a refresh token)."""
    claim = COGNITO_CLIENT_CLAIM.get(str(claims.get("token_use")))
    if claim is None:
        raise Unauthorized("The JWT's token_use must be 'access' or 'id'.")
    if claims.get(claim) != client_id:
        raise Unauthorized(f"The JWT was issued to another app client ({claim}).")


def decode_jwt(token: str) -> dict[str, Any]:
    """Verified claims, or Unauthorized with a reason a person can act on."""
    settings = get_settings()
    cognito = settings.auth_mode == "cognito"
    import jwt

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
            options={
                "require": list(COGNITO_REQUIRED_CLAIMS if cognito else JWT_REQUIRED_CLAIMS),
                "verify_aud": settings.jwt_audience is not None,
            },
        )
    except jwt.ExpiredSignatureError:
        raise Unauthorized("The JWT has expired.") from None
    except jwt.PyJWKClientError:
        raise Unauthorized("The JWT's signing key is not in the configured JWKS.") from None
    except jwt.PyJWTError as error:  # InvalidTokenError, and the key errors a hostile header provokes
        raise Unauthorized(f"The JWT is not valid: {error}.") from None
    if cognito:
        _cognito_client(claims, settings.jwt_client_id)
    if not isinstance(claims.get("sub"), str) or not 1 <= len(claims["sub"]) <= SUB_MAX_CHARS:
        raise Unauthorized(f"The JWT's sub claim must be a string of 1-{SUB_MAX_CHARS} characters.")
    try:
        claims["sub"].encode("utf-8")  # a lone surrogate ("\ud800" in the JSON) is no text to store
    except UnicodeEncodeError:
        raise Unauthorized("The JWT's sub claim is not valid Unicode text.") from None
    return claims
