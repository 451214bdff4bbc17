"""Pages of the Minds table's lists (minds, keys, hooks, webhooks), like the memory lists: `limit`
items and an opaque cursor after the last one shown, `None` on the last page.

A cursor carries only what names the last item (`Position.fields`); the ExclusiveStartKey is rebuilt
from it here and checked against the list it is for, so a signed cursor of the wrong shape is a 400.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

from synapse.storage import cursor, tables

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
Item = dict[str, Any]


class Page[T](NamedTuple):
    items: list[T]
    next_cursor: str | None


class Position(NamedTuple):
    """What a cursor of one list holds, and the ExclusiveStartKey it stands for (None: not one of
    this list's, so the cursor is refused)."""

    fields: tuple[str, ...]
    start_key: Callable[[dict[str, Any]], dict[str, str] | None]


def read(
    params: dict[str, Any], bound_to: str, scope: str, limit: int, after: str | None, at: Position
) -> Page[Item]:
    """One page of the query `params`: `limit` items, read until one more shows whether more exist.

    The cursor is bound to `bound_to` (a mind id, or `user:<sub>` for a user's minds) and `scope`.
    """
    params = {**params, "Limit": limit + 1}
    if after:
        start = at.start_key(cursor.decode(after, bound_to, scope, at.fields))
        if start is None:
            raise cursor.invalid("malformed position")
        params["ExclusiveStartKey"] = tables.dump(start)
    found: list[Item] = []
    for items, _ in tables.query_pages(**params):
        found += items
        if len(found) > limit:
            break
    shown = found[:limit]
    next_cursor = None
    if len(found) > limit:
        next_cursor = cursor.encode(bound_to, scope, {name: shown[-1][name] for name in at.fields})
    return Page(shown, next_cursor)


def first(params: dict[str, Any], count: int) -> list[Item]:
    """At most the first `count` items of a query (one small read)."""
    items, _ = next(tables.query_pages(**params, Limit=count))
    return items[:count]


def in_mind(mind_id: str, prefix: str, limit: int, after: str | None) -> Page[Item]:
    """A page of the items under a mind whose sort key starts with `prefix` (`KEY#`, `HOOK#`,
    `WEBHOOK#`), in sort-key (id) order."""
    partition = f"MIND#{mind_id}"

    def start_key(position: dict[str, Any]) -> dict[str, str] | None:
        sort_key = position["sk"]
        fits = isinstance(sort_key, str) and sort_key.startswith(prefix) and len(sort_key) > len(prefix)
        return {"pk": partition, "sk": sort_key} if fits else None

    params = {
        "TableName": tables.minds_table(),
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
        "ExpressionAttributeValues": tables.values(pk=partition, prefix=prefix),
        "ConsistentRead": True,
    }
    return read(params, mind_id, f"list {prefix}", limit, after, Position(("sk",), start_key))
