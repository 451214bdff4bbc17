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

from tests.clients.conftest import SYNAPSE_CLI, MindClients, recording_front
from tests.support.runner import ROOT, RunningService, free_port


def text_of(result: CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


def flat(description: str | None) -> str:
    """A tool's description on one line (its source wraps it)."""
    return " ".join((description or "").split())


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
            assert set(tools) == {
                "remember", "remember_many", "recall", "search", "fetch", "by_tag", "update", "forget",
                "list_expiring", "history",
            }  # fmt: skip
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
                if found["results"] or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.3)
            assert [h["id"] for h in found["results"]] == [memory["id"]]
            assert "**Grey**" in found["results"][0]["snippet"]
            expiring = json.loads(text_of(await call(session, "list_expiring", {"within": "7d"})))
            assert expiring == {"memories": [], "next_cursor": None}
            fetched = json.loads(text_of(await call(session, "fetch", {"id": memory["id"]})))
            assert fetched["content"] == "Earl Grey, no milk"
            # And content alone is a note under a key derived from it
            note = json.loads(text_of(await call(session, "remember", {"content": "Walks to work"})))
            assert note["category"] == "note" and note["key"].startswith("walks_work_")
            unknown = await call(session, "remember", {"content": "x", "colour": "blue"})
            assert unknown.is_error and "colour" in text_of(unknown)
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


def test_the_tools_tell_the_model_to_recall_for_the_message_and_weigh_coverage(
    runner: RunningService, mind: MindClients
) -> None:
    # Given a mind whose coffee memory is indexed, and `synapse mcp` talking to it through a front
    # that notes what it sent
    coffee = mind.agent.remember("preference", "coffee_order", "Drinks an oat flat white coffee")
    mind.agent.remember("fact", "home_city", "Lives in London", priority="high")
    deadline = time.monotonic() + 20
    while not mind.agent.search("coffee").items:
        assert time.monotonic() < deadline, "coffee_order was not indexed"
        time.sleep(0.3)
    message = "What coffee does he drink?"

    async def scenario(url: str) -> None:
        server = StdioServerParameters(
            command=str(SYNAPSE_CLI),
            args=["mcp"],
            env={
                "SYNAPSE_URL": url,
                "SYNAPSE_MIND_KEY": mind.key,
                "SYNAPSE_CONFIG": str(ROOT / ".no-synapse-config.toml"),
            },
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            started = await session.initialize()
            assert "user's message" in (started.instructions or "")
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            # Then recall takes an optional query: the user's message, to call at each turn's start
            recall, search = tools["recall"], tools["search"]
            assert "query" in recall.input_schema["properties"]
            assert "query" not in recall.input_schema.get("required", [])
            assert "most relevant" in recall.input_schema["properties"]["query"]["description"]
            assert "start of each turn with the user's message" in flat(recall.description)
            # And search takes the question as-is or keywords, and says what coverage means
            assert search.input_schema["required"] == ["query"]
            assert "question as-is" in search.input_schema["properties"]["query"]["description"]
            for words in ("question as-is", "keywords", "matched", "coverage", "weak match", "I don't know"):
                assert words in flat(search.description), words
            # When the model recalls for the user's message, and searches with it
            recalled = await call(session, "recall", {"query": message})
            assert not recalled.is_error, text_of(recalled)
            assert "coffee_order" in text_of(recalled)
            long = await call(session, "recall", {"query": "coffee " * 200})  # 1400 characters
            assert not long.is_error, text_of(long)
            found = await call(session, "search", {"query": message})
            keyword = json.loads(text_of(await call(session, "search", {"query": "coffee"})))
            assert not found.is_error, text_of(found)
            answer = json.loads(text_of(found))
            # Then each hit carries matched and coverage (from a server that reports them)
            assert set(answer) == {"terms", "results", "mode"}
            assert keyword["results"][0]["id"] == coffee.id  # first; others may follow by meaning
            assert {"matched", "coverage"} <= set(keyword["results"][0])
            if keyword["terms"]:
                assert keyword["results"][0]["coverage"] == 1.0
                assert answer["results"][0]["id"] == coffee.id
                hit = answer["results"][0]
                assert set(hit["matched"]) <= set(answer["terms"])
                assert 0 < hit["coverage"] <= 1  # each term weighed by how informative it is
            else:  # a server from before best-match search
                assert keyword["results"][0]["coverage"] is None and keyword["results"][0]["matched"] == []

    with recording_front(runner.url) as front:
        anyio.run(scenario, front.url)
    # And the message went to GET /memory/recall as q; a longer one, its first 1000 characters
    assert [q.get("q") for q in front.queries("/memory/recall")] == [[message], [("coffee " * 200)[:1000]]]
