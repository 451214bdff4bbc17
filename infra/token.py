"""Mint a short-lived JWT for a person, in a stack deployed with `AuthMode=shared-secret`.

    .venv/bin/python -m infra.token --stack synapse-dev --sub alice --ttl 3600
    .venv/bin/python -m infra.token --secret-arn arn:aws:secretsmanager:… --sub alice

It reads the HS256 secret the stack generated (its output `JwtSecretArn`, or the ARN given) from
Secrets Manager with the caller's AWS credentials, so only someone allowed
`secretsmanager:GetSecretValue` on that secret can issue tokens. The token goes to stdout alone
(`TOKEN=$(… -m infra.token …)`); everything else to stderr. Cognito and OIDC stacks get their tokens
from the identity provider instead: docs/auth.md.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from typing import Any

import boto3
import jwt
from botocore.exceptions import BotoCoreError, ClientError

STACK_OUTPUT = "JwtSecretArn"
MAX_TTL = 24 * 3600  # an operator's token is for a session, not a standing credential
SUB_MAX_CHARS = 256  # as the authorizer accepts (synapse.auth.tokens)


class TokenError(Exception):
    """Something an operator can fix: printed without a traceback."""


def secret_arn_of_stack(cloudformation: Any, stack: str) -> str:
    stacks = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
    if STACK_OUTPUT not in outputs:
        raise TokenError(
            f"stack {stack!r} has no {STACK_OUTPUT} output: it is not deployed with AuthMode=shared-secret "
            "(Cognito and OIDC stacks take tokens from their identity provider, docs/auth.md)"
        )
    return str(outputs[STACK_OUTPUT])


def read_secret(secretsmanager: Any, arn: str) -> str:
    value: str = secretsmanager.get_secret_value(SecretId=arn)["SecretString"]
    return value


def mint(secret: str, sub: str, ttl: int, issuer: str | None = None, audience: str | None = None) -> str:
    if not 1 <= len(sub) <= SUB_MAX_CHARS:
        raise TokenError(f"--sub must be 1-{SUB_MAX_CHARS} characters")
    if not 1 <= ttl <= MAX_TTL:
        raise TokenError(f"--ttl must be 1-{MAX_TTL} seconds")
    now = int(time.time())
    claims: dict[str, Any] = {"sub": sub, "iat": now, "exp": now + ttl, "jti": str(uuid.uuid4())}
    if issuer:
        claims["iss"] = issuer
    if audience:
        claims["aud"] = audience
    return jwt.encode(claims, secret, algorithm="HS256")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m infra.token", description="Mint a short-lived HS256 JWT in a shared-secret stack."
    )
    parser.add_argument("--sub", required=True, help="the user id the token names (it owns minds)")
    parser.add_argument("--ttl", type=int, default=3600, help=f"lifetime in seconds (max {MAX_TTL})")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--stack", help=f"CloudFormation stack whose {STACK_OUTPUT} output names the secret")
    where.add_argument("--secret-arn", help="the JWT secret's ARN in Secrets Manager")
    parser.add_argument("--region", help="AWS region (default: your AWS configuration's)")
    parser.add_argument("--issuer", help="iss claim, if the stack sets SYNAPSE_JWT_ISSUER")
    parser.add_argument("--audience", help="aud claim, if the stack sets SYNAPSE_JWT_AUDIENCE")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    session = boto3.session.Session(region_name=args.region)
    try:
        arn = args.secret_arn or secret_arn_of_stack(session.client("cloudformation"), args.stack)
        secret = read_secret(session.client("secretsmanager"), arn)
        token = mint(secret, args.sub, args.ttl, args.issuer, args.audience)
    except (TokenError, ClientError, BotoCoreError) as error:  # no stack, no access, no credentials, …
        print(f"infra.token: {error}", file=sys.stderr)
        return 2
    print(token)
    print(f"infra.token: HS256 token for sub {args.sub!r}, valid {args.ttl} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
