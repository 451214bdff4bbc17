"""Every change to a memory kept as a revision: what it was after the change, what the change
was, when and who.

A revision is an item in the mind's partition, `REV#<memory id>#<version, 10 digits>`, holding
`version`, `memory` (the whole memory after the change, nested so no index sees it), `change`,
`changed_at` and `changed_by`. It is Put in the same transaction as the change itself (see
`writes`), built from what the write already holds: no read on any write path. A memory's history
is one Query on its prefix, newest first, so it answers for a deleted memory as well.

Retention, by DynamoDB TTL (`ttl`, epoch seconds). The newest `KEEP_NEWEST` revisions of a memory
carry no `ttl`. Writing version v starts the clock of version v-10 (an Update in the same
transaction): it expires `history_retention_days` (the mind's setting, default 90) later. So the
last 10 are always kept and older ones live at least the retention past the moment they stopped
being among the last 10. Only a memory past 10 versions needs the setting; it is read at most
once a minute per process (`_retention`). Deleting a memory writes its `deleted` revision and
gives it and the 9 before it a `ttl` of 30 days; a restore takes that `ttl` off again.
"""

import time
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.errors import NotFound
from synapse.core.ids import looks_like_id
from synapse.memory import writes
from synapse.memory.items import memory_body, memory_from_item
from synapse.memory.kinds import Memory
from synapse.minds import minds
from synapse.storage import pages, tables

REVISION_PREFIX = "REV#"
KEEP_NEWEST = 10
DELETED_KEPT = timedelta(days=30)
SETTINGS_CACHED_SECONDS = 60.0


