"""Deleting a mind with everything in it: the one workflow that spans every feature, so it lives
above them (minds, keys, hooks, webhooks, memories) instead of inside the lowest of them."""

from __future__ import annotations

from synapse.core import clock
from synapse.core.errors import NotFound
from synapse.core.ids import looks_like_id
from synapse.memory import purge
from synapse.minds import audit, keys, minds
from synapse.oauth import revocation
from synapse.search import index_drops
from synapse.storage import tables
from synapse.teams import items, members
from synapse.webhooks import hooks, subscriptions


def delete_mind(owner: str, mind_id: str) -> None:
    """The mind first (memory writes and new keys need it, and the search indexer takes its absence
    as the order to drop the index), then a marker for the orphan sweep, then its keys, connected
    apps and hooks, then every memory item.

    A tombstone naming who deleted it outlives the mind until the purge is done, and so do the
    members (an owner's role is checked at the route), so a DELETE cut short (say a Lambda timeout
    on a large mind) can be sent again by an owner and finishes the job instead of leaving memories
    nobody can reach. The members and invitations go last.
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
        marker = {**tombstone, "deleted_by": owner, "deleted_at": clock.to_iso(clock.now())}
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
    purge.purge_mind(mind_id)
    members.delete_all(mind_id)  # last: until now the owners may send the DELETE again
    tables.batch_delete(tables.minds_table(), [tombstone])
