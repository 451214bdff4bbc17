"""`synapse mcp`: Synapse as Model Context Protocol tools, so Claude Desktop, Claude Code, Cursor or
any MCP agent can remember and recall. Built on the official `mcp` SDK (the `mcp` extra); it holds
one credential (normally a Mind Key) from the same configuration as the CLI.

The tools are the stack's own `/mcp` tools: the same names, descriptions and input schemas, read
from mcp_tools.json (a copy of the layer's synapse.mcp.schema; tests/unit/test_mcp_tools_drift.py
fails when they differ), each done here with the REST API. Resource: synapse://recall. A Synapse
error comes back as an MCP tool error carrying Synapse's own message.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool

from synapse_client._agent_tools import SEARCH_TOOL, recall_options, search_options, similar_note
from synapse_client._core import VERSION
from synapse_client.client import AsyncSynapse
from synapse_client.config import Settings
from synapse_client.errors import SynapseError

TABLE: dict[str, Any] = json.loads(resources.files("synapse_client").joinpath("mcp_tools.json").read_text())
INSTRUCTIONS: str = TABLE["instructions"]
TOOLS: dict[str, dict[str, Any]] = {tool["name"]: tool for tool in TABLE["tools"]}

Call = Callable[[AsyncSynapse, dict[str, Any]], Awaitable[Any]]


def check(value: Any, rule: dict[str, Any], path: str = "") -> None:
    """Unknown arguments refused naming them, required ones asked for (the rest is Synapse's)."""
    if isinstance(value, list) and "items" in rule:
        for index, item in enumerate(value):
            check(item, rule["items"], f"{path}[{index}]")
    if not isinstance(value, dict) or "properties" not in rule:
        return
    prefix = f"{path}." if path else ""
    unknown = sorted(set(value) - set(rule["properties"]))
    if unknown:
        known = ", ".join(rule["properties"])
        raise ToolError(f"{prefix}{unknown[0][:80]}: not an argument of this tool (it takes {known})")
    for name in rule.get("required", []):
        if name not in value:
            raise ToolError(f"{prefix}{name}: is required")
    for name, item in value.items():
        check(item, rule["properties"][name], f"{prefix}{name}")


def _memory(memory: Any) -> dict[str, Any]:
    shown: dict[str, Any] = memory.model_dump(mode="json")
    if getattr(memory, "pending_proposal", None):
        shown["note"] = (
            "A person verified this memory, so this change waits for their review "
            f"(proposal {memory.pending_proposal}); until then the memory stays as shown."
        )
    similar = getattr(memory, "similar", None)
    if similar:
        shown["note"] = similar_note(similar)
    return shown


async def remember(client: AsyncSynapse, a: dict[str, Any]) -> Any:
    """Content alone is a note whose key the server derives, as /mcp's remember (one derivation)."""
    body = dict(a)
    category, key, content = body.pop("category", None), body.pop("key", None), body.pop("content")
    return _memory(await client.remember(category, key, content, **body))


async def remember_many(client: AsyncSynapse, a: dict[str, Any]) -> Any:
    answer = await client.remember_batch(list(a["memories"]))
    shown: dict[str, Any] = answer.model_dump(mode="json", exclude_none=True)
    if shown.get("summary", {}).get("proposed"):
        shown["note"] = (
            "Items with status `proposed` changed memories a person verified: "
            "they wait for that person's review."
        )
    return shown


async def recall(client: AsyncSynapse, a: dict[str, Any]) -> Any:
    found = await client.recall(**recall_options(a))
    return found.naming(SEARCH_TOOL)


async def search(client: AsyncSynapse, a: dict[str, Any]) -> Any:
    found = await client.search(a["query"], **search_options(a))
    results = [
        {"id": h.memory.id, "category": h.memory.category, "key": h.memory.key, "snippet": h.snippet,
         "content": h.memory.content, "tags": h.memory.tags, "score": h.score,
         "matched": h.matched, "coverage": h.coverage, "similarity": h.similarity,
         "relevance": h.relevance, "updated_at": h.memory.updated_at, "occurred_at": h.memory.occurred_at}
        for h in found.items
    ]  # fmt: skip
    return {"terms": found.terms, "mode": found.mode, "results": results}  # as REST and /mcp name it


async def fetch(client: AsyncSynapse, a: dict[str, Any]) -> Any:
    return _memory(await client.get(a["id"]))


def _page(found: Any, name: str) -> dict[str, Any]:
    return {name: [item.model_dump(mode="json") for item in found.items], "next_cursor": found.next_cursor}


async def by_tag(client: AsyncSynapse, a: dict[str, Any]) -> Any:
    found = await client.by_tag(
        a["tag"], category=a.get("category"), include_expired=bool(a.get("include_expired", False)),
        after=a.get("after"), before=a.get("before"), limit=a.get("limit", 20), cursor=a.get("cursor"),
        include_superseded=bool(a.get("include_superseded", False)),
    )  # fmt: skip
    return _page(found, "memories")


async def update(client: AsyncSynapse, a: dict[str, Any]) -> Any:
    fields = {name: value for name, value in a.items() if name != "id"}
    return _memory(await client.update(a["id"], **fields))


async def forget(client: AsyncSynapse, a: dict[str, Any]) -> Any:
    memory_id = a.get("id")
    category, key = a.get("category"), a.get("key")
    if not memory_id:
        if not (category and key):
            raise ToolError("id: give the memory's id, or both its category and key")
        found = await client.find(category, key)
        if found is None:
            raise ToolError(f"No memory {category}/{key} in this mind.")
        memory_id = found.id
    proposed = await client.forget(memory_id)
    if proposed is not None:  # an agent's delete of a verified memory waits for a person's review
        shown = _memory(proposed)
        return {"memory": shown, "note": shown.pop("note", "")}
    return {"deleted": memory_id, **({"category": category, "key": key} if category and key else {})}


async def list_expiring(client: AsyncSynapse, a: dict[str, Any]) -> Any:
    found = await client.expiring(
        within=a.get("within", "7d"), limit=a.get("limit", 20), cursor=a.get("cursor")
    )
    return _page(found, "memories")


async def history(client: AsyncSynapse, a: dict[str, Any]) -> Any:
    return _page(await client.history(a["id"], limit=a.get("limit", 20), cursor=a.get("cursor")), "revisions")


CALLS: dict[str, Call] = {
    "remember": remember,
    "remember_many": remember_many,
    "recall": recall,
    "search": search,
    "fetch": fetch,
    "by_tag": by_tag,
    "update": update,
    "forget": forget,
    "list_expiring": list_expiring,
    "history": history,
}


class SynapseMCP(MCPServer[Any]):
    """MCPServer whose tools are the shared table (schemas as data, not from Python signatures)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__("synapse", instructions=INSTRUCTIONS, version=VERSION, log_level="WARNING")
        self._settings = settings
        self._client: AsyncSynapse | None = None

    def synapse(self) -> AsyncSynapse:
        if self._client is None:
            self._client = self._settings.async_client()
        return self._client

    async def list_tools(self) -> list[MCPTool]:
        return [
            MCPTool(
                name=t["name"],
                title=t["title"],
                description=t["description"],
                input_schema=t["inputSchema"],
                annotations=ToolAnnotations.model_validate(t["annotations"]),
            )
            for t in TOOLS.values()
        ]

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        tool = TOOLS.get(name)
        return None if tool is None else tool["inputSchema"]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:
        tool = TOOLS.get(name)
        if tool is None:
            raise ToolError(f"Unknown tool: {name[:80]!r}.")
        check(arguments, tool["inputSchema"])
        try:
            result = await CALLS[name](self.synapse(), arguments)
        except SynapseError as error:
            raise ToolError(error.message) from error
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=False)


def build(settings: Settings) -> MCPServer[Any]:
    """The MCP server for one Synapse credential (the HTTP client is made on first use, in the loop)."""
    server = SynapseMCP(settings)
    resource = TABLE["resources"][0]

    @server.resource(
        resource["uri"],
        name=resource["name"],
        description=resource["description"],
        mime_type=resource["mimeType"],
    )
    async def recall_resource() -> str:
        return (await server.synapse().recall()).naming(SEARCH_TOOL)

    return server


def serve(settings: Settings, *, http_port: int | None = None, host: str = "127.0.0.1") -> None:
    """Serve over stdio (what Claude Desktop / Claude Code start), or streamable HTTP on a port."""
    server = build(settings)
    if http_port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=http_port)
