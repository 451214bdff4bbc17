"""Synapse for the OpenAI Agents SDK (`pip install 'synapse-client[openai-agents]'`): `tools(client)`,
the remember/recall/search/forget function tools with the MCP tools' descriptions and input
schemas (mcp_tools.json), for `Agent(tools=...)`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

try:
    from agents import FunctionTool, Tool
    from agents.tool_context import ToolContext
except ImportError as missing:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "synapse_client.agents needs the OpenAI Agents SDK: pip install 'synapse-client[openai-agents]'"
    ) from missing

from synapse_client import _agent_tools
from synapse_client.client import Synapse
from synapse_client.errors import SynapseError


def _tool(client: Synapse, name: str) -> FunctionTool:
    spec = _agent_tools.SPECS[name]

    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        try:
            given = json.loads(arguments or "{}")
            answer = await asyncio.to_thread(_agent_tools.run, client, name, given)
        except (SynapseError, ValueError) as error:  # the model reads Synapse's own message
            return f"Error: {error}"
        return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)

    return FunctionTool(
        name=name,
        description=spec["description"],
        params_json_schema=spec["inputSchema"],
        on_invoke_tool=invoke,
        strict_json_schema=False,  # the MCP schemas have optional fields; strict mode requires all
    )


def tools(client: Synapse) -> list[Tool]:
    """remember, recall, search and forget as Agents SDK function tools over `client`'s mind; each
    call runs the blocking client in a worker thread, and a Synapse error is the tool's answer."""
    return [_tool(client, name) for name in _agent_tools.NAMES]
