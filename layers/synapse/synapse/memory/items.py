"""How a memory lies in the Memories table: the memory item (its sort key `MEM#<category>#<key>`
and the keys of the GSIs it feeds), its tag copies, and back from an item to a `Memory`.

A memory with an `occurred_at` also feeds the sparse GSI `occurred` (pk, occurred_sk): the list's
time window reads it beside `created` (the memories without one), `reads.list_memories`.

Revisions (`REV#…`, `history`) and proposals (`PROP#…`, `proposals`) share the mind's partition;
they carry none of the GSI key attributes (`recall_sk`, `created_sk`, `occurred_sk`, `expires_at`,
`mind_category`) at the top level, so no index, list or recall ever reads them.
"""

from __future__ import annotations

from typing import Any

from synapse.core import clock, moments
from synapse.memory import expiry, keys
from synapse.memory.kinds import Memory
from synapse.storage import tables

MEMORY_FIELDS = Memory._fields
INVERTED_BASE = 10**17


def recall_sk(memory: Memory) -> str:
    """Recall order as text: priority rank, then most recently updated first, then id."""
    updated = clock.epoch_micros(clock.from_iso(memory.updated_at))
    return f"{memory.priority_rank}#{INVERTED_BASE - updated:017d}#{memory.id}"


def occurred_sk(memory: Memory) -> str | None:
    """The `occurred` index's sort key: the event time (a date at its midnight UTC), then the id."""
    if memory.occurred_at is None:
        return None
    return f"{moments.day_start(memory.occurred_at)}#{memory.id}"


def memory_body(memory: Memory) -> dict[str, Any]:
    """The memory's fields as plain values (None ones are left out when stored)."""
    return {name: getattr(memory, name) for name in MEMORY_FIELDS}


def memory_item(memory: Memory) -> dict[str, Any]:
    """A superseded memory carries no `recall_sk`, `mind_category` nor expiry bucket: it leaves the
    recall GSIs (`recall`, `category_recall`) and the expiry sweep's indexes, so recall pays nothing
    for the memories replaced (docs/rules.md "Facts that replace facts"); a revival writes them back."""
    item = {
        **memory_body(memory),
        "pk": memory.mind_id,
        "sk": tables.memory_sk(memory.category, memory.key),
        "created_sk": f"{memory.created_at}#{memory.id}",
        "occurred_sk": occurred_sk(memory),  # None (left out when stored): not in the sparse index
    }
    if memory.superseded_by is None:
        item["recall_sk"] = recall_sk(memory)
        item["mind_category"] = f"{memory.mind_id}#{memory.category}"
        item.update(expiry.item_attributes(memory))  # the sweep's index (never `swept_at`: a write unsweeps)
    return item


def pointer_item(memory: Memory) -> dict[str, Any]:
    """The id → (category, key) pointer that GET /memory/{id} follows."""
    return {
        "pk": memory.mind_id,
        "sk": tables.pointer_sk(memory.id),
        "memory_sk": tables.memory_sk(memory.category, memory.key),
    }


SUPERSEDED_TAG_MARK = "^"
"""Tag copies of superseded memories: `TAG#<len>:<tag>#^<recall_sk>`, after the tag's live copies
(recall_sk starts 0-3) and before the swept ones (`~`), so by-tag reads them only when asked."""


def tag_item_key(memory: Memory, tag: str) -> dict[str, str]:
    mark = SUPERSEDED_TAG_MARK if memory.superseded_by is not None else ""
    return {"pk": memory.mind_id, "sk": tables.tag_prefix(tag) + mark + recall_sk(memory)}


def tag_item(memory: Memory, tag: str) -> dict[str, Any]:
    # The copy lives under `memory` so the GSIs (keyed on top-level attributes) never see it.
    return {**tag_item_key(memory, tag), "memory": memory_body(memory)}


def memory_from_item(item: dict[str, Any]) -> Memory:
    body: dict[str, Any] = {name: item.get(name) for name in MEMORY_FIELDS}
    body["confidence"] = float(item["confidence"])
    body["version"] = int(item["version"])
    body["tags"] = list(item.get("tags") or [])
    derived = item.get("key_derived")
    if derived is None:  # stored before memories recorded it: a key that is the content's derivation
        derived = keys.is_derived(str(item["category"]), str(item["key"]), str(item["content"]))
    body["key_derived"] = bool(derived)
    return Memory(**body)
