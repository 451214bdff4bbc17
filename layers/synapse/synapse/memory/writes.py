"""The plumbing every memory write shares: reading what it changes, the transaction operations,
committing them, and retrying an optimistic write that lost a race.

Every write is one DynamoDB transaction over the memory item, its id pointer, its tag copies, its
counters, the revision that records the change (`history`) and, for an agent's change to a
verified memory, the proposal (`proposals`), conditioned on the memory as it was read. A lost race
re-reads and tries again, so concurrent writers to one (category, key) serialise cleanly: no
duplicate, no lost version, no half-written fan-out, never a change without its revision.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from synapse.core.errors import NotFound, Throttled
from synapse.core.ids import looks_like_id
from synapse.memory import counts, expiry
from synapse.memory.items import memory_from_item, memory_item, pointer_item, tag_item, tag_item_key
from synapse.memory.kinds import Memory
from synapse.storage import tables

MAX_ATTEMPTS = 60
ChangedBy = dict[str, str]
"""Who made a change: {"source": "user", "user_id"} | {"source": "agent", "key_id" | "hook_id" |
"grant_id"}."""


class Retry(Exception):
    """The condition this attempt relied on no longer holds: read again and retry."""


def default_changed_by(source: str) -> ChangedBy:
    """For callers that do not say who (scripts, benchmarks): the source alone."""
    return {"source": source}


# ---------------------------------------------------------------- reads


def read_by_key(mind_id: str, category: str, key: str) -> Memory | None:
    item = tables.get(tables.memories_table(), {"pk": mind_id, "sk": tables.memory_sk(category, key)})
    return memory_from_item(item) if item else None


def find_by_id(mind_id: str, memory_id: str) -> Memory | None:
    """The live memory with this id, or None (no such id, or deleted)."""
    if not looks_like_id("mem_", memory_id):
        return None
    pointer = tables.get(tables.memories_table(), {"pk": mind_id, "sk": tables.pointer_sk(memory_id)})
    if pointer is None:
        return None
    item = tables.get(tables.memories_table(), {"pk": mind_id, "sk": pointer["memory_sk"]})
    if item is None or item.get("id") != memory_id:
        return None
    return memory_from_item(item)


def read_by_id(mind_id: str, memory_id: str) -> Memory:
    memory = find_by_id(mind_id, memory_id)
    if memory is None:
        raise NotFound(f"No memory {memory_id[:80]!r} in this mind.")
    return memory


# ---------------------------------------------------------------- operations


def _conditioned(
    operation: dict[str, Any],
    condition: str | None,
    values: dict[str, Any] | None,
    names: dict[str, str] | None,
) -> dict[str, Any]:
    if condition:
        operation["ConditionExpression"] = condition
    if values:
        operation["ExpressionAttributeValues"] = tables.values(**values)
    if names:
        operation["ExpressionAttributeNames"] = names
    return operation


def put(
    item: dict[str, Any],
    condition: str | None = None,
    values: dict[str, Any] | None = None,
    names: dict[str, str] | None = None,
) -> dict[str, Any]:
    operation = {"TableName": tables.memories_table(), "Item": tables.dump(item)}
    return {"Put": _conditioned(operation, condition, values, names)}


def delete(
    key: dict[str, str], condition: str | None = None, values: dict[str, Any] | None = None
) -> dict[str, Any]:
    operation = {"TableName": tables.memories_table(), "Key": tables.dump(key)}
    return {"Delete": _conditioned(operation, condition, values, None)}


def update(
    key: dict[str, str],
    expression: str,
    values: dict[str, Any] | None = None,
    names: dict[str, str] | None = None,
    condition: str | None = None,
) -> dict[str, Any]:
    operation = {"TableName": tables.memories_table(), "Key": tables.dump(key)}
    operation["UpdateExpression"] = expression
    return {"Update": _conditioned(operation, condition, values, names)}


def count_memories(mind_id: str, delta: int) -> dict[str, Any]:
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


def unchanged(old: Memory) -> tuple[str, dict[str, Any]]:
    """The condition "nobody changed it since we read it", and its values.

    It names the id too: a memory deleted and re-created under the same (category, key) starts
    again at version 1, and a writer holding the old one must not win (ABA). And its pending
    proposal: a proposal marks the memory without a new version, and a writer that read the memory
    before must not drop the mark.
    """
    values: dict[str, Any] = {"id": old.id, "seen": old.version}
    if old.pending_proposal is None:
        return "id = :id AND version = :seen AND attribute_not_exists(pending_proposal)", values
    return "id = :id AND version = :seen AND pending_proposal = :pending", {
        **values,
        "pending": old.pending_proposal,
    }


def create_ops(memory: Memory) -> list[dict[str, Any]]:
    """A new memory: item (if its (category, key) is free), pointer, tag copies, counters; the
    mind's count last (see `commit`'s `mind_op_index`)."""
    return [
        put(memory_item(memory), "attribute_not_exists(pk)"),
        put(pointer_item(memory)),
        *[put(tag_item(memory, tag)) for tag in memory.tags],
        *counts.operations(memory.mind_id, None, memory),
        count_memories(memory.mind_id, +1),
    ]


def replace_ops(old: Memory, new: Memory) -> list[dict[str, Any]]:
    """Swap `old` for `new` if nobody changed it since we read it: memory plus its tag copies."""
    guard = expiry.guard(old)  # swept `old`: not counted, tag copies moved (synapse.memory.expiry)
    condition, values = unchanged(old)
    ops = [put(memory_item(new), condition + guard.condition, values)]
    ops += [delete(key) for key in guard.moved_tags]
    # A write in the same millisecond keeps a tag copy's key: overwrite it, never delete and put
    # the same item in one transaction (DynamoDB refuses two operations on one item).
    kept = [tag_item_key(new, tag) for tag in new.tags]
    ops += [delete(key) for key in (tag_item_key(old, tag) for tag in old.tags) if key not in kept]
    ops += [put(tag_item(new, tag)) for tag in new.tags]
    return ops + counts.operations(new.mind_id, guard.counted, new)


def remove_ops(old: Memory) -> list[dict[str, Any]]:
    """Delete `old` if unchanged: item, pointer, tag copies, counters; the mind's count last."""
    guard = expiry.guard(old)
    condition, values = unchanged(old)
    item_key = {"pk": old.mind_id, "sk": tables.memory_sk(old.category, old.key)}
    return [
        delete(item_key, condition + guard.condition, values),
        delete({"pk": old.mind_id, "sk": tables.pointer_sk(old.id)}),
        *[delete(tag_item_key(old, tag)) for tag in old.tags],
        *[delete(key) for key in guard.moved_tags],
        *counts.operations(old.mind_id, guard.counted, None),
        count_memories(old.mind_id, -1),
    ]


# ---------------------------------------------------------------- commit and retry


def commit(operations: list[dict[str, Any]], mind_op_index: int | None = None) -> None:
    """One transaction. A failed condition is a lost race (`Retry`), except the mind's own counter
    at `mind_op_index`: then the mind is gone (404)."""
    try:
        tables.transact(operations)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code")
        if code != "TransactionCanceledException":
            if code in {"TransactionConflictException", "ProvisionedThroughputExceededException"}:
                raise Retry from error
            raise
        reasons = tables.cancellation_codes(error)
        mind_failed = mind_op_index is not None and reasons[mind_op_index : mind_op_index + 1] == [
            "ConditionalCheckFailed"
        ]
        if mind_failed:
            raise NotFound("This mind no longer exists.") from error
        raise Retry from error


def retrying[T](attempt: Callable[[], T]) -> T:
    """Run an optimistic read-then-conditional-write until it wins, with jittered backoff."""
    for tries in range(MAX_ATTEMPTS):
        try:
            return attempt()
        except Retry:
            time.sleep(random.uniform(0, min(0.2, 0.005 * 2 ** min(tries, 6))))
    raise Throttled("Too many concurrent writes to this memory; retry shortly.")
