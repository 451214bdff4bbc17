"""The four agent tools the framework adapters share (remember, recall, search, forget): names,
LLM-facing descriptions and input schemas from mcp_tools.json (the MCP tools' own, so every
framework's agent reads the same words), each done with the blocking client. No framework here."""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any

from synapse_client.client import Synapse

TABLE: dict[str, Any] = json.loads(resources.files("synapse_client").joinpath("mcp_tools.json").read_text())
SPECS: dict[str, dict[str, Any]] = {tool["name"]: tool for tool in TABLE["tools"]}
NAMES = ("remember", "recall", "search", "forget")
SEARCH_TOOL = "the search tool"  # what recall's closing line names for an agent (the layer's MCP_SEARCH_HINT)
RECALL_QUERY_MAX = 1000  # what recall's `query` sends as q (the layer's schema.RECALL_QUERY_MAX)


def remember(client: Synapse, a: dict[str, Any]) -> dict[str, Any]:
    """Content alone is a note whose key the server derives (one derivation for every door)."""
    named = ("tags", "priority", "confidence", "expires_at", "occurred_at", "supersedes")
    optional = {name: a.get(name) for name in named}
    memory = client.remember(a.get("category"), a.get("key"), a["content"], **optional)
    shown: dict[str, Any] = memory.model_dump(mode="json")
    if memory.pending_proposal:
        shown["note"] = (
            f"A person verified this memory: the change waits for their review ({memory.pending_proposal})."
        )
    similar = getattr(memory, "similar", None)
    if similar:
        shown["note"] = similar_note(similar)
    return shown


def similar_note(similar: list[dict[str, Any]]) -> str:
    """What the model reads when a write may replace memories (as /mcp says it: synapse.mcp.calls)."""
    named = "; ".join(
        f"key {s['key']} (id {s['id']}, {s.get('relation', 'repeat')}, similarity {s['similarity']})"
        + (f': "{s["content"]}"' if s.get("content") else "")
        for s in similar
    )
    return (
        f"This may replace memories the mind already holds: {named}. Read them: if one says the same, "
        "update that memory instead (`update` with its id, or remember with its category and key) and "
        "forget the one just stored; if one is an older value of this fact, call `update` on the memory "
        "just stored, passing that id in `supersedes`, so only the current value is recalled; if it is "
        "about something else (another person, another project), leave both."
    )


def _read_options(a: dict[str, Any]) -> dict[str, Any]:
    """What recall and search share of a tool call's arguments: the window, replaced memories, the
    asker's clock."""
    return {
        "after": a.get("after"),
        "before": a.get("before"),
        "include_superseded": bool(a.get("include_superseded", False)),
        "now": a.get("now"),
        "tz": a.get("tz"),
    }


def recall_options(a: dict[str, Any]) -> dict[str, Any]:
    """The `recall` tool's arguments as the clients' recall takes them (this module's tools and
    `synapse mcp`'s alike)."""
    asked = (a.get("query") or "").strip()[:RECALL_QUERY_MAX] or None
    selection = {"category": a.get("category"), "tag": a.get("tag"), "max_chars": a.get("max_chars")}
    return selection | {"query": asked} | _read_options(a)


def search_options(a: dict[str, Any]) -> dict[str, Any]:
    """The `search` tool's arguments beside its query, as the clients' search takes them."""
    selection = {"tag": a.get("tag"), "category": a.get("category"), "limit": a.get("limit") or 10}
    return selection | {"mode": a.get("mode")} | _read_options(a)


def recall(client: Synapse, a: dict[str, Any]) -> str:
    return client.recall(**recall_options(a)).naming(SEARCH_TOOL)


def search(client: Synapse, a: dict[str, Any]) -> dict[str, Any]:
    found = client.search(a["query"], **search_options(a))
    results = [
        {"id": h.memory.id, "category": h.memory.category, "key": h.memory.key, "content": h.memory.content,
         "tags": h.memory.tags, "score": h.score, "matched": h.matched, "coverage": h.coverage,
         "similarity": h.similarity, "relevance": h.relevance, "updated_at": h.memory.updated_at,
         "occurred_at": h.memory.occurred_at}
        for h in found.items
    ]  # fmt: skip
    return {"terms": found.terms, "mode": found.mode, "results": results}  # as REST and /mcp name it


def forget(client: Synapse, a: dict[str, Any]) -> dict[str, Any]:
    memory_id, category, key = a.get("id"), a.get("category"), a.get("key")
    if not memory_id:
        if not (category and key):
            raise ValueError("id: give the memory's id, or both its category and key")
        found = client.find(category, key)
        if found is None:
            raise ValueError(f"No memory {category}/{key} in this mind.")
        memory_id = found.id
    proposed = client.forget(memory_id)
    if proposed is not None:
        return {
            "memory": proposed.model_dump(mode="json"),
            "note": "A person verified this memory: the delete waits for their review.",
        }
    return {"deleted": memory_id}


CALLS: dict[str, Callable[[Synapse, dict[str, Any]], Any]] = {
    "remember": remember,
    "recall": recall,
    "search": search,
    "forget": forget,
}


def run(client: Synapse, name: str, arguments: dict[str, Any]) -> Any:
    """One tool call, arguments left out when None (frameworks fill optional ones with None)."""
    given = {field: value for field, value in arguments.items() if value is not None}
    unknown = sorted(set(given) - set(SPECS[name]["inputSchema"]["properties"]))
    if unknown:
        raise ValueError(f"{unknown[0][:80]}: not an argument of {name}")
    return CALLS[name](client, given)
