"""One set of MCP tools, two transports: the stack's /mcp (synapse.mcp.schema) and `synapse mcp`
(clients/python, which cannot import the layer and keeps the table as data in mcp_tools.json)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from synapse.mcp import calls, schema

ROOT = Path(__file__).resolve().parents[2]
CLIENT_TABLE = ROOT / "clients" / "python" / "src" / "synapse_client" / "mcp_tools.json"
REGENERATE = (
    "PYTHONPATH=layers/synapse .venv/bin/python -m synapse.mcp.schema > "
    "clients/python/src/synapse_client/mcp_tools.json"
)


def test_the_client_keeps_the_layers_tool_table() -> None:
    # Given the layer's table and the client's copy
    # Then they are the same data: names, descriptions, input schemas, scopes, instructions, resources
    assert json.loads(CLIENT_TABLE.read_text()) == schema.table(), f"run: {REGENERATE}"


def test_the_stdio_server_lists_exactly_the_remote_tools() -> None:
    from synapse_client._agent_tools import RECALL_QUERY_MAX  # what the stdio server uses
    from synapse_client.config import Settings
    from synapse_client.mcp_server import build

    server = build(Settings(url="http://127.0.0.1:9", mind_key="mk_x"))  # never called
    listed = anyio.run(server.list_tools)
    shown = [
        {
            "name": t.name,
            "title": t.title,
            "description": t.description,
            "inputSchema": t.input_schema,
            "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True)
            if t.annotations
            else None,
        }
        for t in listed
    ]
    assert shown == [schema.listed(tool) for tool in schema.TOOLS]
    # And both cut recall's query alike (a key left out is the server's to derive, for both)
    assert RECALL_QUERY_MAX == schema.RECALL_QUERY_MAX


def test_every_tool_says_what_a_host_may_assume_of_it() -> None:
    # Given the tool table, Then each tool carries MCP's annotations: reads are read-only (a host may
    # auto-approve them), only forget destroys, and nothing reaches beyond the mind
    for tool in schema.TOOLS:
        hints = schema.listed(tool)["annotations"]
        assert set(hints) == {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        assert hints["readOnlyHint"] is (tool["scope"] == "read"), tool["name"]
        assert hints["destructiveHint"] is (tool["scope"] == "delete"), tool["name"]
        assert hints["openWorldHint"] is False


def test_every_tool_has_a_call_and_a_closed_schema() -> None:
    from synapse_client.mcp_server import CALLS

    assert set(calls.TOOLS) == set(schema.BY_NAME) == set(CALLS)
    for tool in schema.TOOLS:
        assert tool["inputSchema"]["additionalProperties"] is False, tool["name"]
        assert tool["scope"] in {"read", "write", "delete"}
