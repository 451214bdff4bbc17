"""What a member holds through the owner role, and its end when they lose the role.

An owner issues invitations and creates Mind Keys, inbound hooks, outbound webhooks and app grants
(an OAuth consent); each records its creator and their tenure (`tenure`). When the member is
removed, leaves, or is demoted below owner (a role change, or a transfer that keeps a lower role),
everything they created is revoked, each revocation audited with its reason (`member_removed`,
`member_left`, `member_demoted`) and the creator:

- `ending`: the revocations that fit beside the change, in the change's own transaction (DynamoDB
  takes 100 actions in one): none is revoked without the change, nor the change made without them;
- `sweep`, run right after the change commits: the revocations that did not fit, and whatever the
  member created in the moment between our read and the change's commit, in transactions of at most
  100 actions each.

Neither is what keeps a mind safe in between: every door checks the creator's tenure on use
(`tenure.holds`; a webhook's producer and delivery too), so a credential whose revocation is not
written yet (a sweep cut short) is refused all the same, and the next change or sweep of that
member removes it. What records no creator (made
before creators were recorded) belongs to the mind and is not ended with anyone (docs/auth.md).
"""

from collections.abc import Iterable
from typing import Any, NamedTuple

from synapse.core.errors import Conflict, SynapseError
from synapse.memory import event_names
from synapse.minds import audit, keys, limits, tenure
from synapse.minds.grant_items import GRANT_SK, access_key, delete, grant_key, refresh_key
from synapse.storage import tables
from synapse.teams import counts, events
from synapse.teams.items import INVITE_PREFIX, delete_invitation
from synapse.webhooks import subscriptions

MAX_ACTIONS = 100  # what one DynamoDB transaction holds
REMOVED, LEFT, DEMOTED = "member_removed", "member_left", "member_demoted"


class Revocation(NamedTuple):
    """One credential's revocation: its transaction operations and how it moves the mind's counts."""

    operations: list[dict[str, Any]]
    delta: counts.Delta


class Ending(NamedTuple):
    """The revocations a change carries in its own transaction."""

    operations: list[dict[str, Any]]
    delta: counts.Delta


class _Kind(NamedTuple):
    prefix: str
    creator: str  # the attribute naming who created it


_KINDS = (
    _Kind(INVITE_PREFIX, "invited_by"),
    _Kind("KEY#", "created_by"),
    _Kind(tables.HOOK_PREFIX, "created_by"),
    _Kind(tables.WEBHOOK_PREFIX, "created_by"),
    _Kind(GRANT_SK, "user_id"),
)


def _created_by(mind_id: str, user_id: str) -> list[tuple[_Kind, dict[str, Any]]]:
    """What the member created on the mind, as it is now (each kind is at most a few dozen items)."""
    found = []
    for kind in _KINDS:
        for item in tables.query_all(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=tables.values(pk=f"MIND#{mind_id}", prefix=kind.prefix),
            ConsistentRead=True,
        ):
            if item.get(kind.creator) == user_id:
                found.append((kind, item))
    return found


