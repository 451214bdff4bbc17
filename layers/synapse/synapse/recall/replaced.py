"""Recall with `include_superseded=true`: after what is current, the memories a newer one replaced
(`memory.supersede`), marked, so an agent can see what changed ("was: Works at Acme").

Replaced memories are in none of recall's indexes (they carry no `recall_sk`), so they are read
here from the mind's memory items, filtered to the replaced ones: a read whose cost follows the
mind, paid only by the recall that asks for it. The section stays within `max_chars`.
"""

from synapse.memory.items import memory_from_item
from synapse.memory.kinds import Memory
from synapse.recall.query import RecallQuery
from synapse.recall.text import Recall
from synapse.storage import tables

HEADING = "Replaced by newer memories (kept for reference):"


def _selected(memory: Memory, query: RecallQuery) -> bool:
    return (query.categories is None or memory.category in query.categories) and (
        query.tag is None or query.tag in memory.tags
    )


def replaced(mind_id: str, query: RecallQuery) -> list[Memory]:
    """The mind's replaced memories in the recall's selection, most recently replaced first."""
    items = tables.query_all(
        TableName=tables.memories_table(),
        KeyConditionExpression="pk = :mind AND begins_with(sk, :prefix)",
        FilterExpression="attribute_exists(superseded_by)",
        ExpressionAttributeValues=tables.values(mind=mind_id, prefix=tables.MEMORY_PREFIX),
    )
    found = [m for m in (memory_from_item(item) for item in items) if _selected(m, query)]
    return sorted(found, key=lambda m: m.superseded_at or "", reverse=True)[: query.limit]


def _line(memory: Memory) -> str:
    content = " ".join(memory.content.split())
    return f"- {memory.category}/{memory.key}: {content} (replaced by {memory.superseded_by})\n"


def with_replaced(mind_id: str, query: RecallQuery, recall: Recall) -> Recall:
    """`recall` with the replaced memories after it (its text, as far as `max_chars` allows; its
    JSON's `replaced`)."""
    found = replaced(mind_id, query)
    if not found:
        return recall
    text = recall.text.rstrip("\n") + "\n\n" + HEADING + "\n"
    for memory in found:
        line = _line(memory)
        if len(text) + len(line) > query.max_chars:
            break
        text += line
    if len(text) > query.max_chars:
        return recall
    return recall._replace(text=text, replaced=tuple(found))
