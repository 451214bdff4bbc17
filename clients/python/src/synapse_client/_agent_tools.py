"""The four agent tools the framework adapters share (remember, recall, search, forget): names,
LLM-facing descriptions and input schemas from mcp_tools.json (the MCP tools' own, so every
framework's agent reads the same words), each done with the blocking client. No framework here."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable
from importlib import resources
from typing import Any

from synapse_client.client import Synapse

TABLE: dict[str, Any] = json.loads(resources.files("synapse_client").joinpath("mcp_tools.json").read_text())
SPECS: dict[str, dict[str, Any]] = {tool["name"]: tool for tool in TABLE["tools"]}
NAMES = ("remember", "recall", "search", "forget")
SEARCH_TOOL = "the search tool"  # what recall's closing line names for an agent (the layer's MCP_SEARCH_HINT)
RECALL_QUERY_MAX = 1000  # what recall's `query` sends as q (the layer's schema.RECALL_QUERY_MAX)


KEY_DIGEST_CHARS = 6
KEY_WORDS = 5
KEY_WORD_CHARS = 20
# Words that say little in a key (the clients keep the same list: tests/unit/test_mcp_tools_drift.py).
_KEY_STOPWORDS_TEXT = """
a an the and or but of to in on at for with from by is are was were be been am i my me he him his she her
they them their it its we our you your this that these those has have had do does did not so as than
then there here will would can could should just very also about into
"""
KEY_STOPWORDS = frozenset(_KEY_STOPWORDS_TEXT.split())


def derived_key(category: str, content: str) -> str:
    """The key of a memory stored without one, as /mcp derives it (synapse.mcp.calls.derived_key;
    tests/unit/test_mcp_tools_drift.py compares them): `synapse mcp` and the adapters use this one."""
    normalized = " ".join(content.split()).casefold()
    digest = hashlib.sha256(normalized.encode()).hexdigest()[:KEY_DIGEST_CHARS]
    plain = unicodedata.normalize("NFKD", normalized).encode("ascii", "ignore").decode()
    words = [word[:KEY_WORD_CHARS] for word in re.findall(r"[a-z0-9]+", plain) if word not in KEY_STOPWORDS]
    return f"{'_'.join(words[:KEY_WORDS]) or category}_{digest}"


def remember(client: Synapse, a: dict[str, Any]) -> dict[str, Any]:
    category = a.get("category") or "note"
    key = a.get("key") or derived_key(category, a["content"])
    optional = {name: a.get(name) for name in ("tags", "priority", "confidence", "expires_at")}
    memory = client.remember(category, key, a["content"], **optional)
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
    """What the model reads when a write repeats a memory (as /mcp says it: synapse.mcp.calls)."""
    named = "; ".join(f"key {s['key']} (id {s['id']}, similarity {s['similarity']})" for s in similar)
    return (
        f"A similar memory exists: {named}. If this is the same fact, update that memory instead of "
        "keeping two versions: remember again with its category and key, then forget the one just "
        "stored."
    )


def recall(client: Synapse, a: dict[str, Any]) -> str:
    asked = (a.get("query") or "").strip()[:RECALL_QUERY_MAX] or None
    return client.recall(
        category=a.get("category"), tag=a.get("tag"), max_chars=a.get("max_chars"), query=asked
    ).naming(SEARCH_TOOL)


def search(client: Synapse, a: dict[str, Any]) -> dict[str, Any]:
    found = client.search(
        a["query"],
        tag=a.get("tag"),
        category=a.get("category"),
        limit=a.get("limit") or 10,
        mode=a.get("mode"),
    )
    hits = [
        {"id": h.memory.id, "category": h.memory.category, "key": h.memory.key, "content": h.memory.content,
         "tags": h.memory.tags, "score": h.score, "matched": h.matched, "coverage": h.coverage,
         "similarity": h.similarity, "relevance": h.relevance, "updated_at": h.memory.updated_at}
        for h in found.items
    ]  # fmt: skip
    return {"terms": found.terms, "mode": found.mode, "hits": hits}


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
