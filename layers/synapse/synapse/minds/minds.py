"""Minds: create, read, rename; who may do what on one is `teams.roles`, checked at the route.

A mind the caller is not a member of answers exactly like a missing one (404), at the route. Key
operations leave the key items to `minds.keys`; deleting a mind with everything in it is
`lifecycle`. The `owner` attribute names the person who created the mind: its minds count against
them (`limits.minds_of`), and before members existed it was the mind's one owner.
"""

import secrets
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.errors import NotFound
from synapse.core.ids import looks_like_id, new_id
from synapse.core.observability import logger
from synapse.core.settings import get_limits
from synapse.minds import audit, heads, keys, limits, tenure
from synapse.storage import pages, tables

AGENT_WRITES_TO_VERIFIED = ("propose", "unverify")
AGENT_WRITES_CRITICAL = ("allow", "propose", "deny")
DEFAULT_HISTORY_RETENTION_DAYS = 90
HISTORY_RETENTION_DAYS_RANGE = (1, 3650)  # PATCH /minds's rule (memory.model.MindPatch)


class MindSettings(NamedTuple):
    """A mind's own settings: what an agent's write to a verified memory does, how long revisions
    are kept, and whether an agent may put a memory at critical priority (docs/history.md)."""

    agent_writes_to_verified: str = "propose"
    history_retention_days: int = DEFAULT_HISTORY_RETENTION_DAYS
    agent_writes_critical: str = "allow"

    def public(self) -> dict[str, Any]:
        return {
            "agent_writes_to_verified": self.agent_writes_to_verified,
            "history_retention_days": self.history_retention_days,
            "agent_writes_critical": self.agent_writes_critical,
        }


def _setting(item: dict[str, Any], name: str, default: Any, fits: Callable[[Any], bool]) -> Any:
    """A stored setting, or its default when it was never set or is not one PATCH /minds would
    write (a restore from before restores were checked, say): a read never fails on it."""
    value = item.get(name)
    if value is None:
        return default
    if not fits(value):
        logger.warning(
            "a mind's stored setting is not a valid one: its default is used",
            extra={"mind_id": item.get("id"), "setting": name, "stored": repr(value)[:80]},
        )
        return default
    return value


def _retention_days(value: Any) -> bool:
    low, high = HISTORY_RETENTION_DAYS_RANGE
    if isinstance(value, Decimal):  # how DynamoDB gives numbers back
        return value.is_finite() and value == value.to_integral_value() and low <= value <= high
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _settings_from_item(item: dict[str, Any]) -> MindSettings:
    return MindSettings(
        agent_writes_to_verified=_setting(
            item, "agent_writes_to_verified", "propose", lambda v: v in AGENT_WRITES_TO_VERIFIED
        ),
        history_retention_days=int(
            _setting(item, "history_retention_days", DEFAULT_HISTORY_RETENTION_DAYS, _retention_days)
        ),
        agent_writes_critical=_setting(
            item, "agent_writes_critical", "allow", lambda v: v in AGENT_WRITES_CRITICAL
        ),
    )


def settings_of(mind_id: str) -> MindSettings:
    """The mind's settings (defaults for what was never set); 404 for a missing mind."""
    item = (
        tables.get(tables.minds_table(), tables.mind_key(mind_id)) if looks_like_id("m_", mind_id) else None
    )
    if item is None:
        raise NotFound(f"No mind {mind_id[:80]!r}.")
    return _settings_from_item(item)


class Mind(NamedTuple):
    id: str
    name: str
    owner: str
    created_at: str
    updated_at: str
    memory_count: int
    settings: MindSettings = MindSettings()

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "memory_count": self.memory_count,
            "settings": self.settings.public(),
        }


def mind_from_item(item: dict[str, Any]) -> Mind:
    return Mind(
        id=item["id"],
        name=item["name"],
        owner=item["owner"],
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        memory_count=int(item.get("memory_count", 0)),
        settings=_settings_from_item(item),
    )


# ---------------------------------------------------------------- minds


def mind_exists_check(mind_id: str) -> dict[str, Any]:
    """A transaction operation that holds only while the mind exists."""
    return {
        "ConditionCheck": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(tables.mind_key(mind_id)),
            "ConditionExpression": "attribute_exists(pk)",
        }
    }


