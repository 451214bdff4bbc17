"""GET /memory/expiring: the memories expiring within a window, soonest first, read from the
`expiring` index's window only (its cost follows the answer). Beside `reads`, whose paging it uses."""

from datetime import datetime, timedelta
from typing import Any

from synapse.core import clock
from synapse.memory.reads import NOT_SUPERSEDED, Page, _page
from synapse.storage import cursor, tables

EXPIRING_POSITION = ("pk", "sk", "expires_at")


def expiring(
    mind_id: str,
    within: timedelta,
    limit: int,
    after: str | None,
    at: datetime | None = None,
    include_superseded: bool = False,
) -> Page:
    """now < expires_at ≤ now + within, soonest first, read from the `expiring` index's window only."""
    moment = at or clock.now()
    # Timestamps are millisecond text, so "after now" is "from now + 1 ms" (BETWEEN is inclusive).
    start = clock.to_iso(clock.from_iso(clock.to_iso(moment)) + timedelta(milliseconds=1))
    end = clock.to_iso(moment + within)
    scope = f"expiring {int(within.total_seconds())}s" + (" +superseded" if include_superseded else "")
    if after and cursor.decode(after, mind_id, scope, EXPIRING_POSITION)["expires_at"] < start:
        after = None  # the cursor's memory has expired since: the window now starts after it
    params: dict[str, Any] = {
        "TableName": tables.memories_table(),
        "IndexName": "expiring",
        "KeyConditionExpression": "pk = :mind AND expires_at BETWEEN :start AND :end",
        "ExpressionAttributeValues": tables.values(mind=mind_id, start=start, end=end),
    }
    if not include_superseded:  # skipped one by one: what a window holds of them is what was replaced
        params["FilterExpression"] = NOT_SUPERSEDED
    return _page(mind_id, params, limit, scope, list(EXPIRING_POSITION), after)
