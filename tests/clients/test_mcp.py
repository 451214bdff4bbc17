"""`synapse mcp` as an MCP client sees it: started as a subprocess, spoken to over stdio with the
`mcp` SDK's own client."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from tests.clients.conftest import SYNAPSE_CLI, MindClients
from tests.support.runner import ROOT, RunningService, free_port


def text_of(result: CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    return await session.call_tool(tool, arguments)


def test_an_agent_remembers_recalls_searches_and_forgets_over_mcp(
    runner: RunningService, mind: MindClients
) -> None:
    server = StdioServerParameters(
        command=str(SYNAPSE_CLI),
        args=["mcp"],
        env={
            "SYNAPSE_URL": runner.url,
            "SYNAPSE_MIND_KEY": mind.key,
            "SYNAPSE_CONFIG": str(ROOT / ".no-synapse-config.toml"),
        },
    )

    async def scenario() -> None:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            # Given an initialized session
            started = await session.initialize()
            assert started.server_info.name == "synapse"
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) == {"remember", "recall", "search", "forget", "list_expiring"}
            assert "stable" in (tools["remember"].description or "")
            assert "context" in (tools["remember"].description or "")
            # When the agent remembers something
            stored = await call(
                session,
                "remember",
                {
                    "category": "preference",
                    "key": "favourite_tea",
                    "content": "Earl Grey, no milk",
                    "tags": ["drinks"],
                },
            )
            assert not stored.is_error, text_of(stored)
            memory = json.loads(text_of(stored))
            assert (memory["key"], memory["source"]) == ("favourite_tea", "agent")
            # Then recall (tool and resource) shows it
            recalled = await call(session, "recall", {})
            assert "Earl Grey, no milk" in text_of(recalled)
            resource = await session.read_resource("synapse://recall")
            assert "favourite_tea" in getattr(resource.contents[0], "text", "")
            # And search finds it once indexed
            deadline = time.monotonic() + 20
            while True:
                found = json.loads(text_of(await call(session, "search", {"query": "grey"})))
                if found["hits"] or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.3)
            assert [h["id"] for h in found["hits"]] == [memory["id"]]
            assert "**Grey**" in found["hits"][0]["snippet"]
            expiring = json.loads(text_of(await call(session, "list_expiring", {"within": "7d"})))
            assert expiring == {"memories": []}
            # And a Synapse error is a tool error with Synapse's message
            refused = await call(session, "remember", {"category": "fact", "key": "Bad Key", "content": "x"})
            assert refused.is_error and "lowercase snake_case" in text_of(refused)
            # And forget removes it
            forgot = await call(session, "forget", {"category": "preference", "key": "favourite_tea"})
            assert not forgot.is_error and json.loads(text_of(forgot))["deleted"] == memory["id"]
            assert "favourite_tea" not in text_of(await call(session, "recall", {}))
            missing = await call(session, "forget", {"id": memory["id"]})
            assert missing.is_error and "No memory" in text_of(missing)

    anyio.run(scenario)


def test_mcp_over_streamable_http(runner: RunningService, mind: MindClients) -> None:
    # Given `synapse mcp --http PORT` running
    port = free_port()
    env = {
        "SYNAPSE_URL": runner.url,
        "SYNAPSE_MIND_KEY": mind.key,
        "SYNAPSE_CONFIG": str(ROOT / ".none.toml"),
    }
    server = subprocess.Popen(  # noqa: S603 — our own console script
        [str(SYNAPSE_CLI), "mcp", "--http", str(port)],
        env=env | {"PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        mind.agent.remember("identity", "user_name", "Ada")

        async def scenario() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                # When an MCP client recalls over HTTP
                recalled = await call(session, "recall", {"category": ["identity"]})
                # Then it gets the mind's recall text
                assert "Ada" in text_of(recalled)

        anyio.run(scenario)
    finally:
        server.terminate()
        server.wait(timeout=20)
