"""A mind's members: the founder, listing, changing a role, removing (or leaving), transferring
ownership, and the materialisation of a mind from before members existed.

Every change runs in one transaction with the mind's counts (`counts`) and its audit event
(`events`), conditioned on the member as it was read, so a change that raced another is refused
rather than applied over it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from synapse.core.errors import Conflict, NotFound, Unprocessable
from synapse.memory import event_names
from synapse.minds import minds, tenure
from synapse.storage import pages, tables
from synapse.teams import counts, events, roles
from synapse.teams.items import materialise, member_item, put_new
from synapse.teams.roles import OWNER, member_key

USER_ID_MAX_CHARS = 256  # a JWT's sub (auth.tokens.SUB_MAX_CHARS)
_ATTEMPTS = 3  # a change that raced another (a credential revoked by hand meanwhile) is read again


def public(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "user_id": item["user_id"],
        "role": item["role"],
        "email": item.get("email"),
        "joined_at": item["joined_at"],
        "invited_by": item.get("invited_by"),
    }


Founding = tuple[list[dict[str, Any]], dict[str, int]]


def founder(mind_id: str, user_id: str, email: str | None, at: str, started: str | None = None) -> Founding:
    """What a new mind starts with: its creator as owner, and the counts on the mind item."""
    item = member_item(mind_id, user_id, OWNER, email, None, at, started)
    return [put_new(item)], {"member_count": 1, "owner_count": 1, "invitation_count": 0}


def create_mind(user_id: str, email: str | None, name: str) -> tuple[minds.Mind, dict[str, Any]]:
    """A new mind with its creator as its owner, and its first Mind Key (`minds.create_mind`), which
    ends with the creator's tenure as owner like any key they make."""
    started = tenure.new()
    return minds.create_mind(
        user_id,
        name,
        lambda mind_id, at: founder(mind_id, user_id, email, at, started),
        {"created_by": user_id, "tenure": started},
    )


def find(mind_id: str, user_id: str) -> dict[str, Any] | None:
    if not 1 <= len(user_id) <= USER_ID_MAX_CHARS:
        return None
    return tables.get(tables.minds_table(), member_key(mind_id, user_id))


def _member(mind_id: str, user_id: str) -> dict[str, Any]:
    found = find(mind_id, user_id)
    if found is None:
        raise NotFound(f"No member {user_id[:80]!r} of this mind.")
    return found


def list_members(mind_id: str, limit: int, after: str | None) -> pages.Page[dict[str, Any]]:
    """A page of the mind's members in user-id order (a mind from before members: its owner)."""
    mind = tables.get(tables.minds_table(), tables.mind_key(mind_id))
    if mind is None:
        raise NotFound(f"No mind {mind_id!r}.")
    if not roles.materialised(mind):
        founder_item = member_item(mind_id, str(mind["owner"]), OWNER, None, None, str(mind["created_at"]))
        return pages.Page([public(founder_item)], None)
    page = pages.in_mind(mind_id, roles.MEMBER_PREFIX, limit, after)
    return pages.Page([public(item) for item in page.items], page.next_cursor)


def _set_role(mind_id: str, item: dict[str, Any], role: str) -> dict[str, Any]:
    """Change the member's role, only if it is still the one read; the role's tenure is new, so
    what they created in the old one stops working (`tenure`)."""
    return {
        "Update": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(member_key(mind_id, item["user_id"])),
            "UpdateExpression": "SET #role = :role, tenure = :tenure",
            "ConditionExpression": "#role = :was",
            "ExpressionAttributeNames": {"#role": "role"},
            "ExpressionAttributeValues": tables.values(role=role, was=item["role"], tenure=tenure.new()),
        }
    }


def _still_owner(mind_id: str, user_id: str) -> dict[str, Any]:
    """Hold the transaction to an actor who is an owner when it commits."""
    return {
        "ConditionCheck": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(member_key(mind_id, user_id)),
            "ConditionExpression": "#role = :owner",
            "ExpressionAttributeNames": {"#role": "role"},
            "ExpressionAttributeValues": tables.values(owner=OWNER),
        }
    }


def _owners_delta(before: str, after: str) -> int:
    return (after == OWNER) - (before == OWNER)


class _Raced(Conflict):
    """A change refused by one of its own conditions: tried again from a fresh read (`_retried`)."""


def _raced() -> Conflict:
    return _Raced("The member changed while we wrote; look again and send the request again.")


def _retried[T](attempt: Callable[[], T]) -> T:
    for _ in range(_ATTEMPTS - 1):
        try:
            return attempt()
        except _Raced:
            continue
    return attempt()


def _loses_creating_role(before: str, after: str | None) -> bool:
    """Whether the change ends what the member created: they held the role it needs and will not."""
    needed = tenure.CREATING_ROLE
    return roles.at_least(before, needed) and not roles.at_least(after, needed)


def _commit_ending(
    mind_id: str,
    user_id: str,
    how: tuple[str, str, str | None],
    delta: counts.Delta,
    operations: list[dict[str, Any]],
) -> Callable[[], None]:
    """Commit a change of the member's role `how` = (actor, role before, role after or None for
    gone) with the revocations of what they created when it takes the owner role from them
    (`holdings`), as many as fit in its transaction; what did not fit, or was created meanwhile,
    is swept right after. Returns the sweep to run once the change is committed."""
    actor, before, after = how
    if not _loses_creating_role(before, after):
        counts.commit(mind_id, delta, operations, _raced())
        return lambda: None
    # Only an owner's tenure ending loads what it revokes (keys, hooks, webhooks, grants: the webhook
    # subscriptions and their SSRF rules among them): no other member change, and no handler that
    # only creates, lists or invites, loads them at cold start (issue 35).
    from synapse.teams import holdings

    reason = (
        holdings.DEMOTED if after is not None else holdings.LEFT if actor == user_id else holdings.REMOVED
    )
    ending = holdings.ending(mind_id, user_id, actor, reason, len(operations) + 1)
    counts.commit(mind_id, counts.total(delta, ending.delta), [*operations, *ending.operations], _raced())

    def sweep() -> None:
        holdings.sweep(mind_id, user_id, actor, reason)

    return sweep


