"""The reads of memories by tag, by expiry and the list of GET /memory (recall's is `recall.streams`),
and the query pieces they share. Apart from `store` (the writes), so a read's cold start loads none
of the write path (issue 35).

Each reads an index already in the order it answers in and stops when the answer is full, so
its cost follows the answer, not the mind (`tables.query_pages` counts every item read):
- by-tag: the live tag copies of that tag only (with `include_expired`, the swept ones after);
- expiring: GSI `expiring` (pk, expires_at) between now and now + within only.

Expired memories are skipped one by one only until the expiry sweep (`expiry`, `sweep`) takes them
out of these indexes, so what a read pays for them is what expired since the last sweep.
"""

from datetime import datetime, timedelta
from typing import Any, NamedTuple

from synapse.core import clock
from synapse.core.errors import BadRequest
from synapse.memory import expiry
from synapse.memory.items import SUPERSEDED_TAG_MARK, memory_from_item
from synapse.memory.kinds import APP_PRIVATE_TAG, Memory
from synapse.memory.selections import ListFilters, TagQuery
from synapse.storage import cursor, pages, tables

LIST_READ_BUDGET = 1000  # items one GET /memory may read before it answers with a cursor


class Page(NamedTuple):
    memories: list[Memory]
    next_cursor: str | None


def _bad(name: str, rule: str, message: str) -> BadRequest:
    return BadRequest(f"{name}: {message}", details=[{"field": name, "rule": rule, "message": message}])


# ---------------------------------------------------------------- shared query pieces (recall.streams too)


NOT_SUPERSEDED = "attribute_not_exists(superseded_by)"


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
    """Memories carrying the tag, in recall order, from the tag's own copies only: the live ones,
    then (`include_superseded`) the replaced ones (`items.SUPERSEDED_TAG_MARK`), then
    (`include_expired`) the swept ones."""
    clauses, names = [], {"#m": "memory"}
    vals: dict[str, Any] = {"mind": mind_id, "prefix": tables.tag_prefix(query.tag)}
    key_condition = "pk = :mind AND begins_with(sk, :prefix)"  # the swept copies come last
    if not query.include_expired:
        clauses.append(not_expired("#m.expires_at"))
        vals["now"] = clock.to_iso(at or clock.now())
        key_condition = "pk = :mind AND sk BETWEEN :prefix AND :live_end"
        live_end = expiry.live_tag_bounds(query.tag)[1]
        if query.include_superseded:
            live_end = tables.tag_prefix(query.tag) + SUPERSEDED_TAG_MARK + "~"
        vals["live_end"] = live_end
    elif not query.include_superseded:  # live and swept copies, the replaced ones between skipped
        clauses.append("attribute_not_exists(#m.superseded_by)")
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
    scope = f"expiring {int(within.total_seconds())}s"
    if after and cursor.decode(after, mind_id, scope, EXPIRING_POSITION)["expires_at"] < start:
        after = None  # the cursor's memory has expired since: the window now starts after it
    params: dict[str, Any] = {
        "TableName": tables.memories_table(),
        "IndexName": "expiring",
        "KeyConditionExpression": "pk = :mind AND expires_at BETWEEN :start AND :end",
        "ExpressionAttributeValues": tables.values(mind=mind_id, start=start, end=end),
    }
    if include_superseded:
        scope += " +superseded"
    else:  # skipped one by one: what a window holds of them is what was replaced and expires in it
        params["FilterExpression"] = NOT_SUPERSEDED
    return _page(mind_id, params, limit, scope, list(EXPIRING_POSITION), after)


# ---------------------------------------------------------------- list (GET /memory)


def _filter_expression(filters: ListFilters, now: str) -> tuple[str | None, dict[str, Any], dict[str, str]]:
    clauses: list[str] = []
    vals: dict[str, Any] = {}
    for name in ("category", "priority", "source", "verified"):
        value = getattr(filters, name)
        if value is not None:
            clauses.append(f"#{name} = :{name}")
            vals[name] = value
    if filters.tag is not None:
        clauses.append("contains(tags, :tag)")
        vals["tag"] = filters.tag
    elif filters.verified is False:  # the review queue is the person's: no app's data unless asked
        clauses.append("NOT contains(tags, :private)")
        vals["private"] = APP_PRIVATE_TAG
    if not filters.include_expired:
        clauses.append("(attribute_not_exists(expires_at) OR expires_at > :now)")
        vals["now"] = now
    if not filters.include_superseded:
        clauses.append(NOT_SUPERSEDED)
    names = {
        f"#{n}": n for n in ("category", "priority", "source", "verified") if getattr(filters, n) is not None
    }
    return (" AND ".join(clauses) or None), vals, names


def list_memories(mind_id: str, filters: ListFilters, limit: int, after: str | None) -> Page:
    """Newest first (by created_at): reads until `limit` matches plus one, to know whether more exist.

    A selective filter on a large mind could read on and on, so one request reads at most about
    LIST_READ_BUDGET items; it then answers what it found (maybe fewer than `limit`, maybe none)
    with a cursor where it stopped. Clients already follow `next_cursor` until it is null.
    """
    scope = filters.scope()
    params: dict[str, Any] = {
        "TableName": tables.memories_table(),
        "IndexName": "created",
        "KeyConditionExpression": "pk = :mind",
        "ScanIndexForward": False,
        "Limit": min(limit + 1, 100),
    }
    expression, vals, names = _filter_expression(filters, clock.to_iso(clock.now()))
    params["ExpressionAttributeValues"] = tables.values(mind=mind_id, **vals)
    if expression:
        params["FilterExpression"] = expression
    if names:
        params["ExpressionAttributeNames"] = names
    if after:
        params["ExclusiveStartKey"] = tables.dump(
            cursor.decode(after, mind_id, scope, ("pk", "sk", "created_sk"))
        )
    found: list[dict[str, Any]] = []
    stopped_at: dict[str, Any] | None = None
    for read, (items, last_key) in enumerate(tables.query_pages(**params), start=1):
        found += items
        if len(found) > limit:
            break
        if last_key and read * params["Limit"] >= LIST_READ_BUDGET:
            stopped_at = tables.load(last_key)
            break
    memories = [memory_from_item(i) for i in found[:limit]]
    next_cursor = None
    if len(found) > limit:
        last = found[limit - 1]
        stopped_at = {"pk": last["pk"], "sk": last["sk"], "created_sk": last["created_sk"]}
    if stopped_at is not None:
        next_cursor = cursor.encode(mind_id, scope, stopped_at)
    return Page(memories, next_cursor)