def transact_in_live_mind(
    mind_id: str, operations: list[dict[str, Any]], counted: limits.Counted | None = None, delta: int = 1
) -> None:
    """Commit `operations` only while the mind exists, so nothing written can outlive a deleted
    mind (a key, a hook, a webhook). 404 if it is gone. With `counted`, the mind's count of what
    the operations add (delta +1) or remove (-1) moves in the same transaction, within its limit
    (409 `limit_reached`). Contention is retried (`tables.transact`); other cancellations are raised
    as they are, the caller's operations from index 1.
    """
    gone = NotFound(f"No mind {mind_id!r}.")
    if counted is not None:
        limits.transact_counted(counted, delta, operations, gone)
        return
    try:
        tables.transact([mind_exists_check(mind_id), *operations])
    except tables.client().exceptions.TransactionCanceledException as error:
        if tables.cancellation_codes(error)[:1] == ["ConditionalCheckFailed"]:
            raise gone from None
        raise


def get_mind(mind_id: str) -> Mind:
    item = (
        tables.get(tables.minds_table(), tables.mind_key(mind_id)) if looks_like_id("m_", mind_id) else None
    )
    if item is None:
        raise NotFound(_gone(mind_id))
    return mind_from_item(item)


def _gone(mind_id: str) -> str:
    """Why there is no such mind: never was, or deleted with its purge under way (how far it got)."""
    deleting = tables.get(tables.minds_table(), tables.mind_tombstone_key(mind_id))
    if deleting is None:
        return f"No mind {mind_id[:80]!r}."
    return (
        f"Mind {mind_id!r} was deleted at {deleting['deleted_at']}; its memories are being purged "
        f"({int(deleting.get('purged', 0))} items so far)."
    )


def same_owner(stored: str, presented: str) -> bool:
    """Constant-time equality of two owners (JWT subs), which need not be ASCII."""
    return secrets.compare_digest(stored.encode(), presented.encode())


def is_timestamp(value: Any) -> bool:
    """Whether `value` is a timestamp as this service writes them (a cursor's, say)."""
    try:
        return isinstance(value, str) and clock.to_iso(clock.from_iso(value)) == value
    except ValueError:
        return False


Founder = Callable[[str, str], tuple[list[dict[str, Any]], dict[str, int]]]


def create_mind(
    owner: str, name: str, founder: Founder | None = None, creator: dict[str, Any] | None = None
) -> tuple[Mind, dict[str, Any]]:
    """A mind, its head (`heads`) and its first Mind Key (audited), in one transaction that counts the
    user's minds (at most SYNAPSE_MAX_MINDS_PER_USER) and starts the mind's own counts. `founder(mind id,
    now)` adds the operations and counts of its first member (`teams.members.founder`); `creator`
    is what the first key records of them (`minds.tenure`)."""
    now = clock.to_iso(clock.now())
    mind = Mind(id=new_id("m_"), name=name, owner=owner, created_at=now, updated_at=now, memory_count=0)
    founding, member_counts = founder(mind.id, now) if founder else ([], {})
    counts = {"key_count": 1, "hook_count": 0, "webhook_count": 0, **member_counts}
    shown = {k: v for k, v in mind.public().items() if k != "settings"}  # defaults until set
    item = {**tables.mind_key(mind.id), **shown, "owner": owner, **counts}
    key_ops, shown_key = keys.issue_operations(mind.id, "default", creator=creator or {"created_by": owner})
    # The first key is a credential like any other: its creation is in the audit from the start
    key_target = {"key_id": shown_key["id"], "label": "default", "scopes": shown_key["scopes"]}
    key_ops.append(audit.put_operation(mind.id, "key.created", audit.by_user(owner), key_target))
    put_mind = {
        "Put": {
            "TableName": tables.minds_table(),
            "Item": tables.dump(item),
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }
    counted = limits.minds_of(owner, get_limits().max_minds_per_user)
    operations = [put_mind, heads.put_operation(mind.id, name), *key_ops, *founding]
    limits.transact_counted(counted, +1, operations, NotFound("No such user."))
    return mind, shown_key


def forget_mind(owner: str, mind_id: str) -> None:
    """Delete the mind's own item and count it off its owner's minds, together; a second call (a
    DELETE sent again) finds it gone and counts nothing."""
    delete = {
        "Delete": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(tables.mind_key(mind_id)),
            "ConditionExpression": "attribute_exists(pk)",
        }
    }
    counted = limits.minds_of(owner, get_limits().max_minds_per_user)
    try:
        limits.transact_counted(counted, -1, [delete], NotFound("No such user."))
    except tables.client().exceptions.TransactionCanceledException:
        pass  # already deleted