def change_role(actor: str, mind_id: str, user_id: str, role: str) -> dict[str, Any]:
    """An owner sets a member's role; demoting the last owner is a 409 `last_owner`. An owner
    demoted loses what they created as owner (`holdings`)."""
    if role not in roles.ROLES:
        raise Unprocessable(
            f"role: must be one of {', '.join(roles.ROLES)}.", details=[{"field": "role", "rule": "enum"}]
        )
    materialise(mind_id)

    def attempt() -> tuple[dict[str, Any], Callable[[], None]]:
        item = _member(mind_id, user_id)
        if item["role"] == role:
            return public(item), lambda: None
        delta = counts.Delta(owners=_owners_delta(item["role"], role))
        target = {"user_id": user_id, "from": item["role"], "to": role}
        event = events.Announcement(mind_id, event_names.MEMBER_ROLE_CHANGED, actor, target)
        operations = [_set_role(mind_id, item, role), *event.operations()]
        if actor != user_id:
            operations.append(_still_owner(mind_id, actor))
        sweep = _commit_ending(mind_id, user_id, (actor, item["role"], role), delta, operations)
        return public({**item, "role": role}), sweep

    changed, sweep = _retried(attempt)
    sweep()
    return changed


def remove(actor: str, actor_role: str, mind_id: str, user_id: str) -> None:
    """An owner removes a member, or a member leaves (removes themselves); never the last owner.
    What an owner created goes with them (`holdings`)."""
    leaving = actor == user_id
    if not leaving and actor_role != OWNER:
        raise roles.lacking(OWNER, actor_role)
    materialise(mind_id)

    def attempt() -> Callable[[], None]:
        item = _member(mind_id, user_id)
        delete = {
            "Delete": {
                "TableName": tables.minds_table(),
                "Key": tables.dump(member_key(mind_id, user_id)),
                "ConditionExpression": "#role = :was",
                "ExpressionAttributeNames": {"#role": "role"},
                "ExpressionAttributeValues": tables.values(was=item["role"]),
            }
        }
        action = event_names.MEMBER_LEFT if leaving else event_names.MEMBER_REMOVED
        event = events.Announcement(mind_id, action, actor, {"user_id": user_id, "role": item["role"]})
        operations = [delete, *event.operations()] + ([] if leaving else [_still_owner(mind_id, actor)])
        delta = counts.Delta(members=-1, owners=-(item["role"] == OWNER))
        return _commit_ending(mind_id, user_id, (actor, item["role"], None), delta, operations)

    _retried(attempt)()


def transfer(actor: str, mind_id: str, user_id: str, keep_role: str) -> list[dict[str, Any]]:
    """In one transaction the member `user_id` becomes an owner and the actor takes `keep_role`."""
    if keep_role not in roles.ROLES:
        raise Unprocessable(
            f"keep_role: must be one of {', '.join(roles.ROLES)}.",
            details=[{"field": "keep_role", "rule": "enum"}],
        )
    if user_id == actor:  # a well-formed body that names the caller: a conflict with the mind's state
        raise Conflict(
            "user_id: name another member; you are an owner already.",
            details=[{"field": "user_id", "rule": "not_self"}],
        )
    materialise(mind_id)

    def attempt() -> tuple[list[dict[str, Any]], Callable[[], None]]:
        target, own = _member(mind_id, user_id), _member(mind_id, actor)
        if own["role"] != OWNER:
            raise roles.lacking(OWNER, own["role"])
        operations = (
            [_set_role(mind_id, own, keep_role)] if keep_role != OWNER else [_still_owner(mind_id, actor)]
        )
        if target["role"] != OWNER:
            operations.append(_set_role(mind_id, target, OWNER))
        moved = {"user_id": user_id, "from": target["role"], "to": OWNER, "previous_owner": actor}
        event = events.Announcement(
            mind_id,
            event_names.MEMBER_OWNERSHIP_TRANSFERRED,
            actor,
            {**moved, "previous_owner_role": keep_role},
        )
        delta = counts.Delta(owners=_owners_delta(target["role"], OWNER) + _owners_delta(OWNER, keep_role))
        sweep = _commit_ending(
            mind_id, actor, (actor, OWNER, keep_role), delta, [*operations, *event.operations()]
        )
        return [public({**target, "role": OWNER}), public({**own, "role": keep_role})], sweep

    moved_roles, sweep = _retried(attempt)
    sweep()
    return moved_roles


def delete_all(mind_id: str) -> None:
    """Every member and invitation item of a mind, and the invitations' lookups (deleting it)."""
    found = [
        item
        for prefix in (roles.MEMBER_PREFIX, "INVITE#")
        for item in tables.query_all(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=tables.values(pk=f"MIND#{mind_id}", prefix=prefix),
            ConsistentRead=True,
        )
    ]
    lookups = [{"pk": f"INVITEHASH#{item['hash']}", "sk": "INVITEHASH"} for item in found if "hash" in item]
    tables.batch_delete(tables.minds_table(), lookups)
    tables.batch_delete(tables.minds_table(), [{"pk": item["pk"], "sk": item["sk"]} for item in found])
