"""Outbound webhook subscriptions: who wants which events of a mind, and how their delivery fares.

A subscription lives under its mind in the Minds table (`MIND#<mind>` / `WEBHOOK#<id>`), so the
event producer finds a mind's subscriptions with one Query. Its signing secret is shown once and
kept sealed (`sealed`, bound to the item), since the server must use it again to sign.

`memory.expiring` is produced by a scheduled function; to find the minds that want it without a
scan, a registry item per mind (`WEBHOOKS#EXPIRING` / `MIND#<mind>`) counts the mind's
subscriptions to it, changed in the same transaction as the subscription.

How its deliveries fare (last success, failing since, disabled after 3 days) is `health`;
re-enabling a disabled subscription with PATCH starts the count afresh.

A subscription records its creator and their tenure as owner (`minds.tenure`), as a Mind Key does:
it sends the mind's events (its memories' content) only while they hold it (`sending`, checked by
the producer and again by delivery), and is revoked when they are removed or demoted
(`teams.holdings`). One from before creators were recorded belongs to the mind.
"""

from datetime import datetime, timedelta
from typing import Any, NamedTuple, Protocol

from synapse.core import clock
from synapse.core.errors import Conflict, NotFound
from synapse.core.ids import looks_like_id, new_id
from synapse.core.settings import get_settings
from synapse.memory import event_names
from synapse.minds import audit, limits, minds, tenure
from synapse.storage import pages, tables
from synapse.webhooks import sealed, signing, ssrf

MAX_PER_MIND = limits.MAX_WEBHOOKS_PER_MIND
ORPHAN_GRACE = timedelta(days=2)  # a deleted mind's subscriptions outlive its purge's events
_UPDATE_ATTEMPTS = 4


# ---------------------------------------------------------------- bodies (`webhooks.bodies`)


class WebhookFields(Protocol):
    """What `bodies.WebhookWrite` carries, validated."""

    @property
    def url(self) -> str: ...
    @property
    def events(self) -> list[str]: ...


class WebhookChanges(Protocol):
    """What `bodies.WebhookPatch` carries: a field left out is None."""

    @property
    def url(self) -> str | None: ...
    @property
    def events(self) -> list[str] | None: ...
    @property
    def enabled(self) -> bool | None: ...


def guard(url: str) -> ssrf.Target:
    """The URL's target after DNS, or a 422 that says which rule it broke."""
    try:
        return ssrf.check(url, get_settings().webhooks_allow_loopback)
    except ssrf.Refused as refused:
        raise refused.as_field_error("url") from None


# ---------------------------------------------------------------- the subscription


class Subscription(NamedTuple):
    id: str
    mind_id: str
    url: str
    events: tuple[str, ...]
    enabled: bool
    created_at: str
    updated_at: str
    sealed_secret: str
    failing_since: str | None = None
    last_success_at: str | None = None
    last_failure_at: str | None = None
    last_error: str | None = None
    disabled_reason: str | None = None
    created_by: str | None = None  # None: from before creators were recorded (the mind's)
    tenure: str | None = None
    orphaned: bool = False  # its mind is deleted: it delivers the purge's events, then TTL ends it

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "url": self.url,
            "events": list(self.events),
            "enabled": self.enabled,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "failing_since": self.failing_since,
            "last_success_at": self.last_success_at,
            "last_failure_at": self.last_failure_at,
            "last_error": self.last_error,
            "disabled_reason": self.disabled_reason,
        }

    def secret(self) -> str:
        return sealed.unseal(self.sealed_secret, _bound_to(self.mind_id, self.id))

    def wants(self, event_type: str) -> bool:
        return self.enabled and event_type in self.events


def _bound_to(mind_id: str, webhook_id: str) -> str:
    return f"webhook/{mind_id}/{webhook_id}"


def from_item(item: dict[str, Any]) -> Subscription:
    return Subscription(
        id=item["id"],
        mind_id=item["mind_id"],
        url=item["url"],
        events=tuple(item.get("events") or ()),
        enabled=bool(item.get("enabled")),
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        sealed_secret=item["secret"],
        failing_since=item.get("failing_since"),
        last_success_at=item.get("last_success_at"),
        last_failure_at=item.get("last_failure_at"),
        last_error=item.get("last_error"),
        disabled_reason=item.get("disabled_reason"),
        created_by=item.get("created_by"),
        tenure=item.get("tenure"),
        orphaned="ttl" in item,
    )


def _item(subscription: Subscription) -> dict[str, Any]:
    return {
        **tables.webhook_key(subscription.mind_id, subscription.id),
        "id": subscription.id,
        "mind_id": subscription.mind_id,
        "url": subscription.url,
        "events": list(subscription.events),
        "enabled": subscription.enabled,
        "created_at": subscription.created_at,
        "updated_at": subscription.updated_at,
        "secret": subscription.sealed_secret,
        "failing_since": subscription.failing_since,
        "last_success_at": subscription.last_success_at,
        "last_failure_at": subscription.last_failure_at,
        "last_error": subscription.last_error,
        "disabled_reason": subscription.disabled_reason,
        **{
            name: getattr(subscription, name)
            for name in ("created_by", "tenure")
            if getattr(subscription, name)
        },
    }


