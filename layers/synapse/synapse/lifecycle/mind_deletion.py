"""Deleting a mind with everything in it: the one workflow that spans every feature, so it lives
above them (minds, keys, hooks, webhooks, memories) instead of inside the lowest of them."""

from __future__ import annotations

from synapse.core import clock
from synapse.core.errors import NotFound
from synapse.core.ids import looks_like_id
from synapse.index import index_drops
from synapse.lifecycle import purges
from synapse.memory import purge
from synapse.minds import audit, keys, minds
from synapse.oauth import revocation
from synapse.storage import tables
from synapse.teams import items, members
from synapse.webhooks import hooks, subscriptions


def delete_mind(owner: str, mind_id: str) -> None:
    """What makes the mind gone, at once: the mind item (memory writes and new keys need it, and the
    search indexer takes its absence as the order to drop the index), a marker for the orphan sweep,
    its keys, connected apps and hooks. Its memories, members and invitations go in the purge,
    started elsewhere (`purges`): its cost grows with the mind, the answer's does not.

    A tombstone naming who deleted it outlives the mind until the purge is done, and so do the
    members (an owner's role is checked at the route), so a purge cut short (say a Lambda timeout on
    a huge mind, after its retries) is started again by an owner sending the DELETE again, and
    finishes the job instead of leaving memories nobody can reach.
    """
    tombstone = tables.mind_tombstone_key(mind_id)
    try:
        items.materialise(mind_id)  # the owner's membership outlives the mind item, for a retry
        mind = minds.get_mind(mind_id)
    except NotFound:
        left = tables.get(tables.minds_table(), tombstone) if looks_like_id("m_", mind_id) else None
        if left is None:
            raise
    else:
        marker = {**tombstone, "deleted_by": owner, "deleted_at": clock.to_iso(clock.now()), "purged": 0}
        tables.client().put_item(TableName=tables.minds_table(), Item=tables.dump(marker))
        minds.forget_mind(mind.owner, mind_id)  # and counted off its creator's minds
    # Once the mind item is gone (so the sweep never meets a marker of a live mind), and on every
    # retry too: the orphan sweep finds the index folder to remove from it, without listing EFS.
    index_drops.record(mind_id)
    keys.delete_all(mind_id)
    revocation.delete_all(mind_id)
    audit.delete_all(mind_id)
    lookups, listed = hooks.hook_keys_of_mind(mind_id)
    tables.batch_delete(tables.minds_table(), lookups)  # first, like the keys' lookups
    tables.batch_delete(tables.minds_table(), listed)
    # Webhooks stay to deliver the purge's memory.deleted events, then TTL removes them: set here
    # too, since a mind without memories sends no event through the stream that would set it. One
    # whose creator no longer holds it (a revocation not written yet) goes now: an orphan sends
    # without the check, since the members go with the mind (`subscriptions.held`).
    webhooks = subscriptions.list_subscriptions(mind_id)
    kept = subscriptions.sending(webhooks)
    ended = [tables.webhook_key(mind_id, s.id) for s in webhooks if s not in kept]
    tables.batch_delete(tables.minds_table(), ended)
    subscriptions.expire_orphans(mind_id, kept, clock.now())
    if not purges.start_elsewhere(mind_id):
        finish_deletion(mind_id)


def finish_deletion(mind_id: str) -> int:
    """The purge: every memory item, then the members and invitations, then the tombstone (until now
    the owners may send the DELETE again). Its progress is counted on the tombstone, which
    GET /minds/{mind_id} reports while it lasts (`purge_progress`). Idempotent: a purge started
    twice, or again after it finished, deletes what is left, if anything."""
    tombstone = tables.mind_tombstone_key(mind_id)
    deleted = purge.purge_mind(mind_id, progress=lambda count: _count_purged(tombstone, count))
    members.delete_all(mind_id)
    tables.batch_delete(tables.minds_table(), [tombstone])
    return deleted


def _count_purged(tombstone: dict[str, str], count: int) -> None:
    try:
        tables.client().update_item(
            TableName=tables.minds_table(),
            Key=tables.dump(tombstone),
            UpdateExpression="SET purged = if_not_exists(purged, :zero) + :count",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues=tables.dump({":zero": 0, ":count": count}),
        )
    except tables.client().exceptions.ConditionalCheckFailedException:
        pass  # another purge of the same mind finished first: nothing left to count on
