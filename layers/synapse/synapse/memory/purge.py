"""A deleted mind's memories purged: every item of its partition in the Memories table.

Apart from `store` (the writes): deleting a mind removes its items wholesale and needs nothing of
the write path, its proposals or its history (issue 35, cold start of DELETE /minds/{mind_id})."""

from collections.abc import Callable

from synapse.storage import tables


def purge_mind(mind_id: str, progress: Callable[[int], None] | None = None) -> int:
    """Delete every item of a mind (memories, pointers, tag copies, counters, revisions, proposals).
    Repeats until none is left; `progress` hears how many each round deleted."""
    deleted = 0
    while True:
        pages = tables.query_pages(
            TableName=tables.memories_table(),
            KeyConditionExpression="pk = :mind",
            ExpressionAttributeValues=tables.values(mind=mind_id),
            ProjectionExpression="pk, sk",
        )
        this_pass = 0
        for items, _ in pages:  # a page at a time: progress shows, and memory stays one page's
            keys = [{"pk": item["pk"], "sk": item["sk"]} for item in items]
            tables.batch_delete(tables.memories_table(), keys)
            this_pass += len(keys)
            if keys and progress is not None:
                progress(len(keys))
        if not this_pass:
            return deleted
        deleted += this_pass
