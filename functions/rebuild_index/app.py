"""Rebuild a mind's index from DynamoDB ({"mind_id": ...}); {"sweep": true} (the daily schedule)
removes deleted minds' indexes (synapse.index.orphans), then fills in what a broken model left."""

import time
from typing import Any

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.core.observability import SECONDS, entry_point, metrics
from synapse.index import deferred, orphans, rebuild, stream

MARGIN_MS = 60_000  # stop this long before the timeout (at most half the time); the next run resumes


@entry_point(log_event=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("sweep") or event.get("detail-type") == "Scheduled Event":
        remaining = context.get_remaining_time_in_millis()
        deadline = time.monotonic() + (remaining - min(MARGIN_MS, remaining // 2)) / 1000
        folders = int(event.get("folders", orphans.FOLDERS_PER_RUN))
        swept = orphans.sweep(out_of_time=lambda: time.monotonic() > deadline, folders=folders)
        metrics.add_metric(name=orphans.LAG_METRIC, unit=SECONDS, value=swept.lag_seconds)
        filled = stream.fill_pending(None, deferred.MINDS_PER_SWEEP, lambda: time.monotonic() > deadline)
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
