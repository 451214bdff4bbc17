"""Rebuild a mind's index from DynamoDB ({"mind_id": ...}); {"sweep": true} removes deleted minds' indexes."""

from typing import Any

from synapse.core.observability import entry_point
from synapse.search import index as search_index


@entry_point(log_event=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("sweep"):
        return {"status": "swept", "removed": search_index.sweep()}
    mind_id = str(event.get("mind_id") or "")
    if not search_index.mind_exists(mind_id):
        removed = search_index.remove_mind(mind_id)
        return {"mind_id": mind_id, "status": "mind not found", "index_removed": removed}
    rebuilt = search_index.rebuild(mind_id)
    return {
        "mind_id": mind_id,
        "status": "rebuilt",
        "indexed": rebuilt.indexed,
        "carried_over": rebuilt.carried_over,
        "generation": rebuilt.generation.name if rebuilt.generation else None,
    }
