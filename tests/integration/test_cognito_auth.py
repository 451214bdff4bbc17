"""SYNAPSE_AUTH_MODE=cognito end to end: moto's Cognito signs real tokens (a pool, an app client, a user,
initiate_auth), the pool's JWKS is served on loopback, and the gateway runs the real authorizer handler
before POST /minds and GET /minds/{id}."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import jwt
import pytest

from infra.gateway import HttpResponse
from tests.support.api import Api, jwt_for
from tests.support.checks import assert_error
from tests.support.jwks import (
    CognitoPool,
    moto_cognito_jwks,
    moto_cognito_private_key,
    new_cognito_pool,
    serve_jwks,
)
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture


@pytest.fixture
def jwks_base() -> Iterator[str]:
    with serve_jwks(moto_cognito_jwks()) as base:
        yield base


@pytest.fixture
def pool(dynamo: Any, jwks_base: str, configure: Configure) -> CognitoPool:
    """A deployment in cognito mode whose pool has one app client and the user alice."""
    created = new_cognito_pool(boto3.client("cognito-idp", region_name="us-east-1"), jwks_base)
    created.add_user("alice@example.com")
    configure(
        SYNAPSE_AUTH_MODE="cognito",
        SYNAPSE_JWT_ISSUER=created.issuer,
        SYNAPSE_JWT_CLIENT_ID=created.client_id,
        SYNAPSE_JWKS_URL=created.jwks_url,
        SYNAPSE_JWT_AUDIENCE=None,
    )
    return created


def create_mind(api: Api, token: str, name: str = "Alice's Mind") -> HttpResponse:
    return api.call("POST", "/minds", token=token, json_body={"name": name})


def refused(api: Api, token: str) -> str:
    message: str = assert_error(create_mind(api, token), 401)["message"]
    return message


def pool_signed(pool: CognitoPool, **claims: Any) -> str:
    """Claims the pool never issues, signed with its key: only the claim checks can refuse them."""
    now = int(time.time())
    payload = {"iss": pool.issuer, "sub": "forged-sub", "iat": now, "exp": now + 600, **claims}
    return jwt.encode(payload, moto_cognito_private_key(), algorithm="RS256", headers={"kid": "dummy"})


# ---------------------------------------------------------------- a person signs in and works


def test_a_cognito_user_creates_a_mind_and_reads_it_back(api: Api, pool: CognitoPool) -> None:
    # Given alice signed in with username and password (what `aws cognito-idp initiate-auth` does)
    tokens = pool.sign_in("alice@example.com")
    # When she creates a mind with her access token
    created = create_mind(api, tokens["AccessToken"])
    assert created.status == 201, created.text
    mind_id = created.json()["mind"]["id"]
    # Then she reads it back, with her id token as well: both carry her pool sub, which owns the mind
    for token in (tokens["AccessToken"], tokens["IdToken"]):
        answer = api.call("GET", f"/minds/{mind_id}", token=token)
        assert answer.status == 200, answer.text
        assert answer.json()["id"] == mind_id


def test_another_users_mind_stays_hidden(api: Api, pool: CognitoPool) -> None:
    # Given alice's mind and bob, another user of the same pool
    pool.add_user("bob@example.com")
    mind_id = create_mind(api, pool.sign_in("alice@example.com")["AccessToken"]).json()["mind"]["id"]
    # Then bob gets the 404 of a mind that does not exist
    assert_error(
        api.call("GET", f"/minds/{mind_id}", token=pool.sign_in("bob@example.com")["AccessToken"]), 404
    )


def test_the_deployed_authorizer_reads_the_app_client_id_from_ssm(
    api: Api, pool: CognitoPool, configure: Configure
) -> None:
    # Given the environment the template gives a function: the SSM parameter's name, not the id
    parameter = "/synapse/synapse-dev/cognito-client-id"
    boto3.client("ssm", region_name="us-east-1").put_parameter(
        Name=parameter, Value=pool.client_id, Type="String"
    )
    configure(SYNAPSE_JWT_CLIENT_ID=None, SYNAPSE_JWT_CLIENT_ID_PARAMETER=parameter)
    # Then alice's token of this client passes, and one of another client is still refused
    assert create_mind(api, pool.sign_in("alice@example.com")["AccessToken"]).status == 201
    other = pool.sign_in("alice@example.com", client_id=pool.add_client())
    assert "app client" in refused(api, other["AccessToken"])
    assert "app client" in refused(api, other["IdToken"])


# ---------------------------------------------------------------- tokens that are refused


def test_tokens_of_another_app_client_are_refused(api: Api, pool: CognitoPool) -> None:
    # Given a second app client in the same pool (same keys, same issuer)
    other = pool.add_client()
    tokens = pool.sign_in("alice@example.com", client_id=other)
    # Then neither its access token (client_id) nor its id token (aud) is accepted
    assert "app client" in refused(api, tokens["AccessToken"])
    assert "app client" in refused(api, tokens["IdToken"])


def test_tokens_of_another_pool_are_refused(api: Api, pool: CognitoPool, jwks_base: str) -> None:
    # Given another pool: moto signs it with the very same key, so only the issuer tells them apart
    other = new_cognito_pool(pool.idp, jwks_base, name="someone-elses-users")
    other.add_user("alice@example.com")
    tokens = other.sign_in("alice@example.com")
    # Then its tokens are refused for their issuer
    assert "iss" in refused(api, tokens["AccessToken"]).lower()
    assert "iss" in refused(api, tokens["IdToken"]).lower()


def test_an_expired_pool_token_is_refused(api: Api, pool: CognitoPool) -> None:
    assert "expired" in refused(api, pool.token("alice@example.com", expires_in=-120))


def test_an_alg_none_token_is_refused(api: Api, pool: CognitoPool) -> None:
    now = int(time.time())
    claims = {
        "iss": pool.issuer,
        "sub": "x",
        "client_id": pool.client_id,
        "token_use": "access",
        "exp": now + 60,
    }
    unsigned = jwt.encode(claims, None, algorithm="none")  # type: ignore[arg-type]
    refused(api, unsigned)
    refused(api, unsigned + "c2lnbmF0dXJl")


@pytest.mark.parametrize(
    "claims",
    [
        {"client_id": "CLIENT"},  # no token_use
        {"client_id": "CLIENT", "token_use": "refresh"},
        {"aud": "CLIENT", "token_use": "access"},  # an access token names its client in client_id
        {"client_id": "CLIENT", "token_use": "id"},  # an id token names it in aud
    ],
)
def test_token_use_and_the_client_claim_must_match(
    api: Api, pool: CognitoPool, claims: dict[str, str]
) -> None:
    named = {name: pool.client_id if value == "CLIENT" else value for name, value in claims.items()}
    refused(api, pool_signed(pool, **named))


def test_a_pool_signed_token_with_every_claim_right_is_accepted(api: Api, pool: CognitoPool) -> None:
    # The control for the case above: the same forging helper with the claims Cognito sets passes
    token = pool_signed(pool, client_id=pool.client_id, token_use="access")
    assert create_mind(api, token).status == 201


def test_a_shared_secret_token_is_refused_in_cognito_mode(api: Api, pool: CognitoPool) -> None:
    refused(api, jwt_for("alice@example.com", iss=pool.issuer, client_id=pool.client_id, token_use="access"))


# ---------------------------------------------------------------- settings


def test_the_pool_jwks_url_follows_from_the_issuer(configure: Configure) -> None:
    issuer = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC"
    settings = configure(
        SYNAPSE_AUTH_MODE="cognito",
        SYNAPSE_JWT_ISSUER=issuer,
        SYNAPSE_JWT_CLIENT_ID="client-1",
        SYNAPSE_JWKS_URL=None,
        SYNAPSE_JWT_AUDIENCE="ignored-in-cognito-mode",
    )
    assert settings.jwks_url == issuer + "/.well-known/jwks.json"
    assert settings.jwt_algorithms == ("RS256", "ES256")
    assert settings.jwt_audience is None


@pytest.mark.parametrize(
    "env",
    [
        {"SYNAPSE_AUTH_MODE": "cognito", "SYNAPSE_JWT_ISSUER": "https://idp", "SYNAPSE_JWT_CLIENT_ID": None},
        {"SYNAPSE_AUTH_MODE": "cognito", "SYNAPSE_JWT_ISSUER": None, "SYNAPSE_JWT_CLIENT_ID": "client-1"},
        {"SYNAPSE_AUTH_MODE": "oidc", "SYNAPSE_JWKS_URL": None, "SYNAPSE_JWT_ISSUER": None},
        {"SYNAPSE_AUTH_MODE": "kerberos"},
    ],
)
def test_an_incomplete_or_unknown_mode_fails_loudly(configure: Configure, env: dict[str, str | None]) -> None:
    with pytest.raises(RuntimeError, match="SYNAPSE_"):
        configure(**env)


def test_shared_secret_mode_ignores_a_jwks_url(configure: Configure) -> None:
    settings = configure(SYNAPSE_AUTH_MODE="shared-secret", SYNAPSE_JWKS_URL="http://127.0.0.1:9/jwks.json")
    assert settings.jwks_url == ""
    assert settings.jwt_algorithms == ("HS256",)


# ---------------------------------------------------------------- an invitation by email (issue 25)


def test_a_cognito_id_token_carries_the_verified_email_an_invitation_needs(
    api: Api, pool: CognitoPool
) -> None:
    # Given an owner who invites alice@example.com, a pool user whose email an admin verified
    pool.add_user("owner@example.com")
    owner = pool.sign_in("owner@example.com")["IdToken"]
    mind_id = create_mind(api, owner, "Team").json()["mind"]["id"]
    made = api.call(
        "POST",
        f"/minds/{mind_id}/invitations",
        token=owner,
        json_body={"role": "editor", "email": "Alice@Example.com"},
    )
    assert made.status == 201, made.text
    body = {"token": made.json()["token"]}
    alice = pool.sign_in("alice@example.com")
    # When she accepts with her access token, Then it is refused: Cognito's access token has no email
    refused_answer = api.call("POST", "/invitations/accept", token=alice["AccessToken"], json_body=body)
    assert assert_error(refused_answer, 403)["details"] == [{"reason": "email_missing"}]
    # When she accepts with moto's id token, which carries her email but not email_verified, Then
    # that is not a verified email either
    unverified = api.call("POST", "/invitations/accept", token=alice["IdToken"], json_body=body)
    assert assert_error(unverified, 403)["details"] == [{"reason": "email_unverified"}]
    # When she accepts with an id token as Cognito issues it for a confirmed email (signed by the pool)
    id_token = pool_signed(
        pool,
        sub="alice-sub",
        token_use="id",
        aud=pool.client_id,
        email="alice@example.com",
        email_verified=True,
    )
    joined = api.call("POST", "/invitations/accept", token=id_token, json_body=body)
    # Then she joins as editor, her verified email recorded
    assert joined.status == 200, joined.text
    assert joined.json()["role"] == "editor"
    members = api.call("GET", f"/minds/{mind_id}/members", token=id_token).json()["members"]
    assert {(m["user_id"], m["email"]) for m in members if m["role"] == "editor"} == {
        ("alice-sub", "alice@example.com")
    }
