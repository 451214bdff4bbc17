"""What each line of a backup holds (docs/backup.md), from the stored items: the way out. The way
back into a mind is `records`, with the checks a restore makes.

Memories, revisions and proposals hold the memory as the store keeps it (`items.memory_body`),
without `mind_id`: a backup is of one mind, named once in its header, and a restore puts every
memory in the mind it restores into. Everything else leaves exactly as it is stored.
"""

from __future__ import annotations

from typing import Any

from synapse.memory import history, proposals
from synapse.memory.items import memory_body, memory_from_item
from synapse.memory.kinds import Memory


def _body(memory: Memory) -> dict[str, Any]:
    body = memory_body(memory)
    body.pop("mind_id")
    return body


def memory_fields(item: dict[str, Any]) -> dict[str, Any]:
    """A memory item (`MEM#…`) as the fields of its `memory` line."""
    return {"memory": _body(memory_from_item(item))}


def revision_fields(item: dict[str, Any]) -> dict[str, Any]:
    """A revision item (`REV#…`) as the fields of its `revision` line; `ttl` as stored (epoch s)."""
    found = history.revision_from_item(item)
    fields: dict[str, Any] = {
        "memory_id": found.memory.id,
        "version": found.version,
        "change": found.change,
        "changed_at": found.changed_at,
        "changed_by": found.changed_by,
        "memory": _body(found.memory),
    }
    if item.get("ttl") is not None:
        fields["ttl"] = int(item["ttl"])
    if item.get("claimed"):
        fields["claimed"] = item["claimed"]
    return fields


def proposal_fields(item: dict[str, Any]) -> dict[str, Any]:
    """A proposal item (`PROP#…`): every field it stores, the memory it keeps, its `ttl`."""
    fields = {name: value for name, value in proposals.public(item).items() if value is not None}
    fields["memory"] = _body(proposals.memory_of(item))
    if item.get("ttl") is not None:
        fields["ttl"] = int(item["ttl"])
    if item.get("claimed"):
        fields["claimed"] = item["claimed"]
    return fields
