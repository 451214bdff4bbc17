"""JWT validation and Mind Key hashing, as pure code: what a credential must be to be believed."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from synapse.auth import authorizer, tokens
from synapse.auth.principal import Principal
from synapse.core.errors import Unauthorized
from synapse.core.settings import _algorithms
from synapse.minds import keys

from tests.support.api import TEST_JWT_SECRET, jwt_for
from tests.support.jwks import Jwks, SigningKey, rsa_key
from tests.support.jwks import jwks_fixture as jwks_fixture
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture


def token_with(claims: dict[str, Any], key: Any = TEST_JWT_SECRET, algorithm: str = "HS256") -> str:
    return jwt.encode(claims, key, algorithm=algorithm)


def refused(token: str) -> str:
    with pytest.raises(Unauthorized) as caught:
        tokens.decode_jwt(token)
    assert caught.value.headers["WWW-Authenticate"].startswith("Bearer")
    return caught.value.message


# ---------------------------------------------------------------- HS256 (shared secret)


def test_a_valid_hs256_token_gives_its_claims() -> None:
    assert tokens.decode_jwt(jwt_for("user-7"))["sub"] == "user-7"


def test_an_expired_token_is_refused() -> None:
    assert "expired" in refused(jwt_for("user-1", ttl=-120))


def test_a_token_signed_with_another_secret_is_refused() -> None:
    refused(jwt_for("user-1", secret="another-secret-0123456789abcdef0123456789"))


def test_an_alg_none_token_is_refused() -> None:
    now = int(time.time())
    unsigned = jwt.encode({"sub": "user-1", "exp": now + 60}, None, algorithm="none")  # type: ignore[arg-type]
    refused(unsigned)
    # Also when a signature is glued on to a `none` header
    refused(unsigned + "c2lnbmF0dXJl")


@pytest.mark.parametrize("missing", ["sub", "exp"])
def test_sub_and_exp_are_required(missing: str) -> None:
    claims = {"sub": "user-1", "exp": int(time.time()) + 60}
    del claims[missing]
    refused(token_with(claims))


@pytest.mark.parametrize("sub", ["", 42, "u" * 257])
def test_sub_must_be_a_string_of_1_to_256_characters(sub: Any) -> None:
    refused(token_with({"sub": sub, "exp": int(time.time()) + 60}))


def test_a_sub_with_a_lone_surrogate_is_refused_not_stored() -> None:
    # Given a validly signed token whose sub is JSON-escaped UTF-16 that is not text ("\ud800")
    token = token_with({"sub": "user-\ud800", "exp": int(time.time()) + 60})
    # Then it is refused as a credential (it would otherwise fail as a DynamoDB key: a 500)
    assert "sub" in refused(token)


@pytest.mark.parametrize("garbage", ["x", "a.b.c", "eyJhbGciOiJIUzI1NiJ9..", "🔑", "Bearer x"])
def test_garbage_is_refused(garbage: str) -> None:
    refused(garbage)


def test_iss_and_aud_are_ignored_when_not_configured(configure: Configure) -> None:
    configure(SYNAPSE_JWT_ISSUER=None, SYNAPSE_JWT_AUDIENCE=None)
    assert tokens.decode_jwt(jwt_for("user-1", iss="https://anyone", aud="anything"))["sub"] == "user-1"


def test_iss_and_aud_are_checked_when_configured(configure: Configure) -> None:
    # Given a deployment that names its issuer and audience
    configure(SYNAPSE_JWT_ISSUER="https://idp.example", SYNAPSE_JWT_AUDIENCE="synapse")
    # Then only a token from that issuer for that audience passes
    assert tokens.decode_jwt(jwt_for("user-1", iss="https://idp.example", aud="synapse"))["sub"] == "user-1"
    refused(jwt_for("user-1", iss="https://evil.example", aud="synapse"))
    refused(jwt_for("user-1", iss="https://idp.example", aud="someone-else"))
    refused(jwt_for("user-1", aud="synapse"))
    refused(jwt_for("user-1", iss="https://idp.example"))


def test_no_secret_configured_refuses_every_token(configure: Configure) -> None:
    configure(SYNAPSE_JWT_SECRET=None, SYNAPSE_JWT_SECRET_ARN=None, SYNAPSE_ALLOW_DEV_SECRETS=None)
    refused(jwt_for("user-1"))


def test_an_asymmetric_token_against_a_shared_secret_is_refused(configure: Configure) -> None:
    # Given a shared-secret deployment whose allow-list also names RS256 (there is no key for it)
    configure(SYNAPSE_JWT_ALGORITHMS="HS256,RS256")
    # Then an RS256 token is a 401, not a crash preparing the secret as an RSA key
    refused(rsa_key().token())


# ---------------------------------------------------------------- JWKS (RS256 / ES256)


def test_rs256_and_es256_tokens_through_a_jwks_url(configure: Configure, jwks: Jwks) -> None:
    configure(SYNAPSE_JWKS_URL=jwks.url)
    for key in jwks.keys:
        assert tokens.decode_jwt(key.token("user-" + key.algorithm))["sub"] == "user-" + key.algorithm


def test_with_a_jwks_an_hs256_token_is_refused(configure: Configure, jwks: Jwks) -> None:
    configure(SYNAPSE_JWKS_URL=jwks.url)
    # A shared-secret token, with or without the kid of a published key
    refused(jwt_for("user-1"))
    now = int(time.time())
    claims = {"sub": "user-1", "exp": now + 60}
    refused(jwt.encode(claims, TEST_JWT_SECRET, algorithm="HS256", headers={"kid": jwks.keys[0].kid}))
    # Nor may the published RSA public key be used as an HMAC secret (algorithm confusion)
    public_pem = (
        jwks.keys[0]
        .private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    hmac_key = jwt.algorithms.HMACAlgorithm(jwt.algorithms.HMACAlgorithm.SHA256)
    header = {"alg": "HS256", "kid": jwks.keys[0].kid, "typ": "JWT"}
    signing_input = (
        jwt.utils.base64url_encode(json.dumps(header, separators=(",", ":")).encode())
        + b"."
        + jwt.utils.base64url_encode(json.dumps(claims, separators=(",", ":")).encode())
    )
    signature = jwt.utils.base64url_encode(hmac_key.sign(signing_input, public_pem))
    refused((signing_input + b"." + signature).decode())


def test_with_a_jwks_a_token_naming_one_keys_kid_under_the_other_keys_algorithm_is_refused(
    configure: Configure, jwks: Jwks
) -> None:
    configure(SYNAPSE_JWKS_URL=jwks.url)
    rsa, ec = jwks.keys
    # An ES256 token that names the RSA key's kid, and an RS256 one that names the EC key's
    refused(SigningKey(rsa.kid, "ES256", ec.private).token())
    refused(SigningKey(ec.kid, "RS256", rsa.private).token())


def test_with_a_jwks_a_key_it_does_not_publish_is_refused(configure: Configure, jwks: Jwks) -> None:
    configure(SYNAPSE_JWKS_URL=jwks.url)
    refused(rsa_key("unknown-kid").token())
    impostor = rsa_key(jwks.keys[0].kid)  # the right kid, the wrong private key
    refused(impostor.token())


def test_with_a_jwks_iss_and_aud_still_apply(configure: Configure, jwks: Jwks) -> None:
    configure(SYNAPSE_JWKS_URL=jwks.url, SYNAPSE_JWT_ISSUER="https://cognito", SYNAPSE_JWT_AUDIENCE="app")
    assert tokens.decode_jwt(jwks.keys[0].token(iss="https://cognito", aud="app"))["sub"] == "user-1"
    refused(jwks.keys[1].token(iss="https://cognito", aud="other"))
    refused(jwks.keys[1].token(ttl=-120, iss="https://cognito", aud="app"))


# ---------------------------------------------------------------- algorithm allow-list


@pytest.mark.parametrize(
    ("raw", "using_jwks", "allowed"),
    [
        ("", False, ("HS256",)),
        ("", True, ("RS256", "ES256")),
        ("none,HS256", False, ("HS256",)),
        ("HS256, None ,HS512", False, ("HS256", "HS512")),
        ("HS256,RS256,none", True, ("RS256",)),
    ],
)
def test_the_allow_list_never_admits_none(raw: str, using_jwks: bool, allowed: tuple[str, ...]) -> None:
    assert _algorithms(raw, using_jwks) == allowed


@pytest.mark.parametrize(("raw", "using_jwks"), [("none", False), ("NONE,", False), ("HS256", True)])
def test_an_allow_list_with_nothing_acceptable_stops_the_service(raw: str, using_jwks: bool) -> None:
    with pytest.raises(RuntimeError):
        _algorithms(raw, using_jwks)


# ---------------------------------------------------------------- Mind Keys and the authorizer


def test_mind_keys_are_prefixed_random_and_hashed_under_the_pepper(configure: Configure) -> None:
    first, second = keys.new_mind_key(), keys.new_mind_key()
    assert first.startswith("mk_") and second.startswith("mk_") and first != second
    digest = keys.hash_mind_key(first)
    assert digest == keys.hash_mind_key(first) and first not in digest and len(digest) == 64
    # The same key under another pepper hashes differently: a leaked table alone verifies nothing
    configure(SYNAPSE_KEY_PEPPER="another-pepper-0123456789abcdef0123456789")
    assert keys.hash_mind_key(first) != digest


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"authorization": "Basic dXNlcjpwYXNz"},
        {"authorization": "Bearer"},
        {"authorization": "Token abc"},
        {"authorization": "Bearer not-a-jwt"},
    ],
)
def test_the_authorizer_never_denies_but_records_why(headers: dict[str, str]) -> None:
    result = authorizer.authorize({"headers": headers})
    assert result["isAuthorized"] is True and result["context"]["error"]
    with pytest.raises(Unauthorized):
        Principal.from_context(result["context"])


def test_the_authorizer_turns_a_jwt_into_a_user_principal() -> None:
    result = authorizer.authorize({"headers": {"Authorization": f"Bearer {jwt_for('user-3')}"}})
    principal = Principal.from_context(result["context"])
    assert (principal.is_user, principal.user_id, principal.mind_id) == (True, "user-3", None)


@pytest.mark.parametrize(
    ("claims", "email", "verified"),
    [
        ({"email": "sam@example.com", "email_verified": True}, "sam@example.com", True),
        ({"email": "sam@example.com", "email_verified": "true"}, "sam@example.com", True),  # some IdPs
        ({"email": "sam@example.com", "email_verified": False}, "sam@example.com", False),
        ({"email": "sam@example.com"}, "sam@example.com", False),
        ({"email_verified": True}, None, False),
        ({"email": 7, "email_verified": True}, None, False),
        ({}, None, False),
    ],
)
def test_an_oidc_tokens_email_claims_reach_the_principal(
    configure: Configure, jwks: Jwks, claims: dict[str, Any], email: str | None, verified: bool
) -> None:
    # Given an OIDC deployment and a token its JWKS signed, with or without email claims
    configure(SYNAPSE_JWKS_URL=jwks.url)
    token = jwks.keys[0].token("sam-sub", **claims)
    # When the authorizer reads it, and a handler reads the principal from the context
    principal = Principal.from_context(
        authorizer.authenticate({"authorization": f"Bearer {token}"}, {}).to_context()
    )
    # Then the email is there only when the token carries one, and verified only when it says so
    assert (principal.user_id, principal.email, principal.verified_email() is not None) == (
        "sam-sub",
        email,
        verified and email is not None,
    )
    assert principal.email_verified is (verified and email is not None)
