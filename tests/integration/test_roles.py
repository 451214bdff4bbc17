"""The role matrix (issue 25): every person-facing route of template.yaml, called by an owner, a
reviewer, an editor, a viewer, a person who is not a member, and an agent's Mind Key, answers what
docs/auth.md says. The routes come from the template and their rules from ROUTE_ROLES, so a new
route is walked (and one without a rule fails `test_every_route_of_the_template_has_a_role_rule`)."""

from __future__ import annotations

from typing import Any

import pytest
from synapse.api.routes import MARKERS, ROUTE_ROLES
from synapse.memory import history

from infra import template
from infra.gateway import HttpResponse
from tests.support import moto_tables
from tests.support.api import Api, jwt_for, memory_body
from tests.support.checks import assert_error
from tests.support.settings import Configure
from tests.support.settings import configure_fixture as configure_fixture
from tests.support.teams import ROLES, Team, join, team

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

# Lowest first: the owner comes last, so a route that deletes (the mind, a member) does it last.
CALLERS = ("agent", "stranger", *ROLES)
# What only a person may do on a mind addressed by X-Mind-Id (a Mind Key there gets 403).
PERSON_ONLY = {
    "POST /memory/{id}/verify",
    "POST /memory/{id}/restore",
    "POST /proposals/{id}/accept",
    "POST /proposals/{id}/reject",
}
# Documented as stricter than the route's rule: removing someone else needs owner (leaving does not).
STRICTER = {"DELETE /minds/{mind_id}/members/{user_id}": "owner"}
TARGET = "target-1"  # a viewer the member routes act on
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

BODIES: dict[str, Any] = {
    "PATCH /minds/{mind_id}": {"name": "Renamed"},
    "POST /minds/{mind_id}/keys": {"label": "ci"},
    "POST /memory": memory_body(key="matrix"),
    "POST /memory/batch": {"memories": [memory_body(key="batched")]},
    "PUT /memory/{id}": {"content": "Lives in Hamburg"},
    "POST /memory/{id}/restore": {"version": 1},
    "POST /minds/{mind_id}/webhooks": {"url": "http://127.0.0.1:9/hook", "events": ["member.joined"]},
    "PATCH /minds/{mind_id}/webhooks/{webhook_id}": {"enabled": False},
    "POST /minds/{mind_id}/hooks": {"label": "platform"},
    "POST /minds/{mind_id}/hooks/{hook_id}/rotate": {},
    "PATCH /minds/{mind_id}/members/{user_id}": {"role": "editor"},
    "POST /minds/{mind_id}/transfer": {"user_id": TARGET, "keep_role": "owner"},
    "POST /minds/{mind_id}/invitations": {"role": "viewer", "user_id": "newcomer-1"},
    # A tool that writes: a person needs editor for it (viewer reaches /mcp, to read).
    "POST /mcp": {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "remember", "arguments": {"content": "Works on the matrix"}},
    },
}
QUERIES = {"GET /memory/search": {"q": "berlin"}, "GET /memory/by-tag": {"tag": "home"}}


def _person_routes() -> list[template.Route]:
    """The routes a person uses on one mind: those whose rule is a role, not a marker."""
    return [r for r in template.routes() if ROUTE_ROLES[r.route_key] not in MARKERS]


