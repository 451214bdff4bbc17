"""An identity provider in miniature: RSA and EC signing keys, and their JWKS served on loopback; and
moto's Cognito as a user pool that signs real tokens (its JWKS served the same way)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from moto.cognitoidp.models import cognitoidp_backends
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.utilities.utils import load_resource

from infra import template


@dataclass
class SigningKey:
    kid: str
    algorithm: str
    private: Any

    def jwk(self) -> dict[str, Any]:
        codec = RSAAlgorithm if self.algorithm.startswith("RS") else ECAlgorithm
        public: dict[str, Any] = codec.to_jwk(self.private.public_key(), as_dict=True)
        return {**public, "kid": self.kid, "alg": self.algorithm, "use": "sig"}

    def token(self, sub: str = "user-1", ttl: int = 3600, **claims: Any) -> str:
        now = int(time.time())
        payload = {"sub": sub, "iat": now, "exp": now + ttl, **claims}
        return jwt.encode(payload, self.private, algorithm=self.algorithm, headers={"kid": self.kid})


def rsa_key(kid: str = "rsa-1") -> SigningKey:
    return SigningKey(kid, "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))


def ec_key(kid: str = "ec-1") -> SigningKey:
    return SigningKey(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))


@dataclass
class Jwks:
    url: str
    keys: list[SigningKey]


@contextmanager
def serve_jwks(document: dict[str, Any]) -> Iterator[str]:
    """http://127.0.0.1:<port>, answering every GET path with this JWKS document."""
    body = json.dumps(document).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # A short poll, so shutting the server down after each test takes milliseconds, not half a second
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(name="jwks", scope="module")
def jwks_fixture() -> Iterator[Jwks]:
    """A JWKS with one RSA and one EC key at http://127.0.0.1:<port>/.well-known/jwks.json."""
    keys = [rsa_key(), ec_key()]
    with serve_jwks({"keys": [k.jwk() for k in keys]}) as base:
        yield Jwks(f"{base}/.well-known/jwks.json", keys)


# ---------------------------------------------------------------- Cognito (moto)

COGNITO_PASSWORD = "Correct-horse-battery-9"
# Copied from the template's pool and app client, so moto's pool signs people in the way the stack's does
POOL_PROPERTIES = ("UsernameAttributes", "AutoVerifiedAttributes", "Policies")
CLIENT_PROPERTIES = (
    "GenerateSecret",
    "ExplicitAuthFlows",
    "AllowedOAuthFlowsUserPoolClient",
    "AllowedOAuthFlows",
    "AllowedOAuthScopes",
    "SupportedIdentityProviders",
)


@cache
def stack_cognito(kind: str, names: tuple[str, ...]) -> dict[str, Any]:
    """The template's properties of its one resource of this kind, those named only."""
    (resource,) = template.resources(kind).values()
    return {name: resource["Properties"][name] for name in names if name in resource["Properties"]}


def moto_cognito_jwks() -> dict[str, Any]:
    """The public JWKS moto signs every pool's tokens with (its own bundled key, kid "dummy")."""
    document: dict[str, Any] = load_resource("cognitoidp/resources/jwks-public.json")
    return document


def moto_cognito_private_key() -> Any:
    """moto's bundled signing key: for tokens with claims moto would never issue."""
    return RSAAlgorithm.from_jwk(json.dumps(load_resource("cognitoidp/resources/jwks-private.json")))


@dataclass
class CognitoPool:
    """A moto user pool with one app client, its JWKS served on loopback under the pool's id."""

    idp: Any  # boto3 cognito-idp client
    pool_id: str
    client_id: str
    jwks_base: str
    region: str = "us-east-1"

    @property
    def issuer(self) -> str:
        return f"https://cognito-idp.{self.region}.amazonaws.com/{self.pool_id}"

    @property
    def jwks_url(self) -> str:
        return f"{self.jwks_base}/{self.pool_id}/.well-known/jwks.json"

    def add_client(self, name: str = "another-app") -> str:
        properties = stack_cognito("AWS::Cognito::UserPoolClient", CLIENT_PROPERTIES)
        client = self.idp.create_user_pool_client(UserPoolId=self.pool_id, ClientName=name, **properties)
        client_id: str = client["UserPoolClient"]["ClientId"]
        return client_id

    def add_user(self, email: str, password: str = COGNITO_PASSWORD) -> None:
        """A user as an admin creates one in a pool without self sign-up (docs/deploy.md)."""
        self.idp.admin_create_user(
            UserPoolId=self.pool_id,
            Username=email,
            UserAttributes=[{"Name": "email", "Value": email}, {"Name": "email_verified", "Value": "true"}],
            MessageAction="SUPPRESS",
        )
        self.idp.admin_set_user_password(
            UserPoolId=self.pool_id, Username=email, Password=password, Permanent=True
        )

    def sign_in(
        self, username: str, password: str = COGNITO_PASSWORD, client_id: str | None = None
    ) -> dict[str, Any]:
        """USER_PASSWORD_AUTH, as `aws cognito-idp initiate-auth` does: AccessToken, IdToken, …"""
        answer = self.idp.initiate_auth(
            ClientId=client_id or self.client_id,
            AuthFlow="USER_PASSWORD_AUTH",
            AuthParameters={"USERNAME": username, "PASSWORD": password},
        )
        result: dict[str, Any] = answer["AuthenticationResult"]
        return result

    def admin_sign_in(self, username: str, password: str = COGNITO_PASSWORD) -> dict[str, Any]:
        answer = self.idp.admin_initiate_auth(
            UserPoolId=self.pool_id,
            ClientId=self.client_id,
            AuthFlow="ADMIN_USER_PASSWORD_AUTH",
            AuthParameters={"USERNAME": username, "PASSWORD": password},
        )
        result: dict[str, Any] = answer["AuthenticationResult"]
        return result

    def token(self, username: str, token_use: str = "access", expires_in: int = 3600) -> str:  # noqa: S107
        """A token exactly as the pool signs them, with any lifetime (a negative one is expired)."""
        pool = cognitoidp_backends[DEFAULT_ACCOUNT_ID][self.region].user_pools[self.pool_id]
        token, _ = pool.create_jwt(self.client_id, username, token_use, expires_in=expires_in)
        return str(token)


def new_cognito_pool(idp: Any, jwks_base: str, name: str = "synapse-users") -> CognitoPool:
    """A pool and app client built with the template's own properties (`UserPool`, `UserPoolClient`)."""
    pool_properties = stack_cognito("AWS::Cognito::UserPool", POOL_PROPERTIES)
    pool_id: str = idp.create_user_pool(PoolName=name, **pool_properties)["UserPool"]["Id"]
    created = CognitoPool(idp, pool_id, "", jwks_base)
    created.client_id = created.add_client("synapse")
    return created
