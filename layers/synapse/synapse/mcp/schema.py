"""The MCP tool table: one set of tools for `/mcp` and for `synapse mcp` (stdio, clients/python).

Pure data, JSON-serialisable: `table()` is what clients/python/src/synapse_client/mcp_tools.json
holds (tests/unit/test_mcp_tools_drift.py fails when the two differ; regenerate the file with
`PYTHONPATH=layers/synapse python -m synapse.mcp.schema > clients/python/src/synapse_client/mcp_tools.json`).
Each tool names the Mind Key scope it needs: a key without it neither lists nor calls the tool.
"""

from __future__ import annotations

import json
from typing import Any

from synapse.mcp.descriptions import (
    BY_TAG,
    FETCH,
    FORGET,
    HISTORY,
    LIST_EXPIRING,
    RECALL,
    REMEMBER,
    REMEMBER_MANY,
    SEARCH,
    SEARCH_QUERY,
    UPDATE,
)
from synapse.mcp.descriptions import INSTRUCTIONS as INSTRUCTIONS  # what `initialize` answers

CATEGORIES = ["identity", "preference", "fact", "project", "skill", "mistake", "context", "note"]
PRIORITIES = ["critical", "high", "normal", "low"]
CONTENT_MAX_BYTES = 32 * 1024
RECALL_QUERY_MAX = 1000  # what recall's `query` sends as q: the start of a long message

RECALL_QUERY = (
    "The user's current message or task: the most relevant memories come first "
    f"(its first {RECALL_QUERY_MAX} characters are used)."
)


def _string(description: str, **rules: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **rules}


def _integer(description: str, low: int, high: int, default: int | None = None) -> dict[str, Any]:
    shown: dict[str, Any] = {"type": "integer", "minimum": low, "maximum": high, "description": description}
    return shown if default is None else {**shown, "default": default}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    shown: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    return {**shown, "required": required} if required else shown


MEMORY_ID = _string("The memory's id (mem_…).", minLength=1, maxLength=200)
CATEGORY = _string("What kind of memory this is (see the tool's description).", enum=CATEGORIES)
KEY = _string(
    "Stable lowercase snake_case key, e.g. home_city; derived from the content when left out.",
    pattern=r"^[a-z0-9]+(_[a-z0-9]+)*$",
    maxLength=128,
)
CONTENT = _string(
    f"The memory itself, one self-contained statement (at most {CONTENT_MAX_BYTES} bytes of UTF-8).",
    minLength=1,
)
TAGS = {
    "type": "array",
    "items": {"type": "string"},
    "maxItems": 20,
    "description": "Lowercase topic tags, e.g. ['docker'].",
}
PRIORITY = _string("Default normal.", enum=PRIORITIES)
CONFIDENCE = {"type": "number", "minimum": 0, "maximum": 1, "description": "0-1; default 0.7."}
EXPIRES_AT = _string(
    "A future ISO 8601 time with a time zone, e.g. 2030-06-30T18:00:00Z; for short-lived context."
)
OCCURRED_AT = _string(
    "When the event happened or was said, if not now: a date 2026-12-09, or an ISO 8601 time with a "
    "time zone (2026-12-09T14:30:00+01:00). Past or future. E.g. the day of an appointment, or when "
    "the user said it."
)
AFTER = _string(
    "Only memories from this time on (their occurred_at, else when stored): a date 2026-12-01 (from "
    "its start, UTC) or an ISO 8601 time with a time zone."
)
BEFORE = _string(
    "Only memories up to this time (their occurred_at, else when stored): a date 2026-12-31 (to its "
    "end, UTC) or an ISO 8601 time with a time zone."
)
SUPERSEDES = {
    "type": "array",
    "items": {"type": "string", "pattern": "^mem_[A-Za-z0-9_-]{1,64}$"},
    "maxItems": 20,
    "description": (
        "Ids (mem_…) of older memories this one replaces, e.g. the old job when storing the new one: "
        "they are kept, marked replaced, and leave recall and search."
    ),
}
# The asker's clock, as REST's now=/tz= (docs/time.md): what time words and "Coming up" count from.
NOW = _string(
    'Read time words ("next week", "on Friday") as of this moment if not now, e.g. replaying an '
    "earlier conversation: a date 2026-12-03 or an ISO 8601 time with a time zone.",
    maxLength=40,
)
TZ = _string(
    "The user's IANA time zone, e.g. Europe/Berlin (default UTC): which day today is for time words.",
    minLength=1,
    maxLength=64,
)
INCLUDE_SUPERSEDED = {"type": "boolean", "description": "Also memories replaced by newer ones (marked)."}
TAG = _string("Only memories with this tag.", minLength=1, maxLength=64)
CURSOR = _string("next_cursor of the previous answer, for the next page.")
LIMIT = _integer("At most this many.", 1, 100, 20)
MEMORY = {
    "content": CONTENT,
    "category": CATEGORY,
    "key": KEY,
    "tags": TAGS,
    "priority": PRIORITY,
    "confidence": CONFIDENCE,
    "expires_at": EXPIRES_AT,
    "occurred_at": OCCURRED_AT,
    "supersedes": SUPERSEDES,
}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "remember",
        "scope": "write",
        "description": REMEMBER,
        "inputSchema": _object(MEMORY, ["content"]),
    },
    {
        "name": "remember_many",
        "scope": "write",
        "description": REMEMBER_MANY,
        "inputSchema": _object(
            {
                "memories": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 100,
                    "items": _object(MEMORY, ["content"]),
                    "description": "1-100 memories, each as `remember` takes one.",
                }
            },
            ["memories"],
        ),
    },
    {
        "name": "recall",
        "scope": "read",
        "description": RECALL,
        "inputSchema": _object(
            {
                "query": _string(RECALL_QUERY),
                "category": {
                    "type": "array",
                    "items": {"type": "string", "enum": CATEGORIES},
                    "description": "Only these categories.",
                },
                "tag": TAG,
                "max_chars": _integer("Size bound of the text, in characters.", 500, 400000),
                "after": AFTER,
                "before": BEFORE,
                "include_superseded": INCLUDE_SUPERSEDED,
                "now": NOW,
                "tz": TZ,
            }
        ),
    },
    {
        "name": "search",
        "scope": "read",
        "description": SEARCH,
        "inputSchema": _object(
            {
                "query": _string(SEARCH_QUERY, minLength=1),
                "tag": TAG,
                "category": _string("Only this category.", enum=CATEGORIES),
                "limit": _integer("At most this many hits.", 1, 100, 10),
                "mode": _string(
                    "hybrid (default): words and meaning; lexical: words only; semantic: meaning only.",
                    enum=["hybrid", "lexical", "semantic"],
                ),
                "after": AFTER,
                "before": BEFORE,
                "include_superseded": INCLUDE_SUPERSEDED,
                "now": NOW,
                "tz": TZ,
            },
            ["query"],
        ),
    },
    {
        "name": "fetch",
        "scope": "read",
        "description": FETCH,
        "inputSchema": _object({"id": MEMORY_ID}, ["id"]),
    },
    {
        "name": "by_tag",
        "scope": "read",
        "description": BY_TAG,
        "inputSchema": _object(
            {
                "tag": _string("The tag to look up, e.g. docker.", minLength=1, maxLength=64),
                "category": {
                    "type": "array",
                    "items": {"type": "string", "enum": CATEGORIES},
                    "description": "Only these categories.",
                },
                "include_expired": {"type": "boolean", "description": "Also expired memories."},
                "after": AFTER,
                "before": BEFORE,
                "include_superseded": INCLUDE_SUPERSEDED,
                "limit": LIMIT,
                "cursor": CURSOR,
            },
            ["tag"],
        ),
    },
    {
        "name": "update",
        "scope": "write",
        "description": UPDATE,
        "inputSchema": _object(
            {
                "id": MEMORY_ID,
                "content": CONTENT,
                "tags": TAGS,
                "priority": PRIORITY,
                "confidence": CONFIDENCE,
                "expires_at": {**EXPIRES_AT, "type": ["string", "null"]},
                "occurred_at": {**OCCURRED_AT, "type": ["string", "null"]},
                "supersedes": SUPERSEDES,
            },
            ["id"],
        ),
    },
    {
        "name": "forget",
        "scope": "delete",
        "description": FORGET,
        "inputSchema": _object(
            {
                "id": MEMORY_ID,
                "category": _string("With key: the memory's category.", enum=CATEGORIES),
                "key": _string("With category: the memory's key.", maxLength=128),
            }
        ),
    },
    {
        "name": "list_expiring",
        "scope": "read",
        "description": LIST_EXPIRING,
        "inputSchema": _object(
            {
                "within": _string("Window from now: 30m, 24h, 7d, 2w.", default="7d"),
                "limit": LIMIT,
                "cursor": CURSOR,
            }
        ),
    },
    {
        "name": "history",
        "scope": "read",
        "description": HISTORY,
        "inputSchema": _object({"id": MEMORY_ID, "limit": LIMIT, "cursor": CURSOR}, ["id"]),
    },
]

