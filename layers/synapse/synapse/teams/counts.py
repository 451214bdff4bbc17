"""The mind's counts of members, owners and pending invitations, moved inside the transaction that
changes what they count, under conditions (as `minds.limits` does for keys): 30 parallel
invitations end at the limit, and two owners demoting each other at once leave one owner.

A cancelled transaction is explained by reading the mind item again: gone (404), its last owner
(409 `last_owner`), full (409 `limit_reached`), or changed meanwhile (409, send again).
"""

from typing import Any, NamedTuple

from synapse.core.errors import Conflict, Contention, LimitReached, NotFound
from synapse.core.settings import get_limits
from synapse.storage import tables


class LastOwner(Conflict):
    code = "last_owner"


class Delta(NamedTuple):
    """How a change moves the mind's counts."""

    members: int = 0
    owners: int = 0
    invitations: int = 0
    keys: int = 0  # keys, hooks and webhooks only ever go down here: revoked with their creator
    hooks: int = 0
    webhooks: int = 0


def total(*deltas: Delta) -> Delta:
    """The deltas of changes made together, as one."""
    return Delta(*(sum(moved) for moved in zip(*deltas, strict=True)))


def operation(mind_id: str, delta: Delta) -> dict[str, Any]:
    """The Update of the mind item that moves its counts by `delta`, within the limits."""
    limits = get_limits()
    conditions = ["attribute_exists(pk)", "attribute_exists(owner_count)"]
    values: dict[str, Any] = {"m": delta.members, "o": delta.owners, "i": delta.invitations}
    if delta.members > 0:
        conditions.append("member_count < :max_members")
        values["max_members"] = limits.max_members_per_mind
    if delta.owners < 0:
        conditions.append("owner_count > :floor")
        values["floor"] = -delta.owners
    if delta.invitations > 0:
        conditions.append("invitation_count < :max_invitations")
        values["max_invitations"] = limits.max_pending_invitations
    added = ["member_count :m", "owner_count :o", "invitation_count :i"]
    for attribute, moved, name in (
        ("key_count", delta.keys, "k"),
        ("hook_count", delta.hooks, "h"),
        ("webhook_count", delta.webhooks, "w"),
    ):
        if moved:  # a count a mind from before counts lacks is counted first (`holdings`)
            added.append(f"{attribute} :{name}")
            conditions.append(f"attribute_exists({attribute})")
            values[name] = moved
    return {
        "Update": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(tables.mind_key(mind_id)),
            "UpdateExpression": "ADD " + ", ".join(added),
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeValues": tables.values(**values),
        }
    }


def refusal(mind_id: str, delta: Delta) -> Exception:
    """Why the count operation's condition failed, from the mind item as it is now."""
    mind = tables.get(tables.minds_table(), tables.mind_key(mind_id))
    if mind is None:
        return NotFound(f"No mind {mind_id!r}.")
    limits = get_limits()
    if delta.owners < 0 and int(mind.get("owner_count", 0)) <= -delta.owners:
        return LastOwner("A mind keeps at least one owner: make someone else owner first.")
    if delta.members > 0 and int(mind.get("member_count", 0)) >= limits.max_members_per_mind:
        return LimitReached(f"A mind has at most {limits.max_members_per_mind} members; remove one first.")
    if delta.invitations > 0 and int(mind.get("invitation_count", 0)) >= limits.max_pending_invitations:
        return LimitReached(
            f"A mind has at most {limits.max_pending_invitations} pending invitations; revoke one first."
        )
    return Contention("The mind's members changed while we wrote; send the request again.")


def commit(mind_id: str, delta: Delta, operations: list[dict[str, Any]], changed: Exception) -> None:
    """Commit `operations` with the counts moved by `delta` (operation 0). A failed condition of
    the counts is explained (`refusal`); one of the caller's own operations raises `changed`."""
    try:
        tables.transact([operation(mind_id, delta), *operations])
    except tables.client().exceptions.TransactionCanceledException as error:
        codes = tables.cancellation_codes(error)
        if codes[:1] == ["ConditionalCheckFailed"]:
            raise refusal(mind_id, delta) from None
        if "ConditionalCheckFailed" in codes:
            raise changed from None
        raise
