"""The stack's own `/mcp` (`make run`), as the official `mcp` SDK's Streamable HTTP client sees it,
with a Mind Key as bearer; and the transport's refusals over raw HTTP. None answers 500."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import httpx
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent
from synapse.mcp import schema

from tests.clients.conftest import MindClients
from tests.support.runner import RunningService

ACCEPT = "application/json, text/event-stream"


def text_of(result: CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


def session_over(url: str, key: str) -> Any:
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    return client, streamable_http_client(f"{url}/mcp", http_client=client)


async def _every_tool(session: ClientSession) -> None:
    async def call(name: str, **arguments: Any) -> Any:
        result = await session.call_tool(name, arguments)
        assert not result.is_error, (name, text_of(result))
        text = text_of(result)
        return text if name == "recall" else json.loads(text)

    stored = await call(
        "remember", category="preference", key="favourite_tea", content="Earl Grey", tags=["drinks"]
    )
    note = await call("remember", content="Walks to work every day")
    assert (
        note["category"] == "note"
        and (await call("remember", content="walks to work  every day"))["id"] == note["id"]
    )
    many = await call("remember_many", memories=[{"content": "Likes jazz"}, {"content": "Owns a cat"}])
    assert many["summary"]["created"] == 2
    assert "Earl Grey" in await call("recall", query="what tea?")
    deadline = time.monotonic() + 20
    while not (found := await call("search", query="grey"))["results"]:
        assert time.monotonic() < deadline, "favourite_tea was not indexed"
        await anyio.sleep(0.3)
    assert found["results"][0]["id"] == stored["id"] and "coverage" in found["results"][0]
    assert (await call("fetch", id=stored["id"]))["content"] == "Earl Grey"
    assert [m["id"] for m in (await call("by_tag", tag="drinks"))["memories"]] == [stored["id"]]
    assert (await call("update", id=stored["id"], content="Earl Grey, no milk"))["version"] == 2
    assert (await call("list_expiring", within="7d"))["memories"] == []
    assert [r["version"] for r in (await call("history", id=stored["id"]))["revisions"]] == [2, 1]
    assert (await call("forget", id=stored["id"]))["deleted"] == stored["id"]
    resource = await session.read_resource("synapse://recall")
    assert "walks to work" in getattr(resource.contents[0], "text", "").lower()


def test_an_mcp_client_attaches_by_url_with_a_mind_key_and_calls_every_tool(
    runner: RunningService, mind: MindClients
) -> None:
    async def scenario() -> None:
        client, transport = session_over(runner.url, mind.key)
        async with client, transport as (read, write), ClientSession(read, write) as session:
            started = await session.initialize()
            assert started.server_info.name == "synapse" and started.protocol_version == "2025-11-25"
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert list(tools) == [t["name"] for t in schema.TOOLS]
            assert tools["remember"].input_schema["required"] == ["content"]
            await _every_tool(session)
            refused = await session.call_tool("remember", {"content": "x" * (33 * 1024)})
            assert refused.is_error and text_of(refused).startswith("content:")

    anyio.run(scenario)


def test_a_read_only_key_lists_only_the_read_tools_and_is_refused_writes(
    runner: RunningService, mind: MindClients
) -> None:
    made = httpx.post(
        f"{runner.url}/minds/{mind.id}/keys",
        headers={"Authorization": f"Bearer {runner.jwt}"},
        json={"label": "reader", "scopes": ["read"]},
    )
    assert made.status_code == 201, made.text
    reader = made.json()["key"]

    async def scenario() -> None:
        client, transport = session_over(runner.url, reader)
        async with client, transport as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert names == {t["name"] for t in schema.TOOLS if t["scope"] == "read"}
            refused = await session.call_tool("remember", {"content": "Not allowed"})
            assert refused.is_error and "lacks the 'write' scope" in text_of(refused)
            assert not (await session.call_tool("recall", {})).is_error

    anyio.run(scenario)


def _post(url: str, body: bytes, key: str | None, **headers: str) -> httpx.Response:
    sent = {"Content-Type": "application/json", "Accept": ACCEPT, **headers}
    if key:
        sent["Authorization"] = f"Bearer {key}"
    return httpx.post(f"{url}/mcp", content=body, headers=sent, timeout=30)


def test_the_transport_refuses_bad_requests_without_a_500(runner: RunningService, mind: MindClients) -> None:
    url, key = runner.url, mind.key
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    assert _post(url, ping, key).json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert _post(url, ping, key, Origin="https://evil.example").status_code == 403
    assert _post(url, ping, key, **{"MCP-Protocol-Version": "1999-01-01"}).status_code == 400
    malformed = _post(url, b"{nope", key)
    assert (malformed.status_code, malformed.json()["error"]["code"]) == (400, -32700)
    batch = _post(url, b"[" + ping + b"]", key, **{"MCP-Protocol-Version": "2025-11-25"})
    assert (batch.status_code, batch.json()["error"]["code"]) == (400, -32600)
    old = _post(url, b"[" + ping + b"]", key, **{"MCP-Protocol-Version": "2025-03-26"})
    assert old.json() == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    unknown = _post(url, b'{"jsonrpc":"2.0","id":2,"method":"nope/nope"}', key)
    assert unknown.json()["error"]["code"] == -32601
    bad = _post(url, b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":7}}', key)
    assert bad.json()["error"]["code"] == -32602
    note = _post(url, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', key)
    assert (note.status_code, note.content) == (202, b"")
    for method in ("GET", "DELETE"):
        answer = httpx.request(method, f"{url}/mcp", headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 405 and answer.headers["allow"] == "POST"
    anonymous = _post(url, ping, None)
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Bearer")
