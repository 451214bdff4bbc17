"""Rebuild a mind's index from DynamoDB ({"mind_id": ...}); {"sweep": true} (the daily schedule)
removes deleted minds' indexes, resuming where the last run stopped (synapse.search.orphans), then
fills in the vectors a broken model left behind (synapse.search.deferred)."""

import time
from typing import Any

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.core import observability
from synapse.core.observability import entry_point, metrics
from synapse.search import deferred, orphans, rebuild

MARGIN_MS = 60_000  # stop this long before the timeout (at most half the time); the next run resumes


@entry_point(log_event=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("sweep") or event.get("detail-type") == "Scheduled Event":
        remaining = context.get_remaining_time_in_millis()
        deadline = time.monotonic() + (remaining - min(MARGIN_MS, remaining // 2)) / 1000
        folders = int(event.get("folders", orphans.FOLDERS_PER_RUN))
        out_of_time = lambda: time.monotonic() > deadline  # noqa: E731
        swept = orphans.sweep(out_of_time=out_of_time, folders=folders)
        metrics.add_metric(name=orphans.LAG_METRIC, unit=observability.SECONDS, value=swept.lag_seconds)
        filled = deferred.fill_pending(limit=deferred.MINDS_PER_SWEEP, out_of_time=out_of_time)
        return {"status": "swept", **swept.as_dict(), "vectors_filled": filled}
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
