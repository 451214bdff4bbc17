"""What the runner answers by itself or passes through unchanged: auth, unknown routes, size limits."""

from __future__ import annotations

import json
import time

from tests.e2e.conftest import Http
from tests.support.api import MindHandle, memory_body
from tests.support.runner import RunningService


def test_no_credentials_is_401_with_www_authenticate(http: Http) -> None:
    answer = http.call("GET", "/memory")
    assert answer.status_code == 401, answer.text
    assert answer.headers["WWW-Authenticate"].startswith("Bearer")
    assert answer.json()["error"]["code"]


def test_unknown_route_is_404(http: Http, mind: MindHandle) -> None:
    # (a known path with another method is a 405: tests/e2e/test_http_front.py)
    for method, path in [("GET", "/nothing/here"), ("GET", "/minds/"), ("GET", "/minds/m_1/keys/x/y")]:
        answer = http.call(method, path, token=mind.key)
        assert answer.status_code == 404, (method, path, answer.text)
        assert answer.json()["error"]["code"] == "not_found" and answer.json()["request_id"]


def test_body_over_the_runner_limit_is_413_unread(http: Http, mind: MindHandle) -> None:
    answer = http.call(
        "POST",
        "/memory",
        token=mind.key,
        data=b"x" * (2 * 1024 * 1024),
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 413


def test_body_over_64_kib_is_413_from_the_handler(http: Http, mind: MindHandle) -> None:
    answer = http.call("POST", "/memory", token=mind.key, json_body=memory_body(content="x" * 70_000))
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"]["code"]


def test_mind_keys_never_reach_the_runner_output(
    http: Http, mind: MindHandle, runner: RunningService
) -> None:
    # Given a key that created the mind and then stored, read and listed memories
    assert http.call("POST", "/memory", token=mind.key, json_body=memory_body()).status_code == 201
    assert http.call("GET", "/memory", headers={"X-Mind-Key": mind.key}).status_code == 200
    extra = http.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": "ci"})
    assert extra.status_code == 201, extra.text
    assert http.call("GET", "/memory", token="mk_wrong_" + mind.key[3:]).status_code == 401
    # When the runner has written its logs for those requests
    deadline = time.monotonic() + 5
    while "POST /minds/" not in runner.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    # Then neither key appears anywhere in what it printed
    output = runner.output()
    assert f"POST /minds/{mind.id}/keys 201" in output
    assert mind.key not in output and mind.key[3:] not in output
    assert extra.json()["key"] not in output


def test_a_chunked_body_is_read_like_any_other(http: Http, mind: MindHandle) -> None:
    # Given a body sent with Transfer-Encoding: chunked (requests does that for a generator)
    body = json.dumps(memory_body(key="chunked_body", content="Came in pieces")).encode()
    pieces = (body[i : i + 7] for i in range(0, len(body), 7))
    answer = http.call(
        "POST", "/memory", token=mind.key, data=pieces, headers={"Content-Type": "application/json"}
    )
    # Then it is stored as if it had come with a Content-Length
    assert answer.status_code == 201, answer.text
    assert answer.json()["content"] == "Came in pieces"


def test_a_chunked_body_over_the_runner_limit_is_413(http: Http, mind: MindHandle) -> None:
    pieces = (b"x" * 65536 for _ in range(40))
    answer = http.call(
        "POST", "/memory", token=mind.key, data=pieces, headers={"Content-Type": "application/json"}
    )
    assert answer.status_code == 413
