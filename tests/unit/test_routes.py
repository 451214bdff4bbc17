"""The layer's route table (synapse.api.routes) is template.yaml's, and renders unmatched requests
as SPEC's errors: 404 for an unknown path, 405 with `Allow` for a known one."""

from __future__ import annotations

import pytest
from synapse.api import routes
from synapse.api.routes import MethodNotAllowed
from synapse.core.errors import BadRequest, NotFound

from infra import template


def test_route_table_equals_the_templates_routes() -> None:
    # Given the routes template.yaml declares (the $default route apart)
    declared = sorted((r.method, r.path) for r in template.routes())
    # Then the layer's table holds exactly those
    assert sorted(routes.ROUTES) == declared


def test_every_route_of_the_template_has_a_role_rule() -> None:
    # Given every route template.yaml declares
    declared = {r.route_key for r in template.routes()}
    # Then each has exactly one rule in ROUTE_ROLES: a role, or a marker saying it addresses no mind
    assert sorted(declared - set(routes.ROUTE_ROLES)) == [], "add the route to ROUTE_ROLES"
    assert sorted(set(routes.ROUTE_ROLES) - declared) == [], "a rule for a route that does not exist"
    allowed = {"viewer", "editor", "reviewer", "owner", *routes.MARKERS}
    assert {key: rule for key, rule in routes.ROUTE_ROLES.items() if rule not in allowed} == {}


def test_a_route_without_the_authorizer_is_marked_public() -> None:
    # Given the routes no authorizer guards (they authenticate themselves, or need no credential)
    open_routes = {r.route_key for r in template.routes() if not r.authorized}
    # Then none claims to check a person's role
    assert {
        key: routes.ROUTE_ROLES[key] for key in open_routes if routes.ROUTE_ROLES[key] != routes.PUBLIC
    } == {}


def test_a_route_missing_from_the_role_table_fails_closed() -> None:
    assert routes.required_role("GET /not-a-route") == "owner"
    assert routes.required_role("GET /minds") is None


def test_the_template_sends_unmatched_requests_to_route_not_found() -> None:
    default = template.default_route()
    assert default is not None
    assert default.code_dir.name == "route_not_found"
    assert default.authorized is False


def test_unknown_path_is_a_404() -> None:
    error = routes.unmatched("GET", "/nothing/here")
    assert isinstance(error, NotFound)
    assert error.status == 404 and error.code == "not_found"
    assert "Allow" not in error.headers


def test_trailing_slash_is_an_unknown_path() -> None:
    assert routes.unmatched("GET", "/minds/").status == 404
    assert routes.unmatched("GET", "/memory/").status == 404


def test_known_path_with_another_method_is_a_405_naming_the_methods() -> None:
    # When a path that exists is asked with a method it does not serve
    error = routes.unmatched("DELETE", "/minds")
    # Then it is a 405 whose Allow header and details list the methods it does serve
    assert isinstance(error, MethodNotAllowed)
    assert error.status == 405 and error.code == "method_not_allowed"
    assert error.headers == {"Allow": "GET, POST"}
    assert error.details == [{"allowed": ["GET", "POST"]}]


def test_parameter_segments_match_one_segment() -> None:
    assert routes.allowed_methods("/minds/m_1/keys") == ["GET", "POST"]
    assert routes.allowed_methods("/minds/m_1/keys/k/extra") == []
    # /memory/recall is both a literal route and an {id}: every method either serves counts
    assert routes.allowed_methods("/memory/recall") == ["DELETE", "GET", "PUT"]


def test_a_long_path_is_echoed_cut_short() -> None:
    error = routes.unmatched("GET", "/x" * 5000)
    assert len(error.message) < 400


# ---------------------------------------------------------------- query parameters


def test_every_route_of_the_template_declares_its_query_parameters() -> None:
    # Given every route template.yaml declares
    declared = {r.route_key for r in template.routes()}
    # Then each names the query parameters it takes (none is a rule too), and nothing else is listed
    assert sorted(declared - set(routes.ROUTE_QUERIES)) == [], "add the route to ROUTE_QUERIES"
    assert sorted(set(routes.ROUTE_QUERIES) - declared) == [], "parameters of a route that does not exist"
    assert set(routes.IGNORES_UNKNOWN_QUERY) <= declared
    repeated = {key: names for key, names in routes.ROUTE_QUERIES.items() if len(set(names)) != len(names)}
    assert repeated == {}


def test_an_unknown_query_parameter_is_a_400_naming_it_and_the_known_ones() -> None:
    # When a list is asked with a parameter it does not take (the filter issue 42 found ignored)
    with pytest.raises(BadRequest) as raised:
        routes.check_query("GET /memory", ["since", "limit"])
    refused = raised.value
    # Then the 400 names it, and what the route takes
    assert refused.status == 400 and refused.message.startswith(
        "since: unknown query parameter; GET /memory takes"
    )
    assert refused.details == [
        {
            "field": "since",
            "rule": "unknown",
            "message": "not a query parameter of this route",
            "known": list(routes.ROUTE_QUERIES["GET /memory"]),
        }
    ]
    assert "after" in refused.details[0]["known"] and "updated_after" in refused.details[0]["known"]


def test_known_parameters_and_routes_that_ignore_unknown_ones_pass() -> None:
    routes.check_query("GET /memory/search", ["q", "after", "before", "now", "tz", "include_superseded"])
    routes.check_query("GET /oauth/authorize", ["client_id", "nonce", "prompt"])  # RFC 6749 §3.1
    routes.check_query("$default", ["anything"])  # an unmatched request is the 404's, not this rule's


def test_many_or_long_unknown_names_are_echoed_cut_short() -> None:
    sent = [f"p{n:02d}" for n in range(30)] + ["x" * 5000]
    with pytest.raises(BadRequest) as raised:
        routes.check_query("GET /minds", sent)
    assert len(raised.value.details) == 10 and len(raised.value.message) < 400
    assert raised.value.message.endswith("GET /minds takes limit, cursor.")
