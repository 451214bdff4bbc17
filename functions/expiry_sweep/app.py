"""Every 15 minutes, one invocation per shard group: expired memories out of recall's and by-tag's
indexes (synapse.memory.sweep)."""

import time
from typing import Any

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.core.observability import COUNT, SECONDS, entry_point, logger, metrics
from synapse.memory import sweep

MARGIN_MS = 20_000  # stop this long before the timeout (at most half the time); the next run resumes


@entry_point()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    remaining = context.get_remaining_time_in_millis()
    deadline = time.monotonic() + (remaining - min(MARGIN_MS, remaining // 2)) / 1000
    tally = sweep.run(deadline=deadline, shards=sweep.shards_for(event))
    logger.info("expiry sweep run", extra=tally)
    metrics.add_metric(name="ExpiredMemoriesSwept", unit=COUNT, value=tally["swept"])
    metrics.add_metric(name=sweep.FAILED_METRIC, unit=COUNT, value=tally["failed"])
    if "lag_seconds" in tally:
        metrics.add_metric(name=sweep.LAG_METRIC, unit=SECONDS, value=tally["lag_seconds"])
    if tally["failed"]:  # the others' watermarks moved; fail the run so the errors alarm sees it
        raise RuntimeError(f"expiry sweep: {tally['failed']} shard(s) failed, retried next run")
    return tally
