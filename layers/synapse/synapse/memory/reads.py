"""The reads of memories by tag and by expiry (recall's is `recall.streams`), and the query pieces
both share.

Each reads an index already in the order it answers in and stops when the answer is full, so
its cost follows the answer, not the mind (`tables.query_pages` counts every item read):
- by-tag: the live tag copies of that tag only (with `include_expired`, the swept ones after);
- expiring: GSI `expiring` (pk, expires_at) between now and now + within only.

Expired memories are skipped one by one only until the expiry sweep (`expiry`, `sweep`) takes them
out of these indexes, so what a read pays for them is what expired since the last sweep.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from synapse.core import clock
from synapse.core.errors import BadRequest
from synapse.memory import expiry
from synapse.memory.items import memory_from_item
from synapse.memory.selections import TagQuery
from synapse.memory.store import Page
from synapse.storage import cursor, pages, tables


def _bad(name: str, rule: str, message: str) -> BadRequest:
    return BadRequest(f"{name}: {message}", details=[{"field": name, "rule": rule, "message": message}])


# ---------------------------------------------------------------- shared query pieces (recall.streams too)


def not_expired(path: str) -> str:
    return f"(attribute_not_exists({path}) OR {path} > :now)"


def category_clause(path: str, categories: frozenset[str] | None) -> tuple[str | None, dict[str, str]]:
    if not categories:
        return None, {}
    names = {f"c{i}": c for i, c in enumerate(sorted(categories))}
    return f"{path} IN ({', '.join(':' + n for n in names)})", names


# ---------------------------------------------------------------- by-tag


def _page(
    mind_id: str, params: dict[str, Any], limit: int, scope: str, position: list[str], after: str | None
) -> Page:
    """One page of memories; the cursor's fields are the ExclusiveStartKey itself."""
    at = pages.Position(tuple(position), lambda fields: fields)
    found = pages.read(params, mind_id, scope, limit, after, at)
    return Page([memory_from_item(item.get("memory", item)) for item in found.items], found.next_cursor)


def by_tag(mind_id: str, query: TagQuery, limit: int, after: str | None, at: datetime | None = None) -> Page:
    """Memories carrying the tag, in recall order, from the tag's own copies only."""
    clauses, names = [], {"#m": "memory"}
    vals: dict[str, Any] = {"mind": mind_id, "prefix": tables.tag_prefix(query.tag)}
    key_condition = "pk = :mind AND begins_with(sk, :prefix)"  # the swept copies come last
    if not query.include_expired:
        clauses.append(not_expired("#m.expires_at"))
        vals["now"] = clock.to_iso(at or clock.now())
        key_condition = "pk = :mind AND sk BETWEEN :prefix AND :live_end"
        vals["live_end"] = expiry.live_tag_bounds(query.tag)[1]
    category, category_values = category_clause("#m.category", query.categories)
    if category:
        clauses.append(category)
        vals.update(category_values)
    params: dict[str, Any] = {
        "TableName": tables.memories_table(),
        "KeyConditionExpression": key_condition,
        "ExpressionAttributeValues": tables.values(**vals),
    }
    if clauses:
        params["FilterExpression"] = " AND ".join(clauses)
        params["ExpressionAttributeNames"] = names
    return _page(mind_id, params, limit, query.scope(), ["pk", "sk"], after)


# ---------------------------------------------------------------- expiring


EXPIRING_POSITION = ("pk", "sk", "expires_at")


def expiring(
    mind_id: str, within: timedelta, limit: int, after: str | None, at: datetime | None = None
) -> Page:
    """now < expires_at ≤ now + within, soonest first, read from the `expiring` index's window only."""
    moment = at or clock.now()
    # Timestamps are millisecond text, so "after now" is "from now + 1 ms" (BETWEEN is inclusive).
    start = clock.to_iso(clock.from_iso(clock.to_iso(moment)) + timedelta(milliseconds=1))
    end = clock.to_iso(moment + within)
    scope = f"expiring {int(within.total_seconds())}s"
    if after and cursor.decode(after, mind_id, scope, EXPIRING_POSITION)["expires_at"] < start:
        after = None  # the cursor's memory has expired since: the window now starts after it
    params: dict[str, Any] = {
        "TableName": tables.memories_table(),
        "IndexName": "expiring",
        "KeyConditionExpression": "pk = :mind AND expires_at BETWEEN :start AND :end",
        "ExpressionAttributeValues": tables.values(mind=mind_id, start=start, end=end),
    }
    return _page(mind_id, params, limit, scope, list(EXPIRING_POSITION), after)
