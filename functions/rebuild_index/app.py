"""Rebuild a mind's index from DynamoDB ({"mind_id": ...}); {"sweep": true} removes deleted minds' indexes."""

from typing import Any

from synapse.core.observability import entry_point
from synapse.search import orphans, rebuild


@entry_point(log_event=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("sweep"):
        return {"status": "swept", "removed": orphans.sweep()}
    mind_id = str(event.get("mind_id") or "")
    if not orphans.mind_exists(mind_id):
        removed = orphans.remove_mind(mind_id)
        return {"mind_id": mind_id, "status": "mind not found", "index_removed": removed}
    rebuilt = rebuild.rebuild(mind_id)
    return {
        "mind_id": mind_id,
        "status": "rebuilt",
        "indexed": rebuilt.indexed,
        "carried_over": rebuilt.carried_over,
        "generation": rebuilt.generation.name if rebuilt.generation else None,
    }
