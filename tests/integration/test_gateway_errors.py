"""Requests no route matches, through the in-process gateway: it sends them to the template's
`$default` function, as API Gateway does, so they get SPEC's 404, or 405 with `Allow`, with a
request id, and never the bare `{"message": "Not Found"}`."""

from __future__ import annotations

import pytest

from tests.support.api import Api, MindHandle
from tests.support.checks import assert_error


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/nothing/here"),
        ("POST", "/"),
        ("GET", "/minds/"),
        ("POST", "/memory/"),
        ("GET", "/minds/m_1/keys/k_1/extra"),
        ("DELETE", "/hooks"),
    ],
)
def test_an_unknown_route_is_a_404_in_the_envelope(api: Api, method: str, path: str) -> None:
    answer = api.call(method, path)
    error = assert_error(answer, 404)
    assert error["code"] == "not_found" and "Allow" not in answer.headers


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PATCH", "/memory", "GET, POST"),
        ("DELETE", "/minds", "GET, POST"),
        ("PUT", "/minds/m_1", "DELETE, GET, PATCH"),
        ("GET", "/hooks/hook_1", "POST"),
        ("HEAD", "/memory/recall", "DELETE, GET, PUT"),
        ("OPTIONS", "/minds", "GET, POST"),
    ],
)
def test_a_known_path_with_another_method_is_a_405_with_allow(
    api: Api, method: str, path: str, allowed: str
) -> None:
    answer = api.call(method, path)
    error = assert_error(answer, 405)
    assert error["code"] == "method_not_allowed"
    assert answer.headers["Allow"] == allowed
    assert error["details"] == [{"allowed": allowed.split(", ")}]


def test_the_front_door_sends_a_browser_to_the_console_and_an_agent_to_the_api(api: Api) -> None:
    # Given the address the runner's banner prints, When a browser opens it, Then it goes to the console
    opened = api.call("GET", "/", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert opened.status == 302 and opened.headers["Location"] == "/console"
    # When an agent (or curl) asks, Then it reads where the console, the API document and /mcp are
    asked = api.call("GET", "/")
    assert asked.status == 200 and asked.json()["openapi"] == "/openapi.json"
    assert api.call("GET", asked.json()["openapi"]).status == 200


def test_the_answer_does_not_depend_on_the_credential(api: Api, mind: MindHandle) -> None:
    # An unmatched route is answered before any authorizer: the same with a key, a JWT or nothing
    answers = [
        api.call("PATCH", "/memory", token=token).json()["error"] for token in (None, mind.key, mind.jwt)
    ]
    assert len({(a["code"], a["message"]) for a in answers}) == 1


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()
