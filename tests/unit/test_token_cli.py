"""`python -m infra.token`: an operator mints a short-lived HS256 token from the stack's generated secret
(moto plays Secrets Manager and CloudFormation), and the authorizer's JWT check accepts it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import jwt
import pytest
from moto import mock_aws
from synapse.auth import tokens
from synapse.core.errors import Unauthorized

from infra import token
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture

GENERATED_SECRET = "generated-by-the-stack-0123456789abcdef0123456789"


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws(config={"core": {"reset_boto3_session": False}}):
        yield


@pytest.fixture
def secret_arn(aws: None) -> str:
    client = boto3.client("secretsmanager", region_name="us-east-1")
    arn: str = client.create_secret(Name="synapse-dev/jwt-secret", SecretString=GENERATED_SECRET)["ARN"]
    return arn


def stack(name: str, outputs: dict[str, Any]) -> None:
    """A stack with the given outputs (moto's CloudFormation cannot create the secret itself)."""
    template = {
        "Resources": {"Placeholder": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    cloudformation = boto3.client("cloudformation", region_name="us-east-1")
    cloudformation.create_stack(StackName=name, TemplateBody=json.dumps(template))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = token.main([*argv, "--region", "us-east-1"])
    captured = capsys.readouterr()
    return code, captured.out.strip(), captured.err


def test_a_token_from_the_stack_output_is_accepted_by_a_shared_secret_deployment(
    secret_arn: str, configure: Configure, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a shared-secret stack whose JwtSecretArn output names its generated secret
    stack("synapse-dev", {"JwtSecretArn": secret_arn})
    # When an operator mints a token for alice
    code, printed, _ = run(capsys, "--stack", "synapse-dev", "--sub", "alice", "--ttl", "600")
    # Then stdout is the token alone, alive for exactly the ttl
    assert code == 0
    claims = jwt.decode(printed, GENERATED_SECRET, algorithms=["HS256"])
    assert claims["sub"] == "alice"
    assert claims["exp"] - claims["iat"] == 600
    # And a deployment reading that same secret by ARN accepts it
    configure(SYNAPSE_AUTH_MODE="shared-secret", SYNAPSE_JWT_SECRET=None, SYNAPSE_JWT_SECRET_ARN=secret_arn)
    assert tokens.decode_jwt(printed)["sub"] == "alice"


def test_a_token_from_a_secret_arn(secret_arn: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, printed, err = run(capsys, "--secret-arn", secret_arn, "--sub", "bob")
    assert code == 0
    claims = jwt.decode(printed, GENERATED_SECRET, algorithms=["HS256"])
    assert (claims["sub"], claims["exp"] - claims["iat"]) == ("bob", 3600)
    assert "bob" in err and printed not in err


def test_issuer_and_audience_are_added_when_given(
    secret_arn: str, configure: Configure, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a deployment that checks iss and aud
    configure(
        SYNAPSE_JWT_SECRET=None,
        SYNAPSE_JWT_SECRET_ARN=secret_arn,
        SYNAPSE_JWT_ISSUER="https://synapse.example",
        SYNAPSE_JWT_AUDIENCE="synapse",
    )
    _, bare, _ = run(capsys, "--secret-arn", secret_arn, "--sub", "carol")
    _, named, _ = run(
        capsys,
        "--secret-arn",
        secret_arn,
        "--sub",
        "carol",
        "--issuer",
        "https://synapse.example",
        "--audience",
        "synapse",
    )
    # Then only the token with both passes
    with pytest.raises(Unauthorized):
        tokens.decode_jwt(bare)
    assert tokens.decode_jwt(named)["sub"] == "carol"


def test_a_stack_without_the_output_is_explained(aws: None, capsys: pytest.CaptureFixture[str]) -> None:
    # Given a stack deployed in cognito mode (no generated JWT secret)
    stack("synapse-cognito", {"UserPoolId": "us-east-1_x"})
    code, printed, err = run(capsys, "--stack", "synapse-cognito", "--sub", "alice")
    assert (code, printed) == (2, "")
    assert "JwtSecretArn" in err and "shared-secret" in err


def test_a_missing_stack_or_secret_is_an_error_not_a_traceback(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (
        ["--stack", "nowhere"],
        ["--secret-arn", "arn:aws:secretsmanager:us-east-1:123456789012:secret:x"],
    ):
        code, printed, err = run(capsys, *argv, "--sub", "alice")
        assert (code, printed) == (2, "")
        assert err.startswith("infra.token: ")


@pytest.mark.parametrize(("sub", "ttl"), [("", "60"), ("u" * 257, "60"), ("alice", "0"), ("alice", "86401")])
def test_sub_and_ttl_are_bounded(
    secret_arn: str, capsys: pytest.CaptureFixture[str], sub: str, ttl: str
) -> None:
    code, printed, err = run(capsys, "--secret-arn", secret_arn, "--sub", sub, "--ttl", ttl)
    assert (code, printed) == (2, "")
    assert "--sub" in err or "--ttl" in err


def test_one_source_of_the_secret_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        token.main(["--sub", "alice"])
    with pytest.raises(SystemExit):
        token.main(["--sub", "alice", "--stack", "s", "--secret-arn", "a"])