class World:
    """A team mind with one of everything a route's path can name, made by its owner."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.team: Team = team(api)
        mind = self.team.mind
        join(api, mind, TARGET, "viewer")
        stored = api.call(
            "POST",
            "/memory",
            token=mind.jwt,
            json_body=memory_body(tags=["home"]),
            headers={"X-Mind-Id": mind.id},
        )
        assert stored.status == 201, stored.text
        self.memory_id = stored.json()["id"]
        self.webhook_id = self._made(
            "POST", f"/minds/{mind.id}/webhooks", BODIES["POST /minds/{mind_id}/webhooks"]
        )
        self.hook_id = self._made("POST", f"/minds/{mind.id}/hooks", {"label": "p"})
        pending = api.call(
            "POST",
            f"/minds/{mind.id}/invitations",
            token=mind.jwt,
            json_body={"role": "viewer", "email": "x@example.com"},
        )
        assert pending.status == 201, pending.text
        self.invitation_id = pending.json()["invitation"]["id"]
        self.stranger = jwt_for("stranger-1")
        api.create_mind(user="stranger-1", name="The stranger's own")  # a member of another mind

    def _made(self, method: str, path: str, body: Any) -> str:
        made = self.api.call(method, path, token=self.team.mind.jwt, json_body=body)
        assert made.status == 201, made.text
        return str(made.json()["id"])

    def path(self, route: template.Route) -> str:
        values = {
            "mind_id": self.team.mind.id,
            "id": self.memory_id,
            "key_id": self.team.mind.key_id,
            "webhook_id": self.webhook_id,
            "hook_id": self.hook_id,
            "grant_id": "grant_" + "0" * 22,
            "user_id": TARGET,
            "invitation_id": self.invitation_id,
        }
        path = route.path
        for name, value in values.items():
            path = path.replace("{" + name + "}", value)
        return path

    def call(self, route: template.Route, caller: str) -> HttpResponse:
        key = route.route_key
        token = {"agent": self.team.mind.key, "stranger": self.stranger}.get(caller) or self.team.tokens[
            caller
        ]
        headers = {} if caller == "agent" or "{mind_id}" in route.path else {"X-Mind-Id": self.team.mind.id}
        if key == "POST /mcp":
            headers |= MCP_HEADERS
        body = BODIES.get(key)
        return self.api.call(
            route.method,
            self.path(route),
            token=token,
            json_body=body,
            headers=headers,
            query=QUERIES.get(key),
        )


def expected(route_key: str, caller: str) -> str:
    """What docs/auth.md says the caller gets: "allowed", "forbidden" (403) or "hidden" (404)."""
    if route_key == "POST /mcp" and caller in ROLES:
        return "allowed" if ROLES.index(caller) >= ROLES.index("editor") else "forbidden"
    if caller == "agent":
        return "forbidden" if "{mind_id}" in route_key or route_key in PERSON_ONLY else "allowed"
    if caller == "stranger":
        return "hidden"
    needed = STRICTER.get(route_key, ROUTE_ROLES[route_key])
    return "allowed" if ROLES.index(caller) >= ROLES.index(needed) else "forbidden"


def assert_tool_answer(answer: HttpResponse, outcome: str) -> None:
    """/mcp answers in JSON-RPC: a refused tool call is a result with isError and the refusal."""
    assert answer.status == 200, answer.text
    result = answer.json()["result"]
    text = result["content"][0]["text"]
    if outcome == "allowed":
        assert result["isError"] is False, text
    elif outcome == "hidden":
        assert result["isError"] is True and text.startswith("No mind"), text
    else:
        assert result["isError"] is True and "needs the editor role" in text, text


def assert_answer(answer: HttpResponse, outcome: str, needed: str) -> None:
    if outcome == "hidden":
        error = assert_error(answer, 404)
        assert error["message"].startswith("No mind"), error
    elif outcome == "forbidden":
        error = assert_error(answer, 403)
        assert (
            error["details"] in ([{"role": needed}], [{"scope": "write"}]) or "Mind Key" in error["message"]
        ), error
    else:
        assert answer.status not in (401, 403), answer.text
        if answer.status == 404:
            assert not answer.json()["error"]["message"].startswith("No mind"), answer.text


@pytest.fixture
def loopback(configure: Configure, dynamo: Any) -> None:
    configure(SYNAPSE_WEBHOOKS_ALLOW_LOOPBACK="true")


_built: dict[str, Any] = {}  # the World and moto's tables just after it was built, once per process


@pytest.fixture
def world(api: Api, loopback: None, monkeypatch: pytest.MonkeyPatch) -> World:
    """The World, built through the API by the first test of the process; each later test starts
    from a deep copy of the tables as they were just after (tests/support/moto_tables.saved), not
    from its ~70 calls again (most of a route's test). The mind's id is then the same in every test,
    so the one per-mind cache of the layer (history's retention) starts empty in each, as it did."""
    monkeypatch.setattr(history, "_retention_cache", {})
    built = moto_tables.built_once(_built, lambda: World(api))
    built.api = api
    return built


@pytest.mark.parametrize("route", _person_routes(), ids=lambda r: r.route_key)
def test_each_caller_gets_what_the_route_table_documents(world: World, route: template.Route) -> None:
    # Given a team mind with a member of each role, a stranger, and the mind's Mind Key
    needed = STRICTER.get(route.route_key, ROUTE_ROLES[route.route_key])
    for caller in CALLERS:
        # When each calls the route (the owner last)
        answer = world.call(route, caller)
        # Then the answer is the documented one: the mind hidden from a stranger, a 403 naming the role
        # for a member below it, served for one at or above it
        outcome = expected(route.route_key, caller)
        try:
            if route.route_key == "POST /mcp":
                assert_tool_answer(answer, outcome)
            else:
                assert_answer(answer, outcome, needed)
        except AssertionError as failed:
            raise AssertionError(f"{route.route_key} as {caller}: expected {outcome}: {failed}") from None


def test_a_403_names_the_role_needed_and_the_callers(api: Api) -> None:
    # Given a viewer of a team mind
    world = team(api)
    # When they store a memory
    answer = api.call("POST", "/memory", json_body=memory_body(), **world.as_member("viewer"))
    # Then it is a 403 naming the role needed, and theirs
    error = assert_error(answer, 403)
    assert error["details"] == [{"role": "editor"}]
    assert error["message"] == "This needs the editor role or higher on this mind; yours is viewer."


def test_the_matrix_covers_every_person_route_and_every_role() -> None:
    # Given the walked routes, Then each rule the table holds for a mind is one of the four roles
    walked = {r.route_key for r in _person_routes()}
    assert walked and {ROUTE_ROLES[k] for k in walked} <= set(ROLES)
    assert {"viewer", "editor", "reviewer", "owner"} == {ROUTE_ROLES[k] for k in walked}
