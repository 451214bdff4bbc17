"""What each MCP tool does, with the layer functions the REST handlers call (never HTTP to itself).

A tool takes the caller (credential and mind) and its checked arguments and returns what the model
reads: a dict (shown as JSON) or text. A refusal is a `SynapseError` carrying Synapse's message,
which `protocol` turns into an `isError` result.
"""

from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import Any, NamedTuple

from synapse.auth import visibility
from synapse.auth.principal import Principal
from synapse.core.errors import NotFound, Unprocessable
from synapse.mcp.schema import RECALL_QUERY_MAX

# Each tool imports the layer modules it runs (memory, recall, search with sqlite3, webhooks) when it
# is called, not when /mcp's handler is imported: a cold start answers initialize and tools/list
# without them, and a call loads only its own tool's (issue 22; tests/unit/test_mcp_imports.py).


class Caller(NamedTuple):
    principal: Principal
    mind_id: str
    vouches: bool | None = None  # a person's writes: False for an editor (`http.Addressed.vouches`)


Result = dict[str, Any] | str
Tool = Callable[[Caller, dict[str, Any]], Result]


def _proposal_note(proposal: dict[str, Any]) -> str:
    return (
        "A person verified this memory, so this change waits for their review "
        f"(proposal {proposal.get('id', '')}); until then the memory stays as shown."
    )


def _shown(public: dict[str, Any], proposal: dict[str, Any] | None) -> dict[str, Any]:
    """A stored memory as the model reads it, with a note when the change waits for review."""
    if proposal is not None:
        public["note"] = _proposal_note(proposal)
    return public


def similar_note(similar: list[dict[str, Any]]) -> str:
    """What the model reads when a write may replace memories: which, and what to do about it."""
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


