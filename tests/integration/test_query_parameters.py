"""Unknown query parameters are refused on every route (issue 42 item 4, SPEC §3 Errors): a 400 naming
the parameter and the ones the route takes, so a filter the service does not have (`?since=`) is never
silently ignored. Driven from template.yaml, so a new route cannot be forgotten; the OAuth endpoints
whose RFCs say to ignore unknown parameters, and the console's page, are the exceptions
(`routes.IGNORES_UNKNOWN_QUERY`)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from synapse.api.routes import IGNORES_UNKNOWN_QUERY, ROUTE_QUERIES
from synapse.openapi import document

from infra import template
from infra.gateway import HttpResponse
from tests.support.api import Api, MindHandle
from tests.support.checks import assert_error

ROUTES = sorted(template.routes(), key=lambda route: route.route_key)


# Parameters this round adds that the OpenAPI document does not name yet: each helper adding one
# documents it with its behaviour (after merging: this is empty).
@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def call(api: Api, mind: MindHandle, route: template.Route, query: dict[str, Any]) -> HttpResponse:
    """The route called by the mind's owner, its path's parameters filled in (the mind's own id)."""
    path = route.path.replace("{mind_id}", mind.id).replace("{proxy+}", "app.js")
    path = re.sub(r"\{\w+\}", "x_1", path)
    headers = {"X-Mind-Id": mind.id, "Accept": "application/json, text/event-stream"}
    return api.call(route.method, path, token=mind.jwt, headers=headers, query=query)


@pytest.mark.parametrize("route", ROUTES, ids=lambda route: route.route_key)
def test_every_route_refuses_an_unknown_parameter_naming_it_and_the_known_ones(
    api: Api, mind: MindHandle, route: template.Route
) -> None:
    # When the route is called with a parameter it does not take
    answer = call(api, mind, route, {"bogus": "1"})
    # Then it is a 400 naming it, whose details list what the route takes; nothing ran
    if route.route_key in IGNORES_UNKNOWN_QUERY:
        assert "bogus" not in answer.text, (route.route_key, answer.status, answer.text[:300])
        return
    if route.path == "/mcp":  # refused in the transport's terms: a JSON-RPC error
        assert answer.status == 400, answer.text
        error = answer.json()["error"]
        error["details"] = error["data"]["details"]
        assert error["message"].startswith("bogus: unknown query parameter"), error
    else:
        error = assert_error(answer, 400, field="bogus", rule="unknown")
    assert error["details"][0]["known"] == list(ROUTE_QUERIES[route.route_key])
    assert route.route_key in error["message"]


@pytest.mark.parametrize("route", [r for r in ROUTES if r.method == "GET"], ids=lambda route: route.route_key)
def test_every_parameter_a_route_takes_passes_the_check(
    api: Api, mind: MindHandle, route: template.Route
) -> None:
    # When a read is called with every parameter it takes (values it may still refuse for their form)
    answer = call(api, mind, route, dict.fromkeys(ROUTE_QUERIES[route.route_key], "1"))
    # Then none of them is refused as unknown
    error = answer.json().get("error") if answer.status == 400 else None  # OAuth's is a string
    details = error.get("details", []) if isinstance(error, dict) else []
    assert [d for d in details if d.get("rule") == "unknown"] == [], (route.route_key, details)


def test_since_is_refused_on_the_list(api: Api, mind: MindHandle) -> None:
    # The probe of issue 42: `since` was silently ignored
    answer = api.call("GET", "/memory", token=mind.key, query={"since": "2026-12-01"})
    error = assert_error(answer, 400, field="since", rule="unknown")
    assert "updated_after" in error["message"] and "after" in error["details"][0]["known"]


def test_a_hook_delivery_with_an_unknown_parameter_stores_nothing(api: Api, mind: MindHandle) -> None:
    # Given a hook; When a delivery names a parameter (it is refused before its signature is read)
    hook = api.call("POST", f"/minds/{mind.id}/hooks", token=mind.jwt, json_body={}).json()
    answer = api.call("POST", f"/hooks/{hook['id']}", query={"mind": "x"}, json_body={"content": "x"})
    assert_error(answer, 400, field="mind", rule="unknown")


def test_the_openapi_document_names_the_parameters_each_route_takes() -> None:
    # Given the served document's query parameters per operation
    documented = {
        f"{method.upper()} {path}": {p["name"] for p in op.get("parameters", []) if p.get("in") == "query"}
        for path, operations in document.document()["paths"].items()
        for method, op in operations.items()
        if method != "parameters"
    }
    # Then they are what the routes take (but this round's new ones, documented by who adds them)
    taken = {key: set(names) for key, names in ROUTE_QUERIES.items()}
    assert {key: names for key, names in documented.items() if names != taken[key]} == {}
