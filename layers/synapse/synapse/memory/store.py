"""Memories in DynamoDB: idempotent store-by-key, id lookup, conditional update, delete, list.

Every write is one DynamoDB transaction over the memory item, its id pointer, its tag copies
and (on create/delete) the mind's counter, conditioned on the version it read. A lost race
re-reads and tries again, so concurrent writers to one (category, key) serialise cleanly:
no duplicate, no lost version, no half-written fan-out.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from synapse.core import clock
from synapse.core.errors import NotFound, PreconditionFailed, Throttled
from synapse.core.ids import looks_like_id
from synapse.memory import counts
from synapse.memory.model import (
    Memory,
    MemoryPatch,
    MemoryWrite,
    Source,
    new_memory,
    patched,
    replaced,
    verified,
)
from synapse.storage import cursor, tables

MAX_ATTEMPTS = 60
LIST_READ_BUDGET = 1000  # items one GET /memory may read before it answers with a cursor
_MEMORY_FIELDS = tuple(f.name for f in fields(Memory))
_INVERTED_BASE = 10**17


class _Retry(Exception):
    """The condition this attempt relied on no longer holds: read again and retry."""


# ---------------------------------------------------------------- item layout


def recall_sk(memory: Memory) -> str:
    """Recall order as text: priority rank, then most recently updated first, then id."""
    updated = clock.epoch_micros(clock.from_iso(memory.updated_at))
    return f"{memory.priority_rank}#{_INVERTED_BASE - updated:017d}#{memory.id}"


def memory_item(memory: Memory) -> dict[str, Any]:
    body = {name: getattr(memory, name) for name in _MEMORY_FIELDS}
    return {
        **body,
        "pk": memory.mind_id,
        "sk": tables.memory_sk(memory.category, memory.key),
        "recall_sk": recall_sk(memory),
        "created_sk": f"{memory.created_at}#{memory.id}",
        "mind_category": f"{memory.mind_id}#{memory.category}",
    }


def tag_item_key(memory: Memory, tag: str) -> dict[str, str]:
    return {"pk": memory.mind_id, "sk": tables.tag_prefix(tag) + recall_sk(memory)}


def _tag_item(memory: Memory, tag: str) -> dict[str, Any]:
    # The copy lives under `memory` so the GSIs (keyed on top-level attributes) never see it.
    return {**tag_item_key(memory, tag), "memory": {name: getattr(memory, name) for name in _MEMORY_FIELDS}}


def memory_from_item(item: dict[str, Any]) -> Memory:
    body: dict[str, Any] = {name: item.get(name) for name in _MEMORY_FIELDS}
    body["confidence"] = float(item["confidence"])
    body["version"] = int(item["version"])
    body["tags"] = list(item.get("tags") or [])
    return Memory(**body)


# ---------------------------------------------------------------- reads


def _read_by_key(mind_id: str, category: str, key: str) -> Memory | None:
    item = tables.get(tables.memories_table(), {"pk": mind_id, "sk": tables.memory_sk(category, key)})
    return memory_from_item(item) if item else None


def _read_by_id(mind_id: str, memory_id: str) -> Memory:
    not_found = NotFound(f"No memory {memory_id[:80]!r} in this mind.")
    if not looks_like_id("mem_", memory_id):
        raise not_found
    pointer = tables.get(tables.memories_table(), {"pk": mind_id, "sk": tables.pointer_sk(memory_id)})
    if pointer is None:
        raise not_found
    item = tables.get(tables.memories_table(), {"pk": mind_id, "sk": pointer["memory_sk"]})
    if item is None or item.get("id") != memory_id:
        raise not_found
    return memory_from_item(item)


def get_memory(mind_id: str, memory_id: str) -> Memory:
    return _read_by_id(mind_id, memory_id)


# ---------------------------------------------------------------- write plumbing


def _put(item: dict[str, Any], condition: str | None = None, **condition_values: Any) -> dict[str, Any]:
    put: dict[str, Any] = {"TableName": tables.memories_table(), "Item": tables.dump(item)}
    if condition:
        put["ConditionExpression"] = condition
        if condition_values:
            put["ExpressionAttributeValues"] = tables.values(**condition_values)
    return {"Put": put}


def _delete(key: dict[str, str], condition: str | None = None, **condition_values: Any) -> dict[str, Any]:
    delete: dict[str, Any] = {"TableName": tables.memories_table(), "Key": tables.dump(key)}
    if condition:
        delete["ConditionExpression"] = condition
        if condition_values:
            delete["ExpressionAttributeValues"] = tables.values(**condition_values)
    return {"Delete": delete}


def _count_memories(mind_id: str, delta: int) -> dict[str, Any]:
    """Keep the mind's memory_count in the same transaction; fails if the mind is gone."""
    return {
        "Update": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(tables.mind_key(mind_id)),
            "UpdateExpression": "ADD memory_count :delta",
            "ConditionExpression": "attribute_exists(pk)",
            "ExpressionAttributeValues": tables.values(delta=delta),
        }
    }