def remember(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.memory import store
    from synapse.memory.model import MemoryWrite
    from synapse.memory.repeats import similar_fields
    from synapse.search import repeats

    write = MemoryWrite.from_body(arguments)  # content alone: a note, its key derived
    principal = caller.principal
    stored = store.store(
        caller.mind_id,
        write,
        principal.writer(None),
        changed_by=principal.changed_by(),
        vouches=caller.vouches,
        similar=repeats.similar_to,
    )
    shown = {**_shown(stored.memory.public(), stored.proposal), **similar_fields(stored)}
    shown = visibility.shown(principal, shown)  # notes say only what the caller may see
    if shown.get("similar"):
        shown["note"] = similar_note(shown["similar"])
    return shown


def remember_many(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.memory import store
    from synapse.memory.model import MemoryWrite
    from synapse.search import repeats
    from synapse.webhooks import batch

    principal = caller.principal

    def store_one(write: MemoryWrite) -> store.Request:
        return store.Request(
            caller.mind_id, write, principal.writer(None), principal.changed_by(), caller.vouches
        )

    answer = visibility.shown(
        principal, batch.apply_all(arguments["memories"], store_one, repeats.similar_to)
    )
    if answer["summary"]["proposed"]:
        answer["note"] = (
            "Items with status `proposed` changed memories a person verified: "
            "they wait for that person's review."
        )
    if any(r.get("similar") for r in answer["results"]):
        answer["note_similar"] = (
            "Items with `similar` may replace memories the mind already holds: `repeat` says the same "
            "(update that memory instead of keeping two), `related` may be an older value (call "
            "`update` on the new memory with `supersedes` set to the older one's id)."
        )
    return answer


def _tag(raw: str | None) -> str | None:
    if raw is None:
        return None
    tag = raw.strip().lower()
    if not tag:
        raise Unprocessable("tag: must not be blank", details=[{"field": "tag", "rule": "length"}])
    return tag


def _window(arguments: dict[str, Any]) -> Any:
    """`after`/`before` as the reads take them (`core.moments.Window`), or a refusal naming the field."""
    from synapse.core import moments

    bounds: dict[str, str | None] = {}
    for name in ("after", "before"):
        raw = arguments.get(name)
        try:
            bounds[name] = None if raw is None else moments.parse(raw.strip())
        except moments.NotAMoment as refused:
            detail = {"field": name, "rule": refused.rule, "message": refused.message}
            raise Unprocessable(f"{name}: {refused.message}", details=[detail]) from None
    window = moments.Window.of(bounds["after"], bounds["before"])
    if window.after is not None and window.before is not None and window.after > window.before:
        message = "must not be later than before"
        raise Unprocessable(
            f"after: {message}", details=[{"field": "after", "rule": "order", "message": message}]
        )
    return window


def _clock(arguments: dict[str, Any]) -> tuple[datetime | None, tzinfo | None]:
    """`now`/`tz`, the asker's clock as REST's now=/tz= read it, or a refusal naming the argument."""
    raw_now, raw_zone = arguments.get("now"), arguments.get("tz")
    if raw_now is None and raw_zone is None:
        return None, None
    from synapse.when import zones

    try:
        zone = zones.zone_of(raw_zone)
        return zones.moment_of(raw_now, zone, default=None), zone
    except zones.BadClock as refused:
        detail = {"field": refused.field, "rule": "time", "message": str(refused)}
        raise Unprocessable(f"{refused.field}: {refused}", details=[detail]) from None


def recall(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.recall import reads as recall_reads
    from synapse.recall.query import MAX_CHARS, MCP_SEARCH_HINT, RecallQuery

    asked = (arguments.get("query") or "").strip()[:RECALL_QUERY_MAX]
    now, zone = _clock(arguments)
    query = RecallQuery(
        categories=frozenset(arguments.get("category") or ()) or None,
        tag=_tag(arguments.get("tag")),
        max_chars=arguments.get("max_chars", MAX_CHARS),
        q=asked or None,
        way_on=MCP_SEARCH_HINT,
        window=_window(arguments),
        now=now,
        zone=zone,
        include_superseded=bool(arguments.get("include_superseded", False)),
    )
    return recall_reads.recall_of(caller.mind_id, query).text


def search(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.search import service
    from synapse.search.filters import Mode, SearchFilters

    filters = SearchFilters(
        tag=_tag(arguments.get("tag")),
        category=arguments.get("category"),
        window=_window(arguments),
        include_superseded=bool(arguments.get("include_superseded", False)),
    )
    mode = Mode(arguments.get("mode") or Mode.HYBRID.value)
    now, zone = _clock(arguments)
    limit = arguments.get("limit", 10)
    page = service.search(caller.mind_id, arguments["query"], filters, limit, mode=mode, now=now, zone=zone)
    results = [
        {"id": r.memory.id, "category": r.memory.category, "key": r.memory.key, "snippet": r.snippet,
         "content": r.memory.content, "tags": r.memory.tags, "score": r.score,
         "matched": list(r.matched), "coverage": r.coverage, "similarity": r.similarity,
         "relevance": r.relevance, "updated_at": r.memory.updated_at, "occurred_at": r.memory.occurred_at}
        for r in page.results
    ]  # fmt: skip
    return {"terms": page.terms, "mode": page.mode, "results": results}  # as REST names the list


def fetch(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.memory import writes

    return writes.read_by_id(caller.mind_id, arguments["id"]).public()


def by_tag(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.memory import reads
    from synapse.memory.selections import TagQuery

    tag = _tag(arguments["tag"])
    assert tag is not None
    categories = frozenset(arguments.get("category") or ()) or None
    query = TagQuery(
        tag,
        categories,
        bool(arguments.get("include_expired", False)),
        window=_window(arguments),
        include_superseded=bool(arguments.get("include_superseded", False)),
    )
    page = reads.by_tag(caller.mind_id, query, arguments.get("limit", 20), arguments.get("cursor"))
    return {"memories": [m.public() for m in page.memories], "next_cursor": page.next_cursor}


def update(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.memory import store
    from synapse.memory.model import MemoryPatch

    fields = {name: value for name, value in arguments.items() if name != "id"}
    patch = MemoryPatch.from_body(fields)
    principal = caller.principal
    stored = store.update(
        caller.mind_id,
        arguments["id"],
        patch,
        principal.writer(None),
        changed_by=principal.changed_by(),
        vouches=caller.vouches,
    )
    from synapse.memory.repeats import similar_fields

    return {**_shown(stored.memory.public(), stored.proposal), **similar_fields(stored)}


def forget(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.memory import store, writes

    memory_id = arguments.get("id")
    category, key = arguments.get("category"), arguments.get("key")
    if not memory_id:
        if not (category and key):
            raise Unprocessable("id: give the memory's id, or both its category and key")
        found = writes.read_by_key(caller.mind_id, category, key)
        if found is None:
            raise NotFound(f"No memory {category}/{key} in this mind.")
        memory_id = found.id
    principal = caller.principal
    stored = store.delete(caller.mind_id, memory_id, principal.changed_by(), principal.source, caller.vouches)
    if stored is not None:
        return {
            "proposal": stored.proposal,
            "memory": stored.memory.public(),
            "note": _proposal_note(stored.proposal or {}),
        }
    return {"deleted": memory_id, **({"category": category, "key": key} if category and key else {})}


def list_expiring(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.api.queries import parse_within
    from synapse.memory import expiring_reads

    within = parse_within(arguments.get("within", "7d"))
    page = expiring_reads.expiring(
        caller.mind_id, within, arguments.get("limit", 20), arguments.get("cursor")
    )
    return {"memories": [m.public() for m in page.memories], "next_cursor": page.next_cursor}


def memory_history(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.memory import history

    page = history.history(
        caller.mind_id, arguments["id"], arguments.get("limit", 20), arguments.get("cursor")
    )
    return {"revisions": [r.public() for r in page.items], "next_cursor": page.next_cursor}


TOOLS: dict[str, Tool] = {
    "remember": remember,
    "remember_many": remember_many,
    "recall": recall,
    "search": search,
    "fetch": fetch,
    "by_tag": by_tag,
    "update": update,
    "forget": forget,
    "list_expiring": list_expiring,
    "history": memory_history,
}


def recall_text(caller: Caller) -> str:
    """The synapse://recall resource: the mind's whole recall text."""
    from synapse.recall import reads as recall_reads
    from synapse.recall.query import MCP_SEARCH_HINT, RecallQuery

    return recall_reads.recall_of(caller.mind_id, RecallQuery(way_on=MCP_SEARCH_HINT)).text
