"""What each MCP tool does, with the layer functions the REST handlers call (never HTTP to itself).

A tool takes the caller (credential and mind) and its checked arguments and returns what the model
reads: a dict (shown as JSON) or text. A refusal is a `SynapseError` carrying Synapse's message,
which `protocol` turns into an `isError` result.
"""

import hashlib
import re
import unicodedata
from collections.abc import Callable
from typing import Any, NamedTuple

from synapse.auth.principal import Principal
from synapse.core.errors import NotFound, Unprocessable
from synapse.mcp.schema import RECALL_QUERY_MAX

# Each tool imports the layer modules it runs (memory, recall, search with sqlite3, webhooks) when it
# is called, not when /mcp's handler is imported: a cold start answers initialize and tools/list
# without them, and a call loads only its own tool's (issue 22; tests/unit/test_mcp_imports.py).

DEFAULT_CATEGORY = "note"
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


class Caller(NamedTuple):
    principal: Principal
    mind_id: str
    vouches: bool | None = None  # a person's writes: False for an editor (`http.Addressed.vouches`)


Result = dict[str, Any] | str
Tool = Callable[[Caller, dict[str, Any]], Result]


def derived_key(category: str, content: str) -> str:
    """The key of a memory stored without one: its first meaningful words, readable in recall, and a
    short digest of the whole text so two notes that start alike stay two. The same text (case and
    spacing aside) gives the same key, so storing it twice keeps one memory."""
    normalized = " ".join(content.split()).casefold()
    digest = hashlib.sha256(normalized.encode()).hexdigest()[:KEY_DIGEST_CHARS]
    plain = unicodedata.normalize("NFKD", normalized).encode("ascii", "ignore").decode()
    words = [word[:KEY_WORD_CHARS] for word in re.findall(r"[a-z0-9]+", plain) if word not in KEY_STOPWORDS]
    return f"{'_'.join(words[:KEY_WORDS]) or category}_{digest}"


def write_body(arguments: dict[str, Any]) -> dict[str, Any]:
    """`remember`'s arguments as POST /memory's body: category `note` and a derived key by default."""
    body = {"category": DEFAULT_CATEGORY, **arguments}
    if "key" not in body and isinstance(body.get("content"), str):
        body["key"] = derived_key(str(body["category"]), body["content"])
    return body


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
    """What the model reads when a write repeats a memory: which, and what to do about it."""
    named = "; ".join(f"key {s['key']} (id {s['id']}, similarity {s['similarity']})" for s in similar)
    return (
        f"A similar memory exists: {named}. If this is the same fact, update that memory instead of "
        "keeping two versions: remember again with its category and key, then forget the one just "
        "stored."
    )


def remember(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.memory import store
    from synapse.memory.model import MemoryWrite
    from synapse.memory.repeats import similar_fields
    from synapse.search import repeats

    write = MemoryWrite.from_body(write_body(arguments))
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
    if stored.similar:
        shown["note"] = similar_note(list(stored.similar))
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

    answer = batch.apply_all(
        [write_body(item) for item in arguments["memories"]], store_one, repeats.similar_to
    )
    if answer["summary"]["proposed"]:
        answer["note"] = (
            "Items with status `proposed` changed memories a person verified: "
            "they wait for that person's review."
        )
    if any(r.get("similar") for r in answer["results"]):
        answer["note_similar"] = (
            "Items with `similar` repeat a memory the mind already holds under another key: update "
            "that memory instead of keeping two versions (remember with its category and key)."
        )
    return answer


def _tag(raw: str | None) -> str | None:
    if raw is None:
        return None
    tag = raw.strip().lower()
    if not tag:
        raise Unprocessable("tag: must not be blank", details=[{"field": "tag", "rule": "length"}])
    return tag


def recall(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.recall import reads as recall_reads
    from synapse.recall.query import MAX_CHARS, MCP_SEARCH_HINT, RecallQuery

    asked = (arguments.get("query") or "").strip()[:RECALL_QUERY_MAX]
    query = RecallQuery(
        categories=frozenset(arguments.get("category") or ()) or None,
        tag=_tag(arguments.get("tag")),
        max_chars=arguments.get("max_chars", MAX_CHARS),
        q=asked or None,
        way_on=MCP_SEARCH_HINT,
    )
    return recall_reads.recall_of(caller.mind_id, query).text


def search(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.search import service
    from synapse.search.filters import Mode, SearchFilters

    filters = SearchFilters(tag=_tag(arguments.get("tag")), category=arguments.get("category"))
    mode = Mode(arguments.get("mode") or Mode.HYBRID.value)
    page = service.search(caller.mind_id, arguments["query"], filters, arguments.get("limit", 10), mode=mode)
    hits = [
        {"id": r.memory.id, "category": r.memory.category, "key": r.memory.key, "snippet": r.snippet,
         "content": r.memory.content, "tags": r.memory.tags, "score": r.score,
         "matched": list(r.matched), "coverage": r.coverage, "similarity": r.similarity,
         "updated_at": r.memory.updated_at}
        for r in page.results
    ]  # fmt: skip
    return {"terms": page.terms, "mode": page.mode, "hits": hits}


def fetch(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.memory import writes

    return writes.read_by_id(caller.mind_id, arguments["id"]).public()


def by_tag(caller: Caller, arguments: dict[str, Any]) -> Result:
    from synapse.memory import reads
    from synapse.memory.selections import TagQuery

    tag = _tag(arguments["tag"])
    assert tag is not None
    categories = frozenset(arguments.get("category") or ()) or None
    query = TagQuery(tag, categories, bool(arguments.get("include_expired", False)))
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
    return _shown(stored.memory.public(), stored.proposal)


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
    from synapse.memory import reads

    within = parse_within(arguments.get("within", "7d"))
    page = reads.expiring(caller.mind_id, within, arguments.get("limit", 20), arguments.get("cursor"))
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
