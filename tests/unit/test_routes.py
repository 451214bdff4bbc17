"""The layer's route table (synapse.api.routes) is template.yaml's, and renders unmatched requests
as SPEC's errors: 404 for an unknown path, 405 with `Allow` for a known one."""

from __future__ import annotations

from synapse.api import routes
from synapse.api.routes import MethodNotAllowed
from synapse.core.errors import NotFound

from infra import template


def test_route_table_equals_the_templates_routes() -> None:
    # Given the routes template.yaml declares (the $default route apart)
    declared = sorted((r.method, r.path) for r in template.routes())
    # Then the layer's table holds exactly those
    assert sorted(routes.ROUTES) == declared


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