def update_mind(
    owner: str,
    mind_id: str,
    name: str | None = None,
    agent_writes_to_verified: str | None = None,
    history_retention_days: int | None = None,
    agent_writes_critical: str | None = None,
) -> Mind:
    """Rename the mind and/or change its settings, with an audit event per kind of change (and, for a
    rename, the head `heads`) in the same transaction. What is left out (None) or already so is not
    written."""
    mind = get_mind(mind_id)
    renamed = name is not None and name != mind.name
    wanted = MindSettings(
        agent_writes_to_verified or mind.settings.agent_writes_to_verified,
        history_retention_days or mind.settings.history_retention_days,
        agent_writes_critical or mind.settings.agent_writes_critical,
    )
    changed = {
        setting: {"from": before, "to": wanted.public()[setting]}
        for setting, before in mind.settings.public().items()
        if wanted.public()[setting] != before
    }
    if not renamed and not changed:
        return mind
    now = clock.to_iso(clock.now())
    fields = {**({"name": name} if renamed else {}), **{k: v["to"] for k, v in changed.items()}}
    update = {
        "Update": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(tables.mind_key(mind_id)),
            "UpdateExpression": "SET " + ", ".join(f"#{k} = :{k}" for k in fields) + ", updated_at = :now",
            "ConditionExpression": "attribute_exists(pk)",
            "ExpressionAttributeNames": {f"#{k}": k for k in fields},
            "ExpressionAttributeValues": tables.values(**fields, now=now),
        }
    }
    by = audit.by_user(owner)
    events = (
        [audit.put_operation(mind_id, "mind.renamed", by, {"from": mind.name, "to": name})] if renamed else []
    )
    if changed:
        events.append(audit.put_operation(mind_id, "mind.settings_changed", by, {"settings": changed}))
    if renamed:
        events.append(heads.put_operation(mind_id, str(name)))  # recall reads the name from it
    try:
        tables.transact([update, *events])
    except tables.client().exceptions.TransactionCanceledException as error:
        if tables.cancellation_codes(error)[:1] == ["ConditionalCheckFailed"]:
            raise NotFound(f"No mind {mind_id!r}.") from None  # deleted since we looked
        raise
    return get_mind(mind_id)


def audit_events(
    owner: str, mind_id: str, limit: int = pages.DEFAULT_LIMIT, after: str | None = None
) -> pages.Page[dict[str, Any]]:
    """A page of the mind's audit, newest first (the caller's role is checked at the route)."""
    get_mind(mind_id)
    return audit.list_events(mind_id, limit, after)


# ---------------------------------------------------------------- keys, for the mind's owner


def create_key(owner: str, mind_id: str, label: str, scopes: Iterable[str] = keys.SCOPES) -> dict[str, Any]:
    """A key that records its creator and ends with their tenure as owner (`minds.tenure`)."""
    get_mind(mind_id)
    hold = tenure.hold(mind_id, owner)
    ops, shown = keys.issue_operations(mind_id, label, scopes, hold.recorded)
    target = {"key_id": shown["id"], "label": label, "scopes": shown["scopes"]}
    event = audit.put_operation(mind_id, "key.created", audit.by_user(owner), target)
    held = [hold.operation] if hold.operation else []
    try:
        transact_in_live_mind(mind_id, [*ops, event, *held], limits.keys_of(mind_id), +1)
    except tables.client().exceptions.TransactionCanceledException:
        raise tenure.lost() from None  # the creator's role changed while we wrote
    return shown


def list_keys(
    owner: str, mind_id: str, limit: int = pages.DEFAULT_LIMIT, after: str | None = None
) -> pages.Page[dict[str, Any]]:
    get_mind(mind_id)
    page = pages.in_mind(mind_id, "KEY#", limit, after)
    return pages.Page([keys.public(item) for item in page.items], page.next_cursor)


def revoke_key(owner: str, mind_id: str, key_id: str) -> None:
    """Both halves of the key go together, counted off the mind; a revocation racing another of the
    same key is a 404, and the count moves once."""
    get_mind(mind_id)
    item = keys.find(mind_id, key_id)
    if item is None:
        raise NotFound(f"No key {key_id[:80]!r} on this mind.")
    try:
        target = {"key_id": key_id, "label": item["label"]}
        event = audit.put_operation(mind_id, "key.revoked", audit.by_user(owner), target)
        transact_in_live_mind(
            mind_id, [*keys.revoke_operations(mind_id, item), event], limits.keys_of(mind_id), -1
        )
    except tables.client().exceptions.TransactionCanceledException:
        raise NotFound(f"No key {key_id[:80]!r} on this mind.") from None
