"""Cognito's app client id from SSM: the template hands the authorizer and the console the parameter's
name, not the id (a !Ref UserPoolClient in the functions would close a dependency cycle through the
HttpApi), so the id is read on its first use and kept; locally SYNAPSE_JWT_CLIENT_ID is the id itself.

moto plays SSM; the JWKS is served on loopback.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from synapse.api import console
from synapse.auth import tokens
from synapse.core.errors import Unauthorized

from tests.support.jwks import SigningKey, rsa_key, serve_jwks
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture

PARAMETER = "/synapse/synapse-dev/cognito-client-id"
CLIENT_ID = "5example0client0id0abcdefg"
ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbC"
HOSTED_UI = "https://synapse-ab12.auth.us-east-1.amazoncognito.com"


@pytest.fixture
def ssm() -> Iterator[Any]:
    with mock_aws(config={"core": {"reset_boto3_session": False}}):
        yield boto3.client("ssm", region_name="us-east-1")


@pytest.fixture
def key() -> SigningKey:
    return rsa_key()


@pytest.fixture
def deployed(ssm: Any, key: SigningKey, configure: Configure) -> Iterator[Configure]:
    """A cognito-mode function's environment as the template sets it: the parameter's name, no id."""
    with serve_jwks({"keys": [key.jwk()]}) as jwks:

        def apply(**env: str | None) -> Any:
            template_env: dict[str, str | None] = {
                "SYNAPSE_AUTH_MODE": "cognito",
                "SYNAPSE_JWT_ISSUER": ISSUER,
                "SYNAPSE_JWKS_URL": jwks,
                "SYNAPSE_JWT_CLIENT_ID": None,
                "SYNAPSE_JWT_CLIENT_ID_PARAMETER": PARAMETER,
                "SYNAPSE_JWT_AUDIENCE": None,
            }
            return configure(**{**template_env, **env})

        yield apply


def put(ssm: Any, value: str) -> None:
    ssm.put_parameter(Name=PARAMETER, Value=value, Type="String", Overwrite=True)


def cognito_token(key: SigningKey, client_id: str) -> str:
    return key.token(sub="alice", iss=ISSUER, token_use="access", client_id=client_id)


def test_the_settings_name_the_parameter_and_read_it_on_first_use(ssm: Any, deployed: Configure) -> None:
    # Given a cold start before the parameter exists (the settings never ask SSM)
    settings = deployed()
    assert settings.jwt_client_id_parameter == PARAMETER
    # When the stack has written it and the id is first needed
    put(ssm, CLIENT_ID)
    # Then it is the parameter's value
    assert settings.jwt_client_id == CLIENT_ID


def test_the_client_id_is_kept_for_the_containers_life(ssm: Any, deployed: Configure) -> None:
    # Given the id read once
    put(ssm, CLIENT_ID)
    settings = deployed()
    assert settings.jwt_client_id == CLIENT_ID
    # When the parameter changes afterwards
    put(ssm, "another-client")
    # Then the container goes on with the id it read (one SSM call per container)
    assert settings.jwt_client_id == CLIENT_ID


def test_a_failed_read_is_not_kept(ssm: Any, deployed: Configure) -> None:
    # Given a request while the parameter does not exist yet (mid first deploy)
    settings = deployed()
    with pytest.raises(ClientError, match="ParameterNotFound"):
        _ = settings.jwt_client_id
    # When it exists, the next use reads it
    put(ssm, CLIENT_ID)
    assert settings.jwt_client_id == CLIENT_ID


def test_the_direct_setting_is_used_without_asking_ssm(ssm: Any, deployed: Configure) -> None:
    # Given the id itself (local runs, tests) beside a name no parameter has
    settings = deployed(SYNAPSE_JWT_CLIENT_ID="local-client")
    # Then the id is the setting, and SSM (which would answer ParameterNotFound) is not asked
    assert settings.jwt_client_id == "local-client"


def test_a_cognito_token_is_checked_against_the_client_id_in_the_parameter(
    ssm: Any, key: SigningKey, deployed: Configure
) -> None:
    # Given a deployed authorizer's environment and the stack's parameter
    put(ssm, CLIENT_ID)
    deployed()
    # Then a token issued to that client passes, and one issued to another client is refused
    assert tokens.decode_jwt(cognito_token(key, CLIENT_ID))["sub"] == "alice"
    with pytest.raises(Unauthorized, match="another app client"):
        tokens.decode_jwt(cognito_token(key, "someone-elses-client"))


def test_a_cognito_token_is_not_accepted_while_the_client_id_is_unreadable(
    ssm: Any, key: SigningKey, deployed: Configure
) -> None:
    # Given no parameter (or no permission to read it)
    deployed()
    # Then the token is not waved through: the check fails instead of passing
    with pytest.raises(ClientError):
        tokens.decode_jwt(cognito_token(key, CLIENT_ID))


def test_config_json_hands_the_page_the_client_id_from_the_parameter(ssm: Any, deployed: Configure) -> None:
    # Given the console's environment in a cognito stack
    put(ssm, CLIENT_ID)
    deployed(SYNAPSE_CONSOLE_COGNITO_DOMAIN=HOSTED_UI)
    # Then config.json names the hosted UI and the client the parameter holds
    assert console.config()["cognito"] == {"domain": HOSTED_UI, "client_id": CLIENT_ID}


def test_cognito_mode_needs_the_client_id_or_its_parameter(configure: Configure) -> None:
    with pytest.raises(RuntimeError, match="SYNAPSE_JWT_CLIENT_ID_PARAMETER"):
        configure(
            SYNAPSE_AUTH_MODE="cognito",
            SYNAPSE_JWT_ISSUER=ISSUER,
            SYNAPSE_JWT_CLIENT_ID=None,
            SYNAPSE_JWT_CLIENT_ID_PARAMETER=None,
        )
