"""The plumbing every memory write shares: reading what it changes, the transaction operations,
committing them, and retrying an optimistic write that lost a race.

Every write is one DynamoDB transaction over the memory item, its id pointer, its tag copies, its
counters, the revision that records the change (`history`) and, for an agent's change to a
verified memory, the proposal (`proposals`), conditioned on the memory as it was read. A lost race
re-reads and tries again, so concurrent writers to one (category, key) serialise cleanly: no
duplicate, no lost version, no half-written fan-out, never a change without its revision.
"""

import json
import random
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple

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


# ---------------------------------------------------------------- shared transactions
#
# A batch's writes (`store.store_many`) share transactions: DynamoDB takes up to 100 actions and
# 4 MB in one, but never two actions on one item. Counters (`ADD` updates: the category and tag
# counters, the mind's memory_count) are what writes of one mind share, so they are summed into one
# action per item; any other item met twice closes the transaction and opens the next.

MAX_ACTIONS = 100
MAX_BYTES = 3_000_000  # of request JSON, which is larger than DynamoDB's item sizes: below its 4 MB


class Group(NamedTuple):
    """One shared transaction: the indexes of the writes it holds and its operations."""

    members: list[int]
    ops: list[dict[str, Any]]


def _item_of(operation: dict[str, Any]) -> str:
    kind, body = next(iter(operation.items()))
    key = body["Key"] if kind != "Put" else {name: body["Item"][name] for name in ("pk", "sk")}
    return json.dumps([body["TableName"], key], sort_keys=True)


def _additions(operation: dict[str, Any]) -> dict[str, Decimal] | None:
    """A counter update's (path: amount) when `operation` is one that can be summed with others of
    its item (`ADD` of numbers and nothing else, its condition without values), else None."""
    body = operation.get("Update")
    if body is None or not body["UpdateExpression"].startswith("ADD "):
        return None
    condition = body.get("ConditionExpression", "")
    if "#" in condition or ":" in condition:
        return None
    clauses = [clause.split(" ") for clause in body["UpdateExpression"][4:].split(", ")]
    values = body.get("ExpressionAttributeValues", {})
    if any(len(clause) != 2 for clause in clauses) or set(values) != {value for _, value in clauses}:
        return None
    if any("N" not in values[value] for _, value in clauses):
        return None
    names = body.get("ExpressionAttributeNames", {})
    return {names.get(path, path): Decimal(values[value]["N"]) for path, value in clauses}


class _Sum:
    """The counter updates of one item within a group, summed."""

    def __init__(self, operation: dict[str, Any]) -> None:
        self.template = operation["Update"]
        self.amounts: dict[str, Decimal] = {}

    def add(self, additions: dict[str, Decimal]) -> None:
        for path, amount in additions.items():
            self.amounts[path] = self.amounts.get(path, Decimal(0)) + amount

    def matches(self, operation: dict[str, Any]) -> bool:
        return bool(
            operation["Update"].get("ConditionExpression") == self.template.get("ConditionExpression")
        )

    def operation(self) -> dict[str, Any] | None:
        paths = sorted(path for path, amount in self.amounts.items() if amount)
        condition = self.template.get("ConditionExpression")
        if not paths and condition is None:
            return None  # the writes' changes cancel out
        paths = paths or sorted(self.amounts)[:1]
        body = {key: value for key, value in self.template.items() if not key.startswith("Expression")}
        body["UpdateExpression"] = "ADD " + ", ".join(f"#a{i} :a{i}" for i in range(len(paths)))
        body["ExpressionAttributeNames"] = {f"#a{i}": path for i, path in enumerate(paths)}
        body["ExpressionAttributeValues"] = {
            f":a{i}": {"N": str(self.amounts[path])} for i, path in enumerate(paths)
        }
        return {"Update": body}


class _Packing:
    def __init__(self, max_actions: int = MAX_ACTIONS) -> None:
        self.max_actions = max_actions
        self.members: list[int] = []
        self.plain: list[dict[str, Any]] = []
        self.items: set[str] = set()
        self.sums: dict[str, _Sum] = {}
        self.size = 0

    def fits(self, ops: list[dict[str, Any]]) -> bool:
        """Whether these operations join without a second action on an item or a limit passed."""
        new_sums: set[str] = set()
        plain = 0
        for operation in ops:
            item = _item_of(operation)
            summed = self.sums.get(item)
            if item in self.items:
                return False
            additions = _additions(operation)
            if summed is not None:
                if additions is None or not summed.matches(operation):
                    return False
            elif additions is None:
                plain += 1
            else:
                new_sums.add(item)
        size = self.size + sum(len(json.dumps(operation)) for operation in ops)
        actions = len(self.plain) + plain + len(self.sums) + len(new_sums)
        return actions <= self.max_actions and size <= MAX_BYTES

    def add(self, member: int, ops: list[dict[str, Any]]) -> None:
        self.members.append(member)
        self.size += sum(len(json.dumps(operation)) for operation in ops)
        for operation in ops:
            item, additions = _item_of(operation), _additions(operation)
            if additions is not None:
                self.sums.setdefault(item, _Sum(operation)).add(additions)
            else:
                self.plain.append(operation)
                self.items.add(item)

    def group(self) -> Group:
        summed = [op for op in (s.operation() for s in self.sums.values()) if op is not None]
        return Group(self.members, self.plain + summed)


def summed(ops: list[dict[str, Any]], index: int | None = None) -> tuple[list[dict[str, Any]], int | None]:
    """One write's operations with the counter updates of one item summed into the first (a write
    that also marks other memories moves the same counters twice: DynamoDB refuses two actions on
    one item), in order; and where the operation at `index` (the mind's count) now is."""
    out: list[dict[str, Any] | None] = []
    sums: dict[str, tuple[_Sum, int]] = {}
    moved: int | None = None
    for at, operation in enumerate(ops):
        additions = _additions(operation)
        item = _item_of(operation) if additions is not None else ""
        known = sums.get(item)
        if additions is None or known is None or not known[0].matches(operation):
            if additions is not None and known is None:
                sums[item] = (_Sum(operation), len(out))
                sums[item][0].add(additions)
            moved = len(out) if at == index else moved
            out.append(operation)
            continue
        known[0].add(additions)
        moved = known[1] if at == index else moved
    for total, position in sums.values():
        out[position] = total.operation()
    kept = [operation for operation in out if operation is not None]
    if moved is not None:
        moved -= sum(1 for operation in out[:moved] if operation is None)
    return kept, moved


def groups(writes: list[tuple[int, list[dict[str, Any]]]], max_actions: int = MAX_ACTIONS) -> list[Group]:
    """`writes` (an index and the operations of its own transaction), in order, packed into as few
    transactions as fit (at most `max_actions` each: less leaves room for the caller's own). A write
    that fits nowhere else (too many actions) is a group of its own, with its operations as they are."""
    packed: list[Group] = []
    current = _Packing(max_actions)
    for member, ops in writes:
        if current.members and not current.fits(ops):
            packed.append(current.group())
            current = _Packing(max_actions)
        if not current.members and not current.fits(ops):
            packed.append(Group([member], ops))
            continue
        current.add(member, ops)
    if current.members:
        packed.append(current.group())
    return packed


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
