"""The MCP tool table: one set of tools for `/mcp` and for `synapse mcp` (stdio, clients/python).

Pure data, JSON-serialisable: `table()` is what clients/python/src/synapse_client/mcp_tools.json
holds (tests/unit/test_mcp_tools_drift.py fails when the two differ; regenerate the file with
`PYTHONPATH=layers/synapse python -m synapse.mcp.schema > clients/python/src/synapse_client/mcp_tools.json`).
Each tool names the Mind Key scope it needs: a key without it neither lists nor calls the tool.
"""

from __future__ import annotations

import json
from typing import Any

CATEGORIES = ["identity", "preference", "fact", "project", "skill", "mistake", "context", "note"]
PRIORITIES = ["critical", "high", "normal", "low"]
CONTENT_MAX_BYTES = 32 * 1024
RECALL_QUERY_MAX = 1000  # what recall's `query` sends as q: the start of a long message

INSTRUCTIONS = """\
Synapse is your long-term memory about the user and their work, shared across sessions and agents.
At the start of each turn, call `recall` with the user's message as `query` (or read the
synapse://recall resource) to load what is known, the most relevant first.
When you learn something worth keeping — who the user is, what they prefer, facts, project state,
skills, mistakes to avoid — call `remember`: `content` alone is enough; give a category and a stable
snake_case key when you have them, so that a later update replaces the memory instead of duplicating
it. Use `search` to find something specific (the user's question as-is works) and `fetch` to read one
hit in full, `forget` when a memory is wrong or no longer true, `list_expiring` to see short-lived
context about to lapse."""

REMEMBER = """\
Store one memory in the user's Synapse mind. Only `content` is required: without a category it is a
note, and without a key one is derived from the content, so storing the same text twice keeps one
memory. Storing again with the same category and key REPLACES that memory (same id, version + 1),
so reuse stable keys: `home_city`, `preferred_editor`, `project_atlas_status` — lowercase
snake_case, no dates or counters in keys.

Categories: identity (who the user is: name, role, languages), preference (how they like things
done), fact (durable facts about their world), project (state and decisions of ongoing work),
skill (how to do something in their environment), mistake (what went wrong, to avoid repeating),
context (short-lived situational context: current task, today's plan — give it expires_at),
note (anything else).

Priority: critical (always needed), high, normal (default), low. Confidence: 0-1 (how sure you
are; agents default to 0.7). expires_at: a future ISO 8601 timestamp with a time zone such as
2030-06-30T18:00:00Z (a past one is refused) — set it for session or task context so it drops out
of recall by itself. occurred_at: when the event happened or will happen, or when the user said it,
if that is not now — a date (2026-12-09) or a timestamp with a time zone; recall shows it and
after/before on the reads select by it.
Returns the stored memory (its id, version, verified flag, updated_at). An agent's write to a memory
a person verified may come back as a proposal awaiting their review. When the mind already holds
memories this one may replace, the answer lists them in `similar` (relation `repeat`: says the same;
`related`: the same subject, perhaps an older value) and says what to do. When a new fact replaces
an older one ("now works at Globex" after "works at Acme"), pass the older memory's id in
`supersedes`: it is kept, marked replaced, and drops out of recall and search."""

REMEMBER_MANY = """\
Store up to 100 memories at once, each exactly as `remember` stores one (content alone works).
Each item succeeds or fails on its own: the answer has one result per item, in order (created,
replaced, proposed or error with Synapse's message), and a summary."""

RECALL = """\
Load the plain-text summary of what Synapse remembers about the user. Call it at the start of each
turn with the user's message as `query`: the memories most relevant to it come right after the
critical ones, then the rest by priority (critical, high, normal, low); expired memories left out,
verified ones marked, an entry's event date on an `On:` line. Narrow it with category (one or more),
tag, or a time window (after/before: dates or timestamps, on each memory's occurred_at, else when it
was stored); max_chars (500-400000) bounds the text's size."""

SEARCH = """\
Search the user's memories, best match first. Pass the user's question as-is ("What coffee does
he drink?") or keywords; exact syntax also works: "a phrase", prefix*, AND, OR, NOT, +required.
Questions match by meaning too ("who is his partner?" finds "Wife is Anna"). Each of the `results`
has a snippet of its content (matches in **bold**), `relevance` (strong: an answer to act on; weak:
related at best), `score`, `matched` (which of the query's `terms` it matched), `coverage` (0-1,
their share), `similarity` and `updated_at`. If no hit is strong, a weak match at best, the memories
most likely do not hold the answer: say "I don't know" rather than guess. Of two hits saying
nearly the same, the newer (the current fact) comes first. Filter by tag or category, or by time
with after/before (dates or timestamps, on occurred_at, else when stored: "what did we discuss this
week?"); mode=lexical for words only. A memory stored a moment ago may take a few seconds to become
searchable. Read a hit in full with `fetch`."""

FETCH = """\
Read one memory in full by its id (mem_…, as `search`, `by_tag` or `remember` return it): its
content, category, key, tags, priority, confidence, version, verified flag and expiry."""

BY_TAG = """\
The memories carrying a tag (case-insensitive), most important first. Narrow by category; expired
memories are left out unless include_expired is true. Pass next_cursor back as cursor for more."""

UPDATE = """\
Change some fields of one memory by its id; fields left out stay as they are, expires_at null
clears the expiry, occurred_at null clears the event time. To replace a memory whose category and
key you know, `remember` works too. An agent's change to a memory a person verified comes back as a
proposal awaiting their review. `supersedes` marks other memories (ids) as replaced by this one."""

FORGET = """\
Delete a memory: by its id, or by category and key. Use it when a memory is wrong, no longer true,
or the user asks you to forget it. To correct a memory, prefer `remember` with the same category
and key. Deleting a memory a person verified is proposed to them instead."""

LIST_EXPIRING = """\
Memories whose expires_at falls within the coming window (soonest first): short-lived context about
to drop out of recall. Renew one with `remember` (same category and key, a later expires_at) if it
still matters. within: a whole number with m, h, d or w (30m, 24h, 7d, 2w); at most 365d."""

HISTORY = """\
Every revision of one memory, newest first (a deleted memory's too, for 30 days): what it said,
when, and who changed it. Use it to see how a memory came to say what it says."""

SEARCH_QUERY = (
    "The user's question as-is, or keywords. Each hit's `relevance` says whether it answers it "
    "(strong) or is related at best (weak)."
)
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
