"""Scoped Mind Keys (issue 12 part 3): a key may read, write and delete only as its scopes allow."""

from __future__ import annotations

from typing import Any

import pytest
from synapse.api.routes import ROUTE_SCOPES, ROUTES
from synapse.auth.principal import Principal
from synapse.memory.kinds import Source

from infra.gateway import HttpResponse
from infra.stream_pump import Pump
from tests.support.api import Api, MindHandle, memory_body
from tests.support.checks import as_user, assert_error
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def new_key(api: Api, mind: MindHandle, **body: Any) -> dict[str, Any]:
    answer = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body=body)
    assert answer.status == 201, answer.text
    made: dict[str, Any] = answer.json()
    return made


def stored_memory(api: Api, mind: MindHandle, **fields: Any) -> str:
    answer = api.store(mind, **fields)
    assert answer.status == 201, answer.text
    return str(answer.json()["id"])


def assert_lacks(answer: HttpResponse, scope: str) -> None:
    error = assert_error(answer, 403)
    assert error["code"] == "forbidden"
    assert error["message"] == f"This Mind Key lacks the {scope!r} scope.", error
    assert error["details"] == [{"scope": scope}]


def test_a_read_only_key_reads_recalls_and_searches_but_cannot_change_anything(
    api: Api, mind: MindHandle, pump: Pump
) -> None:
    # Given a mind with a memory, indexed, and a key that may only read
    memory_id = stored_memory(api, mind, key="home_city", content="Lives in Berlin")
    pump.run_once()
    reader = new_key(api, mind, label="dashboard", scopes=["read"])
    token = reader["key"]
    # When it reads, lists, recalls, looks up by tag and searches
    reads = {
        "get": api.call("GET", f"/memory/{memory_id}", token=token),
        "list": api.call("GET", "/memory", token=token),
        "recall": api.call("GET", "/memory/recall", token=token),
        "by-tag": api.call("GET", "/memory/by-tag", token=token, query={"tag": "x"}),
        "expiring": api.call("GET", "/memory/expiring", token=token),
        "search": api.call("GET", "/memory/search", token=token, query={"q": "berlin"}),
    }
    # Then every read is served
    assert {name: answer.status for name, answer in reads.items()} == dict.fromkeys(reads, 200)
    assert "Lives in Berlin" in reads["recall"].text
    assert [r["memory"]["id"] for r in reads["search"].json()["results"]] == [memory_id]
    # And every change is a 403 naming the scope it lacks, before its body is even read
    assert_lacks(api.call("POST", "/memory", token=token, json_body=memory_body(key="other")), "write")
    assert_lacks(api.call("PUT", f"/memory/{memory_id}", token=token, json_body={"content": "x"}), "write")
    assert_lacks(api.call("POST", "/memory", token=token, raw_body=b"not json"), "write")
    assert_lacks(api.call("DELETE", f"/memory/{memory_id}", token=token), "delete")
    if ("POST", "/memory/batch") in ROUTES:
        batch = {"memories": [memory_body(key="batched")]}
        assert_lacks(api.call("POST", "/memory/batch", token=token, json_body=batch), "write")
    # And the memory is as it was
    after = api.call("GET", f"/memory/{memory_id}", token=token).json()
    assert after["content"] == "Lives in Berlin" and after["version"] == 1


def test_a_write_key_without_delete_stores_and_updates_but_cannot_delete(api: Api, mind: MindHandle) -> None:
    # Given a key that may read and write but not delete
    writer = new_key(api, mind, label="ingest", scopes=["write", "read"])
    token = writer["key"]
    # When it stores and updates a memory
    made = api.call("POST", "/memory", token=token, json_body=memory_body())
    assert made.status == 201, made.text
    memory_id = made.json()["id"]
    updated = api.call("PUT", f"/memory/{memory_id}", token=token, json_body={"content": "Lives in Paris"})
    assert updated.status == 200, updated.text
    # Then deleting it is a 403 naming `delete`, and the memory stays
    assert_lacks(api.call("DELETE", f"/memory/{memory_id}", token=token), "delete")
    assert api.call("GET", f"/memory/{memory_id}", token=token).json()["content"] == "Lives in Paris"
    # And its owner may still delete it
    assert api.call("DELETE", f"/memory/{memory_id}", **as_user(mind)).status == 204


def test_a_write_only_key_cannot_read(api: Api, mind: MindHandle) -> None:
    # Given a key that may only write (an ingestion pipeline)
    token = new_key(api, mind, scopes=["write"])["key"]
    # When it stores, then tries to read
    assert api.call("POST", "/memory", token=token, json_body=memory_body()).status == 201
    # Then the reads are 403 naming `read`
    assert_lacks(api.call("GET", "/memory/recall", token=token), "read")
    assert_lacks(api.call("GET", "/memory", token=token), "read")