# "Unchanged since we read it" names the id too: a memory deleted and re-created under the same
# (category, key) starts again at version 1, and a writer holding the old one must not win (ABA).
UNCHANGED = "id = :id AND version = :seen"


def _replace_ops(old: Memory, new: Memory) -> list[dict[str, Any]]:
    """Swap `old` for `new` if nobody changed it since we read it: memory plus its tag copies."""
    ops = [_put(memory_item(new), UNCHANGED, id=old.id, seen=old.version)]
    # A write in the same millisecond keeps a tag copy's key: overwrite it, never delete and put
    # the same item in one transaction (DynamoDB refuses two operations on one item).
    kept = [tag_item_key(new, tag) for tag in new.tags]
    ops += [_delete(key) for key in (tag_item_key(old, tag) for tag in old.tags) if key not in kept]
    ops += [_put(_tag_item(new, tag)) for tag in new.tags]
    return ops + counts.operations(new.mind_id, old, new)


def _commit(operations: list[dict[str, Any]], mind_op_index: int | None = None) -> None:
    try:
        tables.transact(operations)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code")
        if code != "TransactionCanceledException":
            if code in {"TransactionConflictException", "ProvisionedThroughputExceededException"}:
                raise _Retry from error
            raise
        reasons = tables.cancellation_codes(error)
        mind_failed = mind_op_index is not None and reasons[mind_op_index : mind_op_index + 1] == [
            "ConditionalCheckFailed"
        ]
        if mind_failed:
            raise NotFound("This mind no longer exists.") from error
        raise _Retry from error


def _retrying[T](attempt: Callable[[], T]) -> T:
    """Run an optimistic read-then-conditional-write until it wins, with jittered backoff."""
    for tries in range(MAX_ATTEMPTS):
        try:
            return attempt()
        except _Retry:
            time.sleep(random.uniform(0, min(0.2, 0.005 * 2 ** min(tries, 6))))
    raise Throttled("Too many concurrent writes to this memory; retry shortly.")


# ---------------------------------------------------------------- writes


@dataclass(frozen=True)
class Stored:
    memory: Memory
    created: bool


def store(mind_id: str, write: MemoryWrite, source: Source, at: datetime | None = None) -> Stored:
    """Create, or replace by (category, key). Never creates a duplicate, whatever the race."""

    def attempt() -> Stored:
        moment = at or clock.now()
        current = _read_by_key(mind_id, write.category.value, write.key)
        if current is None:
            memory = new_memory(mind_id, write, source, moment)
            ops = [
                _put(memory_item(memory), "attribute_not_exists(pk)"),
                _put(
                    {
                        "pk": mind_id,
                        "sk": tables.pointer_sk(memory.id),
                        "memory_sk": memory_item(memory)["sk"],
                    }
                ),
                *[_put(_tag_item(memory, tag)) for tag in memory.tags],
                *counts.operations(mind_id, None, memory),
                _count_memories(mind_id, +1),
            ]
            _commit(ops, mind_op_index=len(ops) - 1)
            return Stored(memory, created=True)
        memory = replaced(current, write, source, moment)
        _commit(_replace_ops(current, memory))
        return Stored(memory, created=False)

    return _retrying(attempt)


def update(
    mind_id: str,
    memory_id: str,
    patch: MemoryPatch,
    source: Source,
    if_match: int | None = None,
) -> Memory:
    def attempt() -> Memory:
        current = _read_by_id(mind_id, memory_id)
        if if_match is not None and current.version != if_match:
            raise PreconditionFailed(
                f"If-Match: version {if_match} is stale; the memory is at version {current.version}."
            )
        memory = patched(current, patch, source, clock.now())
        _commit(_replace_ops(current, memory))
        return memory

    return _retrying(attempt)


def verify(mind_id: str, memory_id: str, user_id: str) -> Memory:
    def attempt() -> Memory:
        current = _read_by_id(mind_id, memory_id)
        memory = verified(current, user_id, clock.now())
        _commit(_replace_ops(current, memory))
        return memory

    return _retrying(attempt)


