"""POST /mcp through the in-process gateway (authorizer first, as API Gateway): the transport's rules,
JSON-RPC errors, scopes and every tool. The official SDK's client against `make run` is in
tests/clients/test_mcp_remote.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from synapse.mcp import schema
from synapse.memory import keys

from infra.gateway import HttpResponse
from infra.stream_pump import Pump
from tests.support.api import Api, MindHandle
from tests.support.index import index_root_fixture as index_root_fixture
from tests.support.index import pump_fixture as pump_fixture
from tests.support.settings import configure_fixture as configure_fixture

JSON_AND_SSE = "application/json, text/event-stream"


@pytest.fixture
def mind(api: Api) -> MindHandle:
    return api.create_mind()


def header(answer: HttpResponse, name: str) -> str:
    return {k.lower(): v for k, v in answer.headers.items()}.get(name, "")


def post(api: Api, token: str | None, message: Any, **headers: str) -> HttpResponse:
    sent = {"accept": JSON_AND_SSE, **{k.replace("_", "-"): v for k, v in headers.items()}}
    raw = message if isinstance(message, bytes) else json.dumps(message).encode()
    return api.call(
        "POST", "/mcp", token=token, raw_body=raw, headers={"content-type": "application/json", **sent}
    )


def rpc(
    api: Api, token: str, method: str, params: dict[str, Any] | None = None, **headers: str
) -> dict[str, Any]:
    answer = post(
        api, token, {"jsonrpc": "2.0", "id": 7, "method": method, "params": params or {}}, **headers
    )
    assert answer.status == 200, answer.text
    assert header(answer, "content-type").startswith("application/json")
    body: dict[str, Any] = answer.json()
    assert body["id"] == 7
    return body


def tool(api: Api, token: str, name: str, **arguments: Any) -> tuple[bool, Any]:
    result = rpc(api, token, "tools/call", {"name": name, "arguments": arguments})["result"]
    text = result["content"][0]["text"]
    try:
        shown = json.loads(text)
    except ValueError:
        shown = text
    return result["isError"], shown


def test_initialize_negotiates_the_version_and_describes_the_server(api: Api, mind: MindHandle) -> None:
    for asked, agreed in (
        ("2025-11-25", "2025-11-25"),
        ("2025-03-26", "2025-03-26"),
        ("2024-01-01", "2025-11-25"),
    ):
        result = rpc(api, mind.key, "initialize", {"protocolVersion": asked, "capabilities": {}})["result"]
        assert result["protocolVersion"] == agreed
    assert result["serverInfo"]["name"] == "synapse"
    assert set(result["capabilities"]) == {"tools", "resources"}
    assert "recall" in result["instructions"]
    assert rpc(api, mind.key, "ping")["result"] == {}


def test_without_initialize_every_tool_is_listed_and_remember_takes_content_alone(
    api: Api, mind: MindHandle
) -> None:
    listed = rpc(api, mind.key, "tools/list")["result"]["tools"]
    assert [t["name"] for t in listed] == [t["name"] for t in schema.TOOLS]
    assert all(t["inputSchema"]["additionalProperties"] is False for t in listed)
    hints = {t["name"]: t["annotations"] for t in listed}
    assert hints["search"]["readOnlyHint"] and hints["forget"]["destructiveHint"]
    assert not hints["remember"]["readOnlyHint"] and hints["remember"]["idempotentHint"]
    failed, first = tool(api, mind.key, "remember", content="Prefers tea to coffee")
    assert not failed, first
    assert first["category"] == "note" and first["key"] == keys.derived_key("note", "Prefers tea to coffee")
    assert first["key_derived"] is True
    failed, again = tool(api, mind.key, "remember", content="  prefers TEA to coffee ")
    assert not failed and again["id"] == first["id"] and again["version"] == 2


def test_every_tool_works_over_mcp(api: Api, mind: MindHandle, pump: Pump) -> None:
    key = mind.key
    _, stored = tool(
        api, key, "remember", category="fact", key="home_city", content="Lives in Berlin", tags=["home"]
    )
    failed, many = tool(
        api, key, "remember_many", memories=[{"content": "Likes jazz"}, {"content": "x" * 33000}]
    )
    assert not failed and many["summary"]["created"] == 1 and many["summary"]["failed"] == 1
    assert "content" in many["results"][1]["error"]["message"]
    pump.run_once()
    assert "Lives in Berlin" in tool(api, key, "recall", query="where does he live?")[1]
    _, found = tool(api, key, "search", query="Where does he live? Berlin")
    assert [r["id"] for r in found["results"]] == [stored["id"]] and found["results"][0]["coverage"] > 0
    assert tool(api, key, "fetch", id=stored["id"])[1]["content"] == "Lives in Berlin"
    assert [m["id"] for m in tool(api, key, "by_tag", tag="HOME")[1]["memories"]] == [stored["id"]]
    failed, updated = tool(api, key, "update", id=stored["id"], content="Lives in Hamburg", expires_at=None)
    assert not failed and updated["version"] == 2
    assert tool(api, key, "list_expiring", within="30d")[1] == {"memories": [], "next_cursor": None}
    revisions = tool(api, key, "history", id=stored["id"])[1]["revisions"]
    assert [r["version"] for r in revisions] == [2, 1]
    assert tool(api, key, "forget", id=stored["id"])[1] == {"deleted": stored["id"]}
    failed, gone = tool(api, key, "fetch", id=stored["id"])
    assert failed and "No memory" in gone
    read = rpc(api, key, "resources/read", {"uri": "synapse://recall"})["result"]["contents"][0]
    assert read["mimeType"] == "text/plain" and "jazz" in read["text"]


def test_recall_over_mcp_names_the_search_tool_for_what_it_left_out(api: Api, mind: MindHandle) -> None:
    # Given more memories than a small recall budget shows
    for n in range(12):
        tool(api, mind.key, "remember", category="fact", key=f"fact_{n}", content=f"Fact number {n} " * 20)
    # When the model recalls over MCP with that budget
    _, text = tool(api, mind.key, "recall", max_chars=1000)
    # Then the closing line names the tool it can call, not a REST route it cannot
    assert text.rstrip().endswith("left out; the search tool finds them."), text
    assert "GET /memory/search" not in text
    # And REST's own recall keeps naming its route
    assert (
        "GET /memory/search finds them."
        in api.call("GET", "/memory/recall", token=mind.key, query={"max_chars": 1000}).text
    )


def test_tool_errors_are_results_naming_the_field(api: Api, mind: MindHandle) -> None:
    failed, message = tool(api, mind.key, "remember", content="x" * (33 * 1024))
    assert failed and message.startswith("content:")
    failed, message = tool(api, mind.key, "remember", content="x", colour="blue")
    assert failed and "colour" in message
    failed, message = tool(api, mind.key, "remember", content="x", key="Bad Key")
    assert failed and "key" in message
    failed, message = tool(api, mind.key, "list_expiring", within="forever")
    assert failed and message.startswith("within:")


def test_a_read_only_key_lists_the_read_tools_and_is_refused_writes(api: Api, mind: MindHandle) -> None:
    made = api.call(
        "POST", f"/minds/{mind.id}/keys", token=mind.jwt, json_body={"label": "r", "scopes": ["read"]}
    )
    reader = made.json()["key"]
    names = {t["name"] for t in rpc(api, reader, "tools/list")["result"]["tools"]}
    assert names == {t["name"] for t in schema.TOOLS if t["scope"] == "read"}
    failed, message = tool(api, reader, "remember", content="x")
    assert failed and "lacks the 'write' scope" in message
    failed, message = tool(api, reader, "forget", id="mem_x")
    assert failed and "lacks the 'delete' scope" in message
    assert not tool(api, reader, "recall")[0]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b"[]", -32600),
        (b'{"id":"one","method":"ping"}', -32600),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600),
        (b'"ping"', -32600),
    ],
)
def test_malformed_messages_are_json_rpc_errors(api: Api, mind: MindHandle, body: bytes, code: int) -> None:
    answer = post(api, mind.key, body)
    assert answer.status == 400, answer.text
    assert answer.json()["error"]["code"] == code and answer.json()["id"] in (None, "one")


def test_a_batch_is_answered_for_2025_03_26_only(api: Api, mind: MindHandle) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    answered = post(api, mind.key, [ping, note, {**ping, "id": 2}], mcp_protocol_version="2025-03-26")
    assert answered.status == 200 and [a["id"] for a in answered.json()] == [1, 2]
    for newer in ("2025-06-18", "2025-11-25"):
        refused = post(api, mind.key, [ping], mcp_protocol_version=newer)
        assert (refused.status, refused.json()["error"]["code"]) == (400, -32600)


def test_unknown_methods_and_bad_params_are_json_rpc_errors(api: Api, mind: MindHandle) -> None:
    assert rpc(api, mind.key, "prompts/get")["error"]["code"] == -32601
    assert rpc(api, mind.key, "tools/call", {"name": "nope"})["error"]["code"] == -32602
    assert rpc(api, mind.key, "initialize", {})["error"]["code"] == -32602
    assert rpc(api, mind.key, "resources/read", {"uri": "synapse://nope"})["error"]["code"] == -32002
    answer = post(api, mind.key, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]})
    assert answer.json()["error"]["code"] == -32602


def test_notifications_and_responses_are_accepted_without_a_body(api: Api, mind: MindHandle) -> None:
    for message in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 3, "result": {}},
    ):
        answer = post(api, mind.key, message)
        assert (answer.status, answer.text) == (202, "")


def test_the_transport_refuses_what_it_does_not_serve(api: Api, mind: MindHandle) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for method in ("GET", "DELETE"):
        answer = api.call(method, "/mcp", token=mind.key, headers={"accept": "text/event-stream"})
        assert answer.status == 405 and header(answer, "allow") == "POST"
    assert post(api, mind.key, ping, origin="https://evil.example").status == 403
    refused = post(api, mind.key, ping, mcp_protocol_version="2099-01-01")
    assert refused.status == 400 and "2025-11-25" in refused.json()["error"]["message"]
    assert post(api, mind.key, ping, mcp_protocol_version="2025-06-18").status == 200
    unauthenticated = post(api, None, ping)
    assert unauthenticated.status == 401
    assert header(unauthenticated, "www-authenticate").startswith("Bearer")
    streamed = post(api, mind.key, ping, accept="text/event-stream")
    assert header(streamed, "content-type") == "text/event-stream"
    assert streamed.text.startswith("event: message\ndata: ")


def test_an_allowed_browser_origin_is_served(
    api: Api, mind: MindHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synapse.mcp import protocol

    monkeypatch.setenv("SYNAPSE_MCP_ORIGINS", "https://app.example, https://other.example")
    protocol.allowed_origins.cache_clear()
    try:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert post(api, mind.key, ping, origin="https://app.example").status == 200
        assert post(api, mind.key, ping, origin="https://evil.example").status == 403
    finally:
        protocol.allowed_origins.cache_clear()