def test_a_key_created_without_scopes_may_do_everything(api: Api, mind: MindHandle) -> None:
    # When a key is created without scopes
    made = new_key(api, mind, label="agent")
    # Then it holds all three, in its creation answer and in the listing
    assert made["scopes"] == ["read", "write", "delete"]
    listed = api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt).json()["keys"]
    assert {key["id"]: key["scopes"] for key in listed} == {
        mind.key_id: ["read", "write", "delete"],
        made["id"]: ["read", "write", "delete"],
    }
    # And it stores, reads and deletes
    token = made["key"]
    memory_id = api.call("POST", "/memory", token=token, json_body=memory_body()).json()["id"]
    assert api.call("GET", f"/memory/{memory_id}", token=token).status == 200
    assert api.call("DELETE", f"/memory/{memory_id}", token=token).status == 204


def test_scopes_are_shown_in_the_order_read_write_delete(api: Api, mind: MindHandle) -> None:
    # When a key is created with its scopes in another order
    made = new_key(api, mind, scopes=["delete", "read"])
    # Then creation and listing show them in one order
    assert made["scopes"] == ["read", "delete"]
    listed = api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt).json()["keys"]
    assert next(key for key in listed if key["id"] == made["id"])["scopes"] == ["read", "delete"]


@pytest.mark.parametrize(
    ("scopes", "field", "rule"),
    [
        ([], "scopes", "too_short"),
        (["admin"], "scopes[0]", "enum"),
        (["read", "read"], "scopes", "unique"),
        ("read", "scopes", "type"),
        (["READ"], "scopes[0]", "enum"),
        ([None], "scopes[0]", "enum"),
    ],
)
def test_bad_scopes_are_a_422_naming_the_field(
    api: Api, mind: MindHandle, scopes: Any, field: str, rule: str
) -> None:
    # When a key is asked for with scopes that are not a non-empty list of distinct known scopes
    answer = api.call("POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"scopes": scopes})
    # Then it is a 422 naming the field, and no key is made
    assert_error(answer, 422, field=field, rule=rule)
    listed = api.call("GET", f"/minds/{mind.id}/keys", token=mind.jwt).json()["keys"]
    assert [key["id"] for key in listed] == [mind.key_id]


def test_a_key_with_every_scope_still_cannot_manage_the_mind(api: Api, mind: MindHandle) -> None:
    # Given a key holding every scope
    token = new_key(api, mind)["key"]
    # When it tries what only a person may do
    answers = [
        api.call("POST", f"/minds/{mind.id}/keys", token=token, json_body={"scopes": ["read"]}),
        api.call("GET", f"/minds/{mind.id}/audit", token=token),
        api.call("PATCH", f"/minds/{mind.id}", token=token, json_body={"name": "Mine now"}),
    ]
    # Then each is a 403
    assert [answer.status for answer in answers] == [403, 403, 403]


def test_a_revoked_read_key_is_a_401_not_a_403(api: Api, mind: MindHandle) -> None:
    # Given a read-only key, revoked
    made = new_key(api, mind, scopes=["read"])
    assert api.call("DELETE", f"/minds/{mind.id}/keys/{made['id']}", token=mind.jwt).status == 204
    # When it tries to write
    answer = api.call("POST", "/memory", token=made["key"], json_body=memory_body())
    # Then the credential is refused first
    assert_error(answer, 401)


# ---------------------------------------------------------------- the principal and the table


def test_the_principal_round_trips_its_scopes_and_hook_through_the_context() -> None:
    # Given principals of each kind
    reader = Principal(source=Source.AGENT, key_id="key_a", mind_id="m_a", scopes=frozenset({"read"}))
    hook = Principal.hook("m_a", "hook_a")
    user = Principal(source=Source.USER, user_id="alice")
    # When they pass through the authorizer's context
    again = [Principal.from_context(p.to_context()) for p in (reader, hook, user)]
    # Then they come back as they were
    assert again == [reader, hook, user]
    assert reader.to_context()["scopes"] == "read" and hook.scopes == frozenset({"write"})
    assert user.scopes == frozenset({"read", "write", "delete"})
    # And each says who changed something
    assert [p.changed_by() for p in again] == [
        {"source": "agent", "key_id": "key_a"},
        {"source": "agent", "hook_id": "hook_a"},
        {"source": "user", "user_id": "alice"},
    ]


def test_a_context_from_before_scopes_holds_every_scope() -> None:
    # Given a context an older authorizer wrote (no scopes, no hook)
    context = {"source": "agent", "user_id": "", "key_id": "key_a", "mind_id": "m_a"}
    # Then the principal may do everything, as keys could before scopes
    assert Principal.from_context(context).scopes == frozenset({"read", "write", "delete"})


def test_every_scoped_route_key_is_a_memory_or_proposal_route() -> None:
    # The table names routes by API Gateway route key; a typo would silently leave a route unscoped
    for route_key, scope in ROUTE_SCOPES.items():
        method, path = route_key.split(" ", 1)
        assert method in {"GET", "POST", "PUT", "DELETE"} and path.startswith(("/memory", "/proposals"))
        assert scope in {"read", "write", "delete"}
    # And every memory route a Mind Key may call is in it (only verify and restore are JWT only)
    memory_routes = {f"{m} {p}" for m, p in ROUTES if p.startswith(("/memory", "/proposals"))}
    jwt_only = {key for key in memory_routes if key.endswith(("/verify", "/restore", "/accept", "/reject"))}
    assert memory_routes - jwt_only <= set(ROUTE_SCOPES)