def delete(mind_id: str, memory_id: str) -> None:
    def attempt() -> None:
        current = _read_by_id(mind_id, memory_id)
        ops = [
            _delete(
                {"pk": mind_id, "sk": tables.memory_sk(current.category, current.key)},
                UNCHANGED,
                id=current.id,
                seen=current.version,
            ),
            _delete({"pk": mind_id, "sk": tables.pointer_sk(current.id)}),
            *[_delete(tag_item_key(current, tag)) for tag in current.tags],
            *counts.operations(mind_id, current, None),
            _count_memories(mind_id, -1),
        ]
        _commit(ops, mind_op_index=len(ops) - 1)

    _retrying(attempt)


def purge_mind(mind_id: str) -> int:
    """Delete every item of a mind (memories, pointers, tag copies). Repeats until none is left."""
    deleted = 0
    while True:
        keys = [
            {"pk": item["pk"], "sk": item["sk"]}
            for item in tables.query_all(
                TableName=tables.memories_table(),
                KeyConditionExpression="pk = :mind",
                ExpressionAttributeValues=tables.values(mind=mind_id),
                ProjectionExpression="pk, sk",
            )
        ]
        if not keys:
            return deleted
        tables.batch_delete(tables.memories_table(), keys)
        deleted += len(keys)


# ---------------------------------------------------------------- list


@dataclass(frozen=True)
class ListFilters:
    category: str | None = None
    tag: str | None = None
    priority: str | None = None
    source: str | None = None
    verified: bool | None = None
    include_expired: bool = False

    def scope(self) -> str:
        return "list?" + "&".join(f"{k}={v}" for k, v in sorted(vars(self).items()) if v is not None)


@dataclass(frozen=True)
class Page:
    memories: list[Memory]
    next_cursor: str | None


def _filter_expression(filters: ListFilters, now: str) -> tuple[str | None, dict[str, Any], dict[str, str]]:
    clauses: list[str] = []
    vals: dict[str, Any] = {}
    for name in ("category", "priority", "source", "verified"):
        value = getattr(filters, name)
        if value is not None:
            clauses.append(f"#{name} = :{name}")
            vals[name] = value
    if filters.tag is not None:
        clauses.append("contains(tags, :tag)")
        vals["tag"] = filters.tag
    if not filters.include_expired:
        clauses.append("(attribute_not_exists(expires_at) OR expires_at > :now)")
        vals["now"] = now
    names = {
        f"#{n}": n for n in ("category", "priority", "source", "verified") if getattr(filters, n) is not None
    }
    return (" AND ".join(clauses) or None), vals, names


def list_memories(mind_id: str, filters: ListFilters, limit: int, after: str | None) -> Page:
    """Newest first (by created_at): reads until `limit` matches plus one, to know whether more exist.

    A selective filter on a large mind could read on and on, so one request reads at most about
    LIST_READ_BUDGET items; it then answers what it found (maybe fewer than `limit`, maybe none)
    with a cursor where it stopped. Clients already follow `next_cursor` until it is null.
    """
    scope = filters.scope()
    params: dict[str, Any] = {
        "TableName": tables.memories_table(),
        "IndexName": "created",
        "KeyConditionExpression": "pk = :mind",
        "ScanIndexForward": False,
        "Limit": min(limit + 1, 100),
    }
    expression, vals, names = _filter_expression(filters, clock.to_iso(clock.now()))
    params["ExpressionAttributeValues"] = tables.values(mind=mind_id, **vals)
    if expression:
        params["FilterExpression"] = expression
    if names:
        params["ExpressionAttributeNames"] = names
    if after:
        params["ExclusiveStartKey"] = tables.dump(
            cursor.decode(after, mind_id, scope, ("pk", "sk", "created_sk"))
        )
    found: list[dict[str, Any]] = []
    stopped_at: dict[str, Any] | None = None
    for pages, (items, last_key) in enumerate(tables.query_pages(**params), start=1):
        found += items
        if len(found) > limit:
            break
        if last_key and pages * params["Limit"] >= LIST_READ_BUDGET:
            stopped_at = tables.load(last_key)
            break
    memories = [memory_from_item(i) for i in found[:limit]]
    next_cursor = None
    if len(found) > limit:
        last = found[limit - 1]
        stopped_at = {"pk": last["pk"], "sk": last["sk"], "created_sk": last["created_sk"]}
    if stopped_at is not None:
        next_cursor = cursor.encode(mind_id, scope, stopped_at)
    return Page(memories, next_cursor)