def _registry_op(mind_id: str, delta: int) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": tables.minds_table(),
            "Key": tables.dump(tables.expiring_registry_key(mind_id)),
            "UpdateExpression": "SET mind_id = :mind ADD n :delta",
            "ExpressionAttributeValues": tables.values(mind=mind_id, delta=delta),
        }
    }


# ---------------------------------------------------------------- reads


def list_subscriptions(mind_id: str) -> list[Subscription]:
    """Every subscription of a mind: one Query of its partition's WEBHOOK# items."""
    return [
        from_item(item)
        for item in tables.query_all(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=tables.values(pk=f"MIND#{mind_id}", prefix=tables.WEBHOOK_PREFIX),
        )
    ]


def held(subscription: Subscription, cache: dict[tuple[str | None, str | None], bool] | None = None) -> bool:
    """Whether the subscription may send: its creator still holds the tenure it was made in
    (`tenure.holds`, one GetItem, once per creator and tenure in `cache`), or it records no creator,
    or its mind is deleted (the members went with it; what they no longer held went before)."""
    if subscription.orphaned or not subscription.created_by:
        return True
    creator = (subscription.created_by, subscription.tenure)
    if cache is None:
        return tenure.holds(subscription.mind_id, *creator)
    if creator not in cache:
        cache[creator] = tenure.holds(subscription.mind_id, *creator)
    return cache[creator]


def sending(subscriptions: list[Subscription]) -> list[Subscription]:
    """Those of one mind's subscriptions that may send (`held`), each creator checked once."""
    cache: dict[tuple[str | None, str | None], bool] = {}
    return [subscription for subscription in subscriptions if held(subscription, cache)]


def find(mind_id: str, webhook_id: str) -> Subscription | None:
    if not looks_like_id("wh_", webhook_id):
        return None
    item = tables.get(tables.minds_table(), tables.webhook_key(mind_id, webhook_id))
    return from_item(item) if item else None


def owned(owner: str, mind_id: str, webhook_id: str) -> Subscription:
    minds.get_mind(mind_id)
    found = find(mind_id, webhook_id)
    if found is None:
        raise NotFound(f"No webhook {webhook_id[:80]!r} on this mind.")
    return found


def list_owned(
    owner: str, mind_id: str, limit: int = pages.DEFAULT_LIMIT, after: str | None = None
) -> pages.Page[dict[str, Any]]:
    """A page of the mind's subscriptions, in id order."""
    minds.get_mind(mind_id)
    page = pages.in_mind(mind_id, tables.WEBHOOK_PREFIX, limit, after)
    return pages.Page([from_item(item).public() for item in page.items], page.next_cursor)


# ---------------------------------------------------------------- writes


def _audited(
    owner: str, mind_id: str, action: str, subscription: Subscription, **more: Any
) -> dict[str, Any]:
    """The audit event of a change to a subscription, for the change's own transaction."""
    target = {"webhook_id": subscription.id, "url": subscription.url, **more}
    return audit.put_operation(mind_id, action, audit.by_user(owner), target)


