"""`synapse mcp`: Synapse as Model Context Protocol tools, so Claude Desktop, Claude Code, Cursor or
any MCP agent can remember and recall. Built on the official `mcp` SDK (the `mcp` extra); it holds
one credential (normally a Mind Key) from the same configuration as the CLI.

Tools: remember, recall (optionally for the user's message), search (a question or keywords; hits
carry matched terms and coverage), forget, list_expiring. Resource: synapse://recall.
A Synapse error comes back as an MCP tool error carrying Synapse's own message.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from synapse_client._core import VERSION
from synapse_client.client import AsyncSynapse
from synapse_client.config import Settings
from synapse_client.errors import SynapseError

Category = Literal["identity", "preference", "fact", "project", "skill", "mistake", "context", "note"]
Priority = Literal["critical", "high", "normal", "low"]

INSTRUCTIONS = """\
Synapse is your long-term memory about the user and their work, shared across sessions and agents.
At the start of each turn, call `recall` with the user's message as `query` (or read the
synapse://recall resource) to load what is known, the most relevant first.
When you learn something worth keeping — who the user is, what they prefer, facts, project state,
skills, mistakes to avoid — call `remember` with a stable snake_case key, so that a later update
replaces the memory instead of duplicating it. Use `search` to find something specific (the user's
question as-is works), `forget` when a memory is wrong or no longer true, `list_expiring` to see
short-lived context about to lapse."""

REMEMBER = """\
Store one memory in the user's Synapse mind. Storing again with the same category and key REPLACES
that memory (same id, version + 1), so reuse stable keys: `home_city`, `preferred_editor`,
`project_atlas_status` — lowercase snake_case, no dates or counters in keys.

