"""What each line of a backup holds (docs/backup.md), from the stored items and back.

Memories, revisions and proposals hold the memory as the store keeps it (`items.memory_body`),
without `mind_id`: a backup is of one mind, named once in its header, and a restore puts every
memory in the mind it restores into. Everything else arrives exactly as it left.
"""

from __future__ import annotations

from typing import Any

from synapse.core import clock
from synapse.core.ids import looks_like_id
from synapse.memory import history, proposals
from synapse.memory.items import memory_body, memory_from_item
from synapse.memory.kinds import EDITABLE_FIELDS, KEY_PATTERN, Category, Memory, Priority, Source
from synapse.portability.format import Refused

PROPOSAL_ATTRIBUTES = (*proposals.PROPOSAL_FIELDS, "ttl")


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
    return fields


def proposal_fields(item: dict[str, Any]) -> dict[str, Any]:
    """A proposal item (`PROP#…`): every field it stores, the memory it keeps, its `ttl`."""
    fields = {name: value for name, value in proposals.public(item).items() if value is not None}
    fields["memory"] = _body(proposals.memory_of(item))
    if item.get("ttl") is not None:
        fields["ttl"] = int(item["ttl"])
    return fields


# ---------------------------------------------------------------- back into a mind


def memory_in(mind_id: str, body: Any, line: int) -> Memory:
    """The `memory` of a line as a Memory of `mind_id`; `Refused` naming the line if it is not one."""
    if not isinstance(body, dict):
        raise Refused(line, "memory", "holds no memory")
    try:
        memory = memory_from_item({**body, "mind_id": mind_id})
        _check(memory)
        return memory
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise Refused(line, "memory", f"holds a memory that is not one ({error})") from None


def _check(memory: Memory) -> None:
    """What the store's own writes rely on: the closed vocabularies, a key, an id, a timestamp."""
    Category(memory.category), Priority(memory.priority), Source(memory.source)  # ValueError if not
    if not (isinstance(memory.key, str) and KEY_PATTERN.fullmatch(memory.key)):
        raise ValueError("its key is not a key")
    if not (isinstance(memory.id, str) and looks_like_id("mem_", memory.id)) or not isinstance(
        memory.content, str
    ):
        raise TypeError("its id or content is not one")
    if not all(isinstance(tag, str) for tag in memory.tags) or not isinstance(memory.verified, bool):
        raise TypeError("its tags or verified flag are not ones")
    for stamp in (memory.created_at, memory.updated_at, memory.expires_at, memory.verified_at):
        if stamp is not None and (not isinstance(stamp, str) or clock.to_iso(clock.from_iso(stamp)) != stamp):
            raise ValueError(f"{str(stamp)[:40]!r} is not a timestamp of ours")


def revision_op(mind_id: str, record: dict[str, Any]) -> dict[str, Any]:
    """The Put of a `revision` line's item in `mind_id`, built as the write path builds it."""
    n = int(record["n"])
    memory = memory_in(mind_id, record.get("memory"), n)
    try:
        change = history.Change(str(record.get("change")))
    except ValueError:
        raise Refused(n, "revision", f"has an unknown change {str(record.get('change'))[:40]!r}") from None
    if record.get("version") != memory.version or record.get("memory_id") != memory.id:
        raise Refused(n, "revision", "names another version or memory than the memory it holds")
    by, at, ttl = record.get("changed_by"), record.get("changed_at"), record.get("ttl")
    if not isinstance(by, dict) or not isinstance(at, str) or not (ttl is None or isinstance(ttl, int)):
        raise Refused(n, "revision", "lacks who changed it and when, or has a ttl that is not a number")
    try:
        moment = clock.from_iso(at)
    except ValueError:
        moment = None
    if moment is None or clock.to_iso(moment) != at:
        raise Refused(n, "revision", "has a changed_at that is not a timestamp of ours")
    return history.revision_put(memory, change, by, moment, ttl)


def proposal_item(mind_id: str, record: dict[str, Any]) -> dict[str, Any]:
    """A `proposal` line's item in `mind_id`: its stored fields, the memory it keeps, its `ttl`."""
    n = int(record["n"])
    snapshot = memory_in(mind_id, record.get("memory"), n)
    proposal_id, proposed = record.get("id"), record.get("proposed")
    if (
        not isinstance(proposal_id, str)
        or not proposal_id.startswith("prop_")
        or not isinstance(proposed, dict)
    ):
        raise Refused(n, "proposal", "lacks the proposal's id or what it proposes")
    if record.get("status") not in {status.value for status in proposals.Status}:
        raise Refused(n, "proposal", f"has an unknown status {str(record.get('status'))[:40]!r}")
    item = {name: record.get(name) for name in PROPOSAL_ATTRIBUTES}
    item["proposed"] = {name: proposed.get(name) for name in EDITABLE_FIELDS}
    return {**item, **proposals.proposal_key(mind_id, proposal_id), "memory": memory_body(snapshot)}
