"""The runner honours the settings a developer gives it: JWT settings (its printed JWT follows them),
PORT and the embedded store (SYNAPSE_LOCAL_STORE, and what happens without java)."""

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


def test_an_unknown_local_store_is_refused_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="SYNAPSE_LOCAL_STORE must be dynamodb-local or moto") as refused:
        start_runner(tmp_path / "data", tmp_path / "runner.log", env={"SYNAPSE_LOCAL_STORE": "sqlite"})
    assert "exited with 2" in str(refused.value)


def test_without_java_the_runner_falls_back_to_moto_with_a_warning(tmp_path: Path) -> None:
    # Given no java on PATH (the runner's python is started by its full path)
    no_java = {"PATH": str(tmp_path / "empty-bin"), "SYNAPSE_LOCAL_STORE": ""}
    service = start_runner(tmp_path / "data", tmp_path / "runner.log", env=no_java)
    try:
        # Then it serves on moto and says that a crash loses the most recent writes
        assert service.store.startswith("embedded moto"), service.output()
        assert "java is not on PATH" in service.output()
        assert "a crash or kill -9 loses the most recent writes" in service.output()
        assert Http(service.url).call("POST", "/minds", token=service.jwt, json_body={"name": "A"}).ok
    finally:
        assert service.stop() == 0, service.output()


def test_asking_for_dynamodb_local_without_java_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    no_java = {"PATH": str(tmp_path / "empty-bin"), "SYNAPSE_LOCAL_STORE": "dynamodb-local"}
    with pytest.raises(RuntimeError, match="java is not on PATH") as refused:
        start_runner(tmp_path / "data", tmp_path / "runner.log", env=no_java)
    assert "exited with 2" in str(refused.value)
