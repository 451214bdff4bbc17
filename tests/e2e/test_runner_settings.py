"""The runner honours the settings a developer gives it: JWT settings (its printed JWT follows them),
PORT, the embedded store (SYNAPSE_LOCAL_STORE, and what happens without java: the fallback to moto is
test_persistence.py's first start) and the Host names it answers to (loopback only, DNS rebinding;
SYNAPSE_ALLOWED_HOSTS). One runner carries the JWT settings and the allowed hosts (a start each
cost seconds, and neither setting touches what the other checks)."""

from __future__ import annotations

import socket
from pathlib import Path

import jwt
import pytest

from tests.e2e.conftest import Http
from tests.support.api import jwt_for
from tests.support.runner import RunningService, SharedStore, start_runner

SECRET = "e2e-own-secret-0123456789abcdef0123456789"
REBOUND = {"Host": "attacker.example:3000"}


def test_printed_jwt_follows_the_configured_jwt_settings_and_allowed_hosts_are_answered(
    tmp_path: Path, shared_store: SharedStore
) -> None:
    # Given a runner with its own HS256 secret, issuer and audience, told it is also reached as
    # synapse.test (a proxy, /etc/hosts), its tables in the shared store
    settings = shared_store.env("settings") | {
        "SYNAPSE_JWT_SECRET": SECRET,
        "SYNAPSE_JWT_ISSUER": "https://issuer.example",
        "SYNAPSE_JWT_AUDIENCE": "synapse-e2e",
        "SYNAPSE_ALLOWED_HOSTS": "synapse.test",
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
        # And synapse.test is answered, while other names still are not
        assert http.call("GET", "/minds", token=service.jwt, headers={"Host": "synapse.test"}).ok
        assert http.call("GET", "/minds", token=service.jwt, headers=REBOUND).status_code == 421
    finally:
        assert service.stop() == 0, service.output()


def test_a_bad_port_is_refused_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="PORT must be a port number") as refused:
        start_runner(tmp_path / "data", tmp_path / "runner.log", env={"PORT": "http"})
    assert "exited with 2" in str(refused.value)


def test_a_port_in_use_is_refused_before_the_store_starts(tmp_path: Path) -> None:
    # Given a port something else listens on
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        # When a runner is told to serve there
        with pytest.raises(RuntimeError, match=f"cannot listen on 127.0.0.1:{port}") as refused:
            start_runner(tmp_path / "data", tmp_path / "runner.log", env={"PORT": str(port)})
    # Then it says so and exits 2 before it starts a store: the port is the API's from its first
    # step, so nothing the runner connects to while it starts can take it (the store's clients use
    # ephemeral source ports from the range a test's free port came from)
    assert "exited with 2" in str(refused.value)
    assert "Imported" not in str(refused.value) and "DynamoDB Local" not in str(refused.value)
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())


def test_an_unknown_local_store_is_refused_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="SYNAPSE_LOCAL_STORE must be dynamodb-local or moto") as refused:
        start_runner(tmp_path / "data", tmp_path / "runner.log", env={"SYNAPSE_LOCAL_STORE": "sqlite"})
    assert "exited with 2" in str(refused.value)


def test_asking_for_dynamodb_local_without_java_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    no_java = {"PATH": str(tmp_path / "empty-bin"), "SYNAPSE_LOCAL_STORE": "dynamodb-local"}
    with pytest.raises(RuntimeError, match="java is not on PATH") as refused:
        start_runner(tmp_path / "data", tmp_path / "runner.log", env=no_java)
    assert "exited with 2" in str(refused.value)


def test_a_page_rebound_to_loopback_gets_421_not_the_dev_token_or_the_api(runner: RunningService) -> None:
    http = Http(runner.url)
    port = runner.url.rsplit(":", 1)[1]
    # Given the runner's console sign-in and API, answered to its own loopback names
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", "localhost"):
        signin = http.call("GET", "/console/dev-token.json", headers={"Host": host})
        assert signin.status_code == 200 and signin.json()["token"], (host, signin.text)
        assert http.call("GET", "/minds", token=runner.jwt, headers={"Host": host}).status_code == 200
    # When a page whose name now resolves to 127.0.0.1 asks (its browser sends its own Host)
    for method, path in (("GET", "/console/dev-token.json"), ("GET", "/minds"), ("POST", "/minds")):
        refused = http.call(method, path, token=runner.jwt, headers=REBOUND, json_body={"name": "Stolen"})
        # Then it is refused with 421 in the error envelope, before any route: no token, no data
        assert refused.status_code == 421, refused.text
        assert refused.json()["error"]["code"] == "misdirected_request"
        assert "token" not in refused.json() and "minds" not in refused.json()
    names = [m["name"] for m in http.call("GET", "/minds", token=runner.jwt).json()["minds"]]
    assert "Stolen" not in names
