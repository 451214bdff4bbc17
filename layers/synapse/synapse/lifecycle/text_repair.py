"""A one-off repair of a mind written before every door refused lone UTF-16 surrogates (issue 32).

Reads already show such text with U+FFFD (`tables.load`), so the mind answers; but the items keyed
by a tag (its copies `TAG#…` and its counters `NTAG#…`) keep the surrogate in their sort key, and a
later change of the memory, which addresses the repaired tag, misses them: the copy stays behind and
the counters drift. This rewrites a mind's Memories partition once: an item holding a lone surrogate
is written back repaired, and one keyed by it moves to the repaired key (a counter adding its counts
to the one there). Run it while the mind is quiet (`python -m infra.repair_text <mind_id>…`); a
second run finds nothing to do.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from synapse.core import json_input
from synapse.memory import counts
from synapse.storage import tables

_raw = TypeDeserializer()
COUNTER_FIELDS = ("n", "v", "low")


def _partition(mind_id: str) -> Iterator[dict[str, Any]]:
    """The mind's Memories items in wire format, as stored (no repair)."""
    params: dict[str, Any] = {
        "TableName": tables.memories_table(),
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": tables.values(pk=mind_id),
        "ConsistentRead": True,
    }
    while True:
        answer = tables.client().query(**params)
        yield from answer.get("Items", [])
        if "LastEvaluatedKey" not in answer:
            return
        params["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def _not_text(wire: dict[str, Any]) -> bool:
    return json_input.lone_surrogate({k: _raw.deserialize(v) for k, v in wire.items()}) is not None


def _moved_counter(item: dict[str, Any], old_sk: str, new_sk: str) -> list[dict[str, Any]]:
    fields = [f for f in COUNTER_FIELDS if f in item]
    added = {
        "TableName": tables.memories_table(),
        "Key": tables.dump({"pk": item["pk"], "sk": new_sk}),
        "UpdateExpression": "ADD " + ", ".join(f"#{f} :{f}" for f in fields),
        "ExpressionAttributeNames": {f"#{f}": f for f in fields},
        "ExpressionAttributeValues": tables.values(**{f: item[f] for f in fields}),
    }
    removed = {"TableName": tables.memories_table(), "Key": tables.dump({"pk": item["pk"], "sk": old_sk})}
    return [{"Delete": removed}, {"Update": added}] if fields else [{"Delete": removed}]


def _operations(wire: dict[str, Any]) -> list[dict[str, Any]]:
    """The writes that put one item holding a lone surrogate right."""
    item = tables.load(wire)  # every value repaired; pk and sk as stored
    old_sk = str(item["sk"])
    new_sk = json_input.repaired_text(old_sk)
    table = tables.memories_table()
    if new_sk == old_sk:
        return [{"Put": {"TableName": table, "Item": tables.dump(item)}}]
    if old_sk.startswith(counts.TAG_PREFIX):
        return _moved_counter(item, old_sk, new_sk)
    removed = {"TableName": table, "Key": tables.dump({"pk": item["pk"], "sk": old_sk})}
    return [{"Delete": removed}, {"Put": {"TableName": table, "Item": tables.dump({**item, "sk": new_sk})}}]


def repair_mind(mind_id: str) -> int:
    """Rewrite the mind's items that hold a lone surrogate; returns how many there were."""
    repaired = 0
    for wire in _partition(mind_id):
        if _not_text(wire):
            tables.transact(_operations(wire))
            repaired += 1
    return repaired
