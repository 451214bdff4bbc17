"""Limits on how much a mind or a user holds, exact under any race.

A count lives on the item that owns what it counts: `key_count`, `hook_count` and `webhook_count`
on the mind item, `mind_count` on the user's item (`USER#<sub>` / `MINDS`). Every create and delete
moves its count in the same transaction as the item, conditioned on the count (`< maximum` to
create), so 30 parallel creates end with exactly the maximum — never check-then-write.

Minds, keys, hooks and webhooks created before the counts existed: a count that is missing is
counted once (a Query of what it counts), written only if still missing, and the transaction
tried again. Every writer needs the count to exist, so nothing changes what is counted meanwhile.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

from synapse.core.errors import Contention, LimitReached, NotFound
from synapse.storage import tables

MAX_KEYS_PER_MIND = 20
MAX_HOOKS_PER_MIND = 20
MAX_WEBHOOKS_PER_MIND = 20
_ATTEMPTS = 4


class Counted(NamedTuple):
    """A count: the item holding it, its attribute, its maximum and how to count it afresh."""

    key: dict[str, str]
    attribute: str
    maximum: int
    refusal: str  # the 409's message, e.g. "A mind has at most {maximum} webhooks; delete one first."
    recount: Callable[[], int]
    holder_may_be_created: bool = False  # a user's item appears with the count; a mind's must exist


def _count(**params: Any) -> int:
    return sum(int(page["Count"]) for page in _count_pages(params))


def _count_pages(params: dict[str, Any]) -> list[dict[str, Any]]:
    pages, params = [], {**params, "Select": "COUNT"}
    while True:
        answer = tables.client().query(**params)
        pages.append(answer)
        if "LastEvaluatedKey" not in answer:
            return pages
        params["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def _in_mind(mind_id: str, attribute: str, prefix: str, maximum: int, what: str) -> Counted:
    return Counted(
        key=tables.mind_key(mind_id),
        attribute=attribute,
        maximum=maximum,
        refusal=f"A mind has at most {maximum} {what}; delete one first.",
        recount=lambda: _count(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=tables.values(pk=f"MIND#{mind_id}", prefix=prefix),
            ConsistentRead=True,
        ),
    )


def keys_of(mind_id: str) -> Counted:
    return _in_mind(mind_id, "key_count", "KEY#", MAX_KEYS_PER_MIND, "Mind Keys")


def hooks_of(mind_id: str) -> Counted:
    return _in_mind(mind_id, "hook_count", tables.HOOK_PREFIX, MAX_HOOKS_PER_MIND, "hooks")


def webhooks_of(mind_id: str) -> Counted:
    return _in_mind(mind_id, "webhook_count", tables.WEBHOOK_PREFIX, MAX_WEBHOOKS_PER_MIND, "webhooks")


def minds_of(owner: str, maximum: int) -> Counted:
    """A user's minds. The `owner` index is eventually consistent: a recount runs once per user who
    had minds before counts existed, long after those minds were written."""
    return Counted(
        key={"pk": f"USER#{owner}", "sk": "MINDS"},
        attribute="mind_count",
        maximum=maximum,
        refusal=f"You have {maximum} minds, the most one person may have; delete one first.",
        recount=lambda: _count(
            TableName=tables.minds_table(),
            IndexName="owner",
            KeyConditionExpression="#owner = :owner",
            ExpressionAttributeNames={"#owner": "owner"},
            ExpressionAttributeValues=tables.values(owner=owner),
        ),
        holder_may_be_created=True,
    )


def operation(counted: Counted, delta: int) -> dict[str, Any]:
    """The transaction operation moving the count by `delta` (+1 only below the maximum; -1 only
    when counted). On a mind's item it also holds the transaction to a mind that exists."""
    condition = "attribute_exists(pk) AND " + ("#n < :max" if delta > 0 else "attribute_exists(#n)")
    values = {"delta": delta, **({"max": counted.maximum} if delta > 0 else {})}
    return {
        "Update": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(counted.key),
            "UpdateExpression": "ADD #n :delta",
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#n": counted.attribute},
            "ExpressionAttributeValues": tables.values(**values),
        }
    }


def _backfill(counted: Counted) -> None:
    """Write the count once, from a fresh count, unless someone else wrote it first."""
    condition = "attribute_not_exists(#n)" + (
        "" if counted.holder_may_be_created else " AND attribute_exists(pk)"
    )
    try:
        tables.client().update_item(
            TableName=tables.minds_table(),
            Key=tables.dump(counted.key),
            UpdateExpression="SET #n = :n",
            ConditionExpression=condition,
            ExpressionAttributeNames={"#n": counted.attribute},
            ExpressionAttributeValues=tables.values(n=counted.recount()),
        )
    except tables.client().exceptions.ConditionalCheckFailedException:
        pass  # counted meanwhile (or the mind is gone: the next attempt says so)


def ensure(counted: Counted) -> None:
    """Count what a holder from before counts never counted, so a transaction may move the count."""
    holder = tables.get(tables.minds_table(), counted.key)
    if holder is not None and counted.attribute not in holder:
        _backfill(counted)


def transact_counted(counted: Counted, delta: int, operations: list[dict[str, Any]], gone: NotFound) -> None:
    """Commit `operations` with the count moved by `delta` as operation 0 of the transaction.

    `gone` is raised when the count's holder (the mind) no longer exists; a count at its maximum is
    a 409 `limit_reached`. A cancellation by the caller's own operations is re-raised for it to read
    (`tables.cancellation_codes`, its operations from index 1).
    """
    for _ in range(_ATTEMPTS):
        try:
            tables.transact([operation(counted, delta), *operations])
            return
        except tables.client().exceptions.TransactionCanceledException as error:
            if tables.cancellation_codes(error)[:1] != ["ConditionalCheckFailed"]:
                raise
        holder = tables.get(tables.minds_table(), counted.key)
        if holder is None and not counted.holder_may_be_created:
            raise gone
        if holder is None or counted.attribute not in holder:
            _backfill(counted)
        elif delta > 0 and int(holder[counted.attribute]) >= counted.maximum:
            raise LimitReached(counted.refusal)
    raise Contention("The count kept changing while we wrote; send the request again.")
