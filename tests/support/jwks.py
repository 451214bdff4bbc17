"""An identity provider in miniature: RSA and EC signing keys, and their JWKS served on loopback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm


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


@pytest.fixture(name="jwks", scope="module")
def jwks_fixture() -> Iterator[Jwks]:
    """A JWKS with one RSA and one EC key at http://127.0.0.1:<port>/.well-known/jwks.json."""
    keys = [rsa_key(), ec_key()]
    document = json.dumps({"keys": [k.jwk() for k in keys]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(document)))
            self.end_headers()
            self.wfile.write(document)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Jwks(f"http://127.0.0.1:{server.server_port}/.well-known/jwks.json", keys)
    finally:
        server.shutdown()
        server.server_close()
