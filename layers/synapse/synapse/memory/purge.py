"""A deleted mind's memories purged: every item of its partition in the Memories table.

Apart from `store` (the writes): deleting a mind removes its items wholesale and needs nothing of
the write path, its proposals or its history (issue 35, cold start of DELETE /minds/{mind_id})."""

from synapse.storage import tables


def purge_mind(mind_id: str) -> int:
    """Delete every item of a mind (memories, pointers, tag copies, counters, revisions, proposals).
    Repeats until none is left."""
    deleted = 0
    while True:
        keys = [
            {"pk": item["pk"], "sk": item["sk"]}
            for item in tables.query_all(
                TableName=tables.memories_table(),
                KeyConditionExpression="pk = :mind",
                ExpressionAttributeValues=tables.values(mind=mind_id),
                ProjectionExpression="pk, sk",
            )
        ]
        if not keys:
            return deleted
        tables.batch_delete(tables.memories_table(), keys)
        deleted += len(keys)