RESOURCES: list[dict[str, Any]] = [
    {
        "uri": "synapse://recall",
        "name": "recall",
        "description": "What Synapse remembers, most important first (the recall text).",
        "mimeType": "text/plain",
        "scope": "read",
    }
]


def _hints(
    title: str, *, reads: bool = False, destroys: bool = False, idempotent: bool = True
) -> dict[str, Any]:
    """MCP tool annotations (2025-06-18): what a host may assume when it decides to ask the person
    first. Every tool acts on this mind alone (no open world). Replacing or updating a memory keeps
    the earlier version in its history, so only `forget` is destructive."""
    return {
        "title": title,
        "readOnlyHint": reads,
        "destructiveHint": destroys,
        "idempotentHint": idempotent,
        "openWorldHint": False,
    }


ANNOTATIONS: dict[str, dict[str, Any]] = {
    "remember": _hints("Remember"),
    "remember_many": _hints("Remember several"),
    "recall": _hints("Recall", reads=True),
    "search": _hints("Search memories", reads=True),
    "fetch": _hints("Read a memory", reads=True),
    "by_tag": _hints("Memories by tag", reads=True),
    "update": _hints("Update a memory"),
    "forget": _hints("Forget a memory", destroys=True),
    "list_expiring": _hints("Expiring memories", reads=True),
    "history": _hints("Memory history", reads=True),
}
BY_NAME: dict[str, dict[str, Any]] = {tool["name"]: tool for tool in TOOLS}


def listed(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as tools/list shows it (its scope is ours, not MCP's)."""
    hints = ANNOTATIONS[tool["name"]]
    return {
        "name": tool["name"],
        "title": hints["title"],
        "description": tool["description"],
        "inputSchema": tool["inputSchema"],
        "annotations": hints,
    }


def table() -> dict[str, Any]:
    """Everything both transports share, as the JSON the client package keeps."""
    tools = [
        {**tool, "title": ANNOTATIONS[tool["name"]]["title"], "annotations": ANNOTATIONS[tool["name"]]}
        for tool in TOOLS
    ]
    return {"instructions": INSTRUCTIONS, "tools": tools, "resources": RESOURCES}


if __name__ == "__main__":
    print(json.dumps(table(), ensure_ascii=False, indent=1))
