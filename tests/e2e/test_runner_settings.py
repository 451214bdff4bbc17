"""The runner honours the JWT settings a developer gives it, and its printed JWT follows them."""

from __future__ import annotations

from pathlib import Path

import jwt
import pytest

from tests.e2e.conftest import Http
from tests.support.api import jwt_for
from tests.support.runner import start_runner

SECRET = "e2e-own-secret-0123456789abcdef0123456789"


def test_printed_jwt_follows_the_configured_secret_issuer_and_audience(tmp_path: Path) -> None:
    # Given a runner with its own HS256 secret, issuer and audience
    settings = {
        "SYNAPSE_JWT_SECRET": SECRET,
        "SYNAPSE_JWT_ISSUER": "https://issuer.example",
        "SYNAPSE_JWT_AUDIENCE": "synapse-e2e",
    }
    service = start_runner(tmp_path / "data", tmp_path / "runner.log", env=settings)
    try:
        http = Http(service.url)
        # Then the JWT it printed is signed with that secret and names that issuer and audience
        claims = jwt.decode(
            service.jwt, SECRET, algorithms=["HS256"], audience="synapse-e2e", issuer="https://issuer.example"
        )
        assert claims["sub"] == "local-user"
        # And it is accepted, while a token without the audience is not
        assert http.call("POST", "/minds", token=service.jwt, json_body={"name": "A"}).status_code == 201
        no_audience = jwt_for("local-user", secret=SECRET, iss="https://issuer.example")
        refused = http.call("GET", "/minds", token=no_audience)
        assert refused.status_code == 401, refused.text
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    finally:
        assert service.stop() == 0, service.output()


def test_a_bad_port_is_refused_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="PORT must be a port number") as refused:
        start_runner(tmp_path / "data", tmp_path / "runner.log", env={"PORT": "http"})
    assert "exited with 2" in str(refused.value)