def _revocation(mind_id: str, kind: _Kind, item: dict[str, Any], actor: str, reason: str) -> Revocation:
    by, why = audit.by_user(actor), {"reason": reason}
    if kind.prefix == INVITE_PREFIX:
        target = {
            "invitation_id": item["id"],
            "role": item["role"],
            "email": item.get("email"),
            "user_id": item.get("user_id"),
            "invited_by": item["invited_by"],
            **why,
        }
        event = events.Announcement(mind_id, event_names.INVITATION_REVOKED, actor, target)
        return Revocation([*delete_invitation(item), *event.operations()], counts.Delta(invitations=-1))
    if kind.prefix == GRANT_SK:
        target = {
            "grant_id": item["id"],
            "client_name": item["client_name"],
            "created_by": item["user_id"],
            **why,
        }
        operations = [
            delete(grant_key(mind_id, item["id"]), "attribute_exists(pk)"),
            delete(access_key(item["access_hash"])),
            delete(refresh_key(item["refresh_hash"])),
            audit.put_operation(mind_id, "grant.revoked", by, target),
        ]
        return Revocation(operations, counts.Delta())
    if kind.prefix == "KEY#":
        target = {"key_id": item["id"], "label": item["label"], "created_by": item["created_by"], **why}
        operations = [
            *keys.revoke_operations(mind_id, item),
            audit.put_operation(mind_id, "key.revoked", by, target),
        ]
        return Revocation(operations, counts.Delta(keys=-1))
    if kind.prefix == tables.WEBHOOK_PREFIX:  # it sends the mind's events no more
        target = {"webhook_id": item["id"], "url": item["url"], "created_by": item["created_by"], **why}
        operations = [
            *subscriptions.delete_operations(subscriptions.from_item(item)),
            audit.put_operation(mind_id, "webhook.deleted", by, target),
        ]
        return Revocation(operations, counts.Delta(webhooks=-1))
    target = {"hook_id": item["id"], "label": item["label"], "created_by": item["created_by"], **why}
    operations = [
        {
            "Delete": {
                "TableName": tables.minds_table(),
                "Key": tables.dump(key),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
        for key in (tables.hook_lookup_key(item["id"]), tables.hook_key(mind_id, item["id"]))
    ]
    return Revocation(
        [*operations, audit.put_operation(mind_id, "hook.revoked", by, target)], counts.Delta(hooks=-1)
    )


def _revocations(
    mind_id: str, user_id: str, actor: str, reason: str, member: dict[str, Any] | None
) -> list[Revocation]:
    """The revocations of what the member created that no longer holds for `member`, their member
    item after the change (None: gone). The counts they move are counted first on a mind from before
    counts."""
    found = [
        (kind, item)
        for kind, item in _created_by(mind_id, user_id)
        if not tenure.held(member, item.get("tenure"))
    ]
    if any(kind.prefix == "KEY#" for kind, _ in found):
        limits.ensure(limits.keys_of(mind_id))
    if any(kind.prefix == tables.HOOK_PREFIX for kind, _ in found):
        limits.ensure(limits.hooks_of(mind_id))
    if any(kind.prefix == tables.WEBHOOK_PREFIX for kind, _ in found):
        limits.ensure(limits.webhooks_of(mind_id))
    return [_revocation(mind_id, kind, item, actor, reason) for kind, item in found]


def _pack(revocations: Iterable[Revocation], room: int) -> tuple[Ending, list[Revocation]]:
    """As many revocations as fit in `room` actions, and the rest."""
    operations: list[dict[str, Any]] = []
    deltas, rest = [counts.Delta()], list[Revocation]()
    for revocation in revocations:
        if rest or len(operations) + len(revocation.operations) > room:
            rest.append(revocation)
            continue
        operations.extend(revocation.operations)
        deltas.append(revocation.delta)
    return Ending(operations, counts.total(*deltas)), rest


def ending(mind_id: str, user_id: str, actor: str, reason: str, used: int) -> Ending:
    """The revocations that fit beside a change of `used` actions (its count update included) that
    leaves the member without the owner role: all they created, as far as room allows."""
    packed, _ = _pack(_revocations(mind_id, user_id, actor, reason, None), MAX_ACTIONS - used)
    return packed


def sweep(mind_id: str, user_id: str, actor: str, reason: str) -> int:
    """After the change: revoke what the member created that no longer holds for them as they are
    now, in transactions of at most MAX_ACTIONS; how many were revoked. A revocation that raced
    another (revoked by hand meanwhile) is tried again alone, and skipped when it is gone."""
    member = tables.get(tables.minds_table(), tenure.member_key(mind_id, user_id))
    rest = _revocations(mind_id, user_id, actor, reason, member)
    revoked = 0
    while rest:
        packed, rest_after = _pack(rest, MAX_ACTIONS - 1)  # and the count update
        batch, rest = rest[: len(rest) - len(rest_after)], rest_after
        if not batch:  # cannot happen (one revocation is at most 4 actions); never loop on it
            break
        if _committed(mind_id, packed.delta, packed.operations):
            revoked += len(batch)
        else:
            revoked += sum(_committed(mind_id, one.delta, one.operations) for one in batch)
    return revoked


def _committed(mind_id: str, delta: counts.Delta, operations: list[dict[str, Any]]) -> bool:
    """Whether the revocations committed (not: one was revoked meanwhile, or the mind is gone)."""
    try:
        counts.commit(mind_id, delta, operations, Conflict("revoked meanwhile"))
    except (SynapseError, tables.client().exceptions.TransactionCanceledException):
        return False
    return True