Categories: identity (who the user is: name, role, languages), preference (how they like things
done), fact (durable facts about their world), project (state and decisions of ongoing work),
skill (how to do something in their environment), mistake (what went wrong, to avoid repeating),
context (short-lived situational context: current task, today's plan — give it expires_at),
note (anything else).

Priority: critical (always needed), high, normal (default), low. Confidence: 0-1 (how sure you
are; agents default to 0.7). expires_at: an ISO 8601 timestamp with a time zone such as
2026-12-31T23:59:00Z — set it for session or task context so it drops out of recall by itself.
Returns the stored memory (its id, version, verified flag). An agent's write to a memory a person
verified may come back as a proposal awaiting their review."""

RECALL = """\
Load the plain-text summary of what Synapse remembers about the user. Call it at the start of each
turn with the user's message as `query`: the memories most relevant to it come right after the
critical ones, then the rest by priority (critical, high, normal, low); expired memories left out,
verified ones marked. Narrow it with category (one or more) or tag; max_chars (500-400000) bounds
the text's size."""

SEARCH = """\
Search the user's memories, best match first. Pass the user's question as-is ("What coffee does
he drink?") or keywords; exact syntax also works: "a phrase", prefix*, AND, OR, NOT, +required.
Each hit has a snippet (matches in **bold**), `matched` (which of the query's `terms` it matched)
and `coverage` (0-1, their share). Low coverage means a weak match: if no hit covers what was
asked, say "I don't know" rather than guess. Filter by tag or category. A memory stored a moment
ago may take a few seconds to become searchable."""

SEARCH_QUERY = (
    "The user's question as-is, or keywords. Each hit's `matched` and `coverage` say how much of "
    "it the hit answers; low coverage is a weak match."
)
RECALL_QUERY_MAX = 1000  # the most GET /memory/recall takes as q
RECALL_QUERY = (
    "The user's current message or task: the most relevant memories come first "
    f"(its first {RECALL_QUERY_MAX} characters are used)."
)

FORGET = """\
Delete a memory for good: by its id, or by category and key. Use it when a memory is wrong, no
longer true, or the user asks you to forget it. To correct a memory, prefer `remember` with the same
category and key."""

LIST_EXPIRING = """\
Memories whose expires_at falls within the coming window (soonest first): short-lived context about
to drop out of recall. Renew one with `remember` (same category and key, a later expires_at) if it
still matters. within: a whole number with m, h, d or w (30m, 24h, 7d, 2w); at most 365d."""


def _memory(memory: Any) -> dict[str, Any]:
    shown: dict[str, Any] = memory.model_dump(mode="json")
    return shown


def build(settings: Settings) -> MCPServer[Any]:
    """The MCP server for one Synapse credential (the HTTP client is made on first use, in the loop)."""
    server: MCPServer[Any] = MCPServer(
        "synapse", instructions=INSTRUCTIONS, version=VERSION, log_level="WARNING"
    )
    holder: dict[str, AsyncSynapse] = {}

    def synapse() -> AsyncSynapse:
        if "client" not in holder:
            holder["client"] = settings.async_client()
        return holder["client"]

    @server.tool(description=REMEMBER)
    async def remember(
        category: Annotated[Category, Field(description="What kind of memory this is (see above).")],
        key: Annotated[str, Field(description="Stable lowercase snake_case key, e.g. home_city.")],
        content: Annotated[str, Field(description="The memory itself, one self-contained statement.")],
        tags: Annotated[list[str] | None, Field(description="Lowercase topic tags, e.g. ['docker'].")] = None,
        priority: Annotated[Priority | None, Field(description="Default normal.")] = None,
        confidence: Annotated[float | None, Field(ge=0, le=1, description="0-1; default 0.7.")] = None,
        expires_at: Annotated[str | None, Field(description="ISO 8601 with time zone; for context.")] = None,
    ) -> dict[str, Any]:
        try:
            stored = await synapse().remember(
                category,
                key,
                content,
                tags=tags,
                priority=priority,
                confidence=confidence,
                expires_at=expires_at,
            )
        except SynapseError as error:
            raise ToolError(error.message) from error
        shown = _memory(stored)
        if stored.pending_proposal:
            shown["note"] = (
                "A person verified this memory, so a change to it waits for their review "
                f"(proposal {stored.pending_proposal}); until then the memory stays as shown."
            )
        return shown

    @server.tool(description=RECALL)
    async def recall(
        query: Annotated[str | None, Field(description=RECALL_QUERY)] = None,
        category: Annotated[list[Category] | None, Field(description="Only these categories.")] = None,
        tag: Annotated[str | None, Field(description="Only memories with this tag.")] = None,
        max_chars: Annotated[int | None, Field(ge=500, le=400000, description="Size bound.")] = None,
    ) -> str:
        asked = query.strip()[:RECALL_QUERY_MAX] if query else None
        try:
            found = await synapse().recall(category=category, tag=tag, max_chars=max_chars, query=asked)
        except SynapseError as error:
            raise ToolError(error.message) from error
        return found.text

    @server.tool(description=SEARCH)
    async def search(
        query: Annotated[str, Field(description=SEARCH_QUERY)],
        tag: Annotated[str | None, Field(description="Only memories with this tag.")] = None,
        category: Annotated[Category | None, Field(description="Only this category.")] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many hits.")] = 10,
    ) -> dict[str, Any]:
        try:
            found = await synapse().search(query, tag=tag, category=category, limit=limit)
        except SynapseError as error:
            raise ToolError(error.message) from error
        hits = [
            {"id": h.memory.id, "category": h.memory.category, "key": h.memory.key, "snippet": h.snippet,
             "content": h.memory.content, "tags": h.memory.tags, "score": h.score,
             "matched": h.matched, "coverage": h.coverage}
            for h in found.items
        ]  # fmt: skip
        return {"terms": found.terms, "hits": hits}

    @server.tool(description=FORGET)
    async def forget(
        id: Annotated[str | None, Field(description="The memory's id (mem_…).")] = None,
        category: Annotated[Category | None, Field(description="With key: the memory's category.")] = None,
        key: Annotated[str | None, Field(description="With category: the memory's key.")] = None,
    ) -> dict[str, Any]:
        client = synapse()
        try:
            if id:
                await client.forget(id)
                return {"deleted": id}
            if not (category and key):
                raise ToolError("Give the memory's id, or both its category and key.")
            found = await client.forget_key(category, key)
        except SynapseError as error:
            raise ToolError(error.message) from error
        if found is None:
            raise ToolError(f"No memory {category}/{key} in this mind.")
        return {"deleted": found.id, "category": category, "key": key}

    @server.tool(description=LIST_EXPIRING)
    async def list_expiring(
        within: Annotated[str, Field(description="Window from now: 30m, 24h, 7d, 2w.")] = "7d",
    ) -> dict[str, Any]:
        try:
            found = await synapse().expiring(within=within, limit=100)
        except SynapseError as error:
            raise ToolError(error.message) from error
        return {"memories": [_memory(m) for m in found.items]}

    @server.resource(
        "synapse://recall",
        name="recall",
        description="What Synapse remembers, most important first (the recall text).",
        mime_type="text/plain",
    )
    async def recall_resource() -> str:
        return (await synapse().recall()).text

    return server


def serve(settings: Settings, *, http_port: int | None = None, host: str = "127.0.0.1") -> None:
    """Serve over stdio (what Claude Desktop / Claude Code start), or streamable HTTP on a port."""
    server = build(settings)
    if http_port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=http_port)