class Change(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    REPLACED = "replaced"
    VERIFIED = "verified"
    RESTORED = "restored"
    DELETED = "deleted"
    PROPOSAL_ACCEPTED = "proposal_accepted"
    SUPERSEDED = "superseded"  # another memory replaced it (`memory.supersede`)


def revisions_prefix(memory_id: str) -> str:
    return f"{REVISION_PREFIX}{memory_id}#"


def revision_key(mind_id: str, memory_id: str, version: int) -> dict[str, str]:
    return {"pk": mind_id, "sk": f"{revisions_prefix(memory_id)}{version:010d}"}


_retention_cache: dict[str, tuple[float, int]] = {}


def _retention(mind_id: str) -> timedelta:
    """The mind's history retention, read at most once per SETTINGS_CACHED_SECONDS per process."""
    cached = _retention_cache.get(mind_id)
    if cached is None or time.monotonic() - cached[0] > SETTINGS_CACHED_SECONDS:
        cached = (time.monotonic(), minds.settings_of(mind_id).history_retention_days)
        _retention_cache[mind_id] = cached
    return timedelta(days=cached[1])


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _timed(mind_id: str, memory_id: str, version: int, ttl: int) -> dict[str, Any]:
    return writes.update(
        revision_key(mind_id, memory_id, version), "SET #ttl = :ttl", {"ttl": ttl}, {"#ttl": "ttl"}
    )


def revision_put(
    memory: Memory,
    change: Change,
    changed_by: writes.ChangedBy,
    at: datetime,
    ttl: int | None = None,
    claimed: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The Put of a revision; `claimed`: what a restored backup said that the restore could not
    stand behind (portability.trust), kept for the record."""
    item = {
        **revision_key(memory.mind_id, memory.id, memory.version),
        "version": memory.version,
        "memory": memory_body(memory),
        "change": change.value,
        "changed_at": clock.to_iso(at),
        "changed_by": dict(changed_by),
        "ttl": ttl,
        "claimed": claimed,
    }
    return writes.put(item)


def revision_ops(
    memory: Memory, change: Change, changed_by: writes.ChangedBy, at: datetime
) -> list[dict[str, Any]]:
    """The revision of a change that leaves `memory`, and the clock of the one leaving the last 10."""
    ops = [revision_put(memory, change, changed_by, at)]
    leaving = memory.version - KEEP_NEWEST
    if leaving >= 1:
        ops.append(_timed(memory.mind_id, memory.id, leaving, _epoch(at + _retention(memory.mind_id))))
    return ops


def deleted_ops(old: Memory, changed_by: writes.ChangedBy, at: datetime) -> list[dict[str, Any]]:
    """The `deleted` revision (version + 1) and 30 days for it and the 9 before it."""
    gone = old._replace(version=old.version + 1, updated_at=clock.to_iso(at))
    ttl = _epoch(at + DELETED_KEPT)
    ops = [revision_put(gone, Change.DELETED, changed_by, at, ttl)]
    first = max(1, gone.version - KEEP_NEWEST + 1)
    return ops + [_timed(old.mind_id, old.id, version, ttl) for version in range(first, gone.version)]


def untimed_ops(mind_id: str, memory_id: str, versions: list[int]) -> list[dict[str, Any]]:
    """Take the clock off revisions that are among the newest 10 again (after a restore)."""
    return [
        writes.update(revision_key(mind_id, memory_id, v), "REMOVE #ttl", names={"#ttl": "ttl"})
        for v in versions
    ]


# ---------------------------------------------------------------- reading history


class Revision(NamedTuple):
    version: int
    memory: Memory
    change: str
    changed_at: str
    changed_by: dict[str, str]
    claimed: dict[str, Any] | None = None

    def public(self) -> dict[str, Any]:
        shown = {
            "version": self.version,
            "memory": self.memory.public(),
            "change": self.change,
            "changed_at": self.changed_at,
            "changed_by": self.changed_by,
        }
        return {**shown, "claimed": self.claimed} if self.claimed else shown


def _revision(item: dict[str, Any]) -> Revision:
    return Revision(
        version=int(item["version"]),
        memory=memory_from_item(item["memory"]),
        change=str(item["change"]),
        changed_at=str(item["changed_at"]),
        changed_by=dict(item.get("changed_by") or {}),
        claimed=item.get("claimed") or None,
    )


def _live(item: dict[str, Any], now: int) -> bool:
    """A revision (not a clock-only stub of one) that TTL has not yet expired."""
    ttl = item.get("ttl")
    return "memory" in item and (ttl is None or int(ttl) > now)


def _not_found(memory_id: str) -> NotFound:
    return NotFound(f"No memory {memory_id[:80]!r} in this mind, and no history of one.")


def history(mind_id: str, memory_id: str, limit: int, after: str | None) -> pages.Page[Revision]:
    """A page of the memory's revisions, newest first; 404 when it has none (never existed, or
    its history has expired)."""
    if not looks_like_id("mem_", memory_id):
        raise _not_found(memory_id)
    prefix = revisions_prefix(memory_id)

    def start_key(position: dict[str, Any]) -> dict[str, str] | None:
        sort_key = position["sk"]
        fits = isinstance(sort_key, str) and sort_key.startswith(prefix)
        return {"pk": mind_id, "sk": sort_key} if fits else None

    params = {
        "TableName": tables.memories_table(),
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
        "FilterExpression": "attribute_exists(#memory) AND (attribute_not_exists(#ttl) OR #ttl > :now)",
        "ExpressionAttributeNames": {"#memory": "memory", "#ttl": "ttl"},
        "ExpressionAttributeValues": tables.values(pk=mind_id, prefix=prefix, now=_epoch(clock.now())),
        "ScanIndexForward": False,
    }
    position = pages.Position(("sk",), start_key)
    found = pages.read(params, mind_id, f"history {memory_id}", limit, after, position)
    if not found.items and after is None:
        raise _not_found(memory_id)
    return pages.Page([_revision(item) for item in found.items], found.next_cursor)


def revision(mind_id: str, memory_id: str, version: int) -> Revision:
    """One revision (404 if it never was or has expired)."""
    item = tables.get(tables.memories_table(), revision_key(mind_id, memory_id, version))
    if item is None or not _live(item, _epoch(clock.now())):
        raise NotFound(f"Memory {memory_id[:80]!r} has no revision {version}.")
    return _revision(item)


def newest(mind_id: str, memory_id: str, count: int) -> list[dict[str, Any]]:
    """The newest `count` revision items (stubs included), newest first: one small Query."""
    return pages.first(
        {
            "TableName": tables.memories_table(),
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": tables.values(pk=mind_id, prefix=revisions_prefix(memory_id)),
            "ScanIndexForward": False,
        },
        count,
    )


def revision_from_item(item: dict[str, Any]) -> Revision:
    return _revision(item)