def create(owner: str, mind_id: str, body: WebhookFields) -> dict[str, Any]:
    """A new subscription; the answer carries its signing secret, the only time it is shown."""
    minds.get_mind(mind_id)
    guard(body.url)
    hold = tenure.hold(mind_id, owner)  # the subscription records its creator and ends with their tenure
    webhook_id = new_id("wh_")
    secret = signing.new_secret()
    now = clock.to_iso(clock.now())
    subscription = Subscription(
        id=webhook_id,
        mind_id=mind_id,
        url=body.url,
        events=tuple(body.events),
        enabled=True,
        created_at=now,
        updated_at=now,
        sealed_secret=sealed.seal(secret, _bound_to(mind_id, webhook_id)),
        created_by=hold.recorded["created_by"],
        tenure=hold.recorded.get("tenure"),
    )
    operations: list[dict[str, Any]] = [
        {
            "Put": {
                "TableName": tables.minds_table(),
                "Item": tables.dump(_item(subscription)),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        },
    ]
    if event_names.EXPIRING in subscription.events:
        operations.append(_registry_op(mind_id, 1))
    operations.append(_audited(owner, mind_id, "webhook.created", subscription))
    if hold.operation:
        operations.append(hold.operation)
    # The limit (MAX_PER_MIND) is a count kept in this transaction, never a count read before it.
    try:
        minds.transact_in_live_mind(mind_id, operations, limits.webhooks_of(mind_id), +1)
    except tables.client().exceptions.TransactionCanceledException:
        raise tenure.lost() from None  # the creator's role changed while we wrote
    return {**subscription.public(), "secret": secret}


def update(owner: str, mind_id: str, webhook_id: str, patch: WebhookChanges) -> dict[str, Any]:
    """Change url, events or enabled; written only if nobody changed the subscription meanwhile."""
    if patch.url is not None:
        guard(patch.url)
    for _ in range(_UPDATE_ATTEMPTS):
        old = owned(owner, mind_id, webhook_id)
        changes: dict[str, Any] = {"updated_at": clock.to_iso(clock.now())}
        if patch.url is not None:
            changes["url"] = patch.url
        if patch.events is not None:
            changes["events"] = tuple(patch.events)
        if patch.enabled is not None:
            changes["enabled"] = patch.enabled
            if patch.enabled:  # a fresh start: the failure count and the reason go
                changes |= {"failing_since": None, "disabled_reason": None}
        new = old._replace(**changes)
        operations: list[dict[str, Any]] = [
            minds.mind_exists_check(mind_id),  # a deleted mind's webhook has its TTL: a Put must not drop it
            {
                "Put": {
                    "TableName": tables.minds_table(),
                    "Item": tables.dump(_item(new)),
                    "ConditionExpression": "updated_at = :seen",
                    "ExpressionAttributeValues": tables.values(seen=old.updated_at),
                }
            },
        ]
        delta = (event_names.EXPIRING in new.events) - (event_names.EXPIRING in old.events)
        if delta:
            operations.append(_registry_op(mind_id, delta))
        changed = [name for name in ("enabled", "events", "url") if getattr(patch, name) is not None]
        operations.append(_audited(owner, mind_id, "webhook.updated", new, changed=changed))
        try:
            tables.transact(operations)
        except tables.client().exceptions.TransactionCanceledException as error:
            codes = tables.cancellation_codes(error)
            if codes[:1] == ["ConditionalCheckFailed"]:
                raise NotFound(f"No mind {mind_id!r}.") from None
            if codes[1:2] == ["ConditionalCheckFailed"]:
                continue  # changed (or deleted) since we read it: read again
            raise
        return new.public()
    raise Conflict("The webhook kept changing while we updated it; send the PATCH again.")


def delete_operations(subscription: Subscription) -> list[dict[str, Any]]:
    """The transaction operations that delete a subscription (and its memory.expiring registration),
    without its count: a delete by hand, or a revocation with its creator's tenure (`holdings`)."""
    operations: list[dict[str, Any]] = [
        {
            "Delete": {
                "TableName": tables.minds_table(),
                "Key": tables.dump(tables.webhook_key(subscription.mind_id, subscription.id)),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
    ]
    if event_names.EXPIRING in subscription.events:
        operations.append(_registry_op(subscription.mind_id, -1))
    return operations


def delete(owner: str, mind_id: str, webhook_id: str) -> None:
    old = owned(owner, mind_id, webhook_id)
    operations = [*delete_operations(old), _audited(owner, mind_id, "webhook.deleted", old)]
    try:
        minds.transact_in_live_mind(mind_id, operations, limits.webhooks_of(mind_id), -1)
    except tables.client().exceptions.TransactionCanceledException:
        raise NotFound(f"No webhook {webhook_id[:80]!r} on this mind.") from None


def expire_orphans(mind_id: str, subscriptions: list[Subscription], at: datetime) -> None:
    """A deleted mind's subscriptions stay long enough to deliver its purge's memory.deleted events
    (and their retries), then DynamoDB's TTL removes them, and the registry item with them."""
    ttl = int((at + ORPHAN_GRACE + timedelta(days=1)).timestamp())
    keys = [tables.webhook_key(mind_id, s.id) for s in subscriptions]
    keys.append(tables.expiring_registry_key(mind_id))
    for key in keys:
        try:
            tables.client().update_item(
                TableName=tables.minds_table(),
                Key=tables.dump(key),
                UpdateExpression="SET #ttl = :ttl",
                ConditionExpression="attribute_exists(pk) AND attribute_not_exists(#ttl)",
                ExpressionAttributeNames={"#ttl": "ttl"},
                ExpressionAttributeValues=tables.values(ttl=ttl),
            )
        except tables.client().exceptions.ConditionalCheckFailedException:
            pass


# ---------------------------------------------------------------- the memory.expiring registry


def minds_wanting_expiring() -> list[str]:
    """Minds with at least one subscription to memory.expiring: one Query of the registry."""
    return [
        str(item["mind_id"])
        for item in tables.query_all(
            TableName=tables.minds_table(),
            KeyConditionExpression="pk = :pk",
            FilterExpression="n > :zero",
            ExpressionAttributeValues=tables.values(pk=tables.EXPIRING_REGISTRY, zero=0),
        )
    ]
