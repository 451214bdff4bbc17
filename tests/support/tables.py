"""Reading the moto tables directly, to check what the API left behind."""

from __future__ import annotations

from typing import Any

from synapse.storage import tables

MEMORIES = "test-memories"
MINDS = "test-minds"


def scan(client: Any, table: str) -> list[dict[str, Any]]:
    """Every item of a table, deserialised (tests only: the service never scans)."""
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {"TableName": table}
    while True:
        answer = client.scan(**params)
        items += [tables.load(item) for item in answer.get("Items", [])]
        if "LastEvaluatedKey" not in answer:
            return items
        params["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def mind_items(client: Any, mind_id: str) -> dict[str, list[dict[str, Any]]]:
    """A mind's memory-table items grouped by kind: memory, pointer, tag."""
    kinds: dict[str, list[dict[str, Any]]] = {"memory": [], "pointer": [], "tag": []}
    for item in scan(client, MEMORIES):
        if item["pk"] != mind_id:
            continue
        sk = item["sk"]
        if sk.startswith(tables.MEMORY_PREFIX):
            kinds["memory"].append(item)
        elif sk.startswith(tables.POINTER_PREFIX):
            kinds["pointer"].append(item)
        elif sk.startswith(tables.TAG_PREFIX):
            kinds["tag"].append(item)
    return kinds


def left_of_mind(client: Any, mind_id: str) -> list[dict[str, Any]]:
    """Minds-table items naming the mind, except its index-drop marker: deleting a mind leaves that
    one on purpose (the orphan sweep reads it; `ttl` removes it), see `index.index_drops`."""
    return [i for i in scan(client, MINDS) if mind_id in str(i) and not i["pk"].startswith("DROPINDEX#")]
