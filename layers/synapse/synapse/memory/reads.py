"""The reads of memories by tag, by expiry and the list of GET /memory (recall's is `recall.streams`),
and the query pieces they share. Apart from `store` (the writes), so a read's cold start loads none
of the write path (issue 35).

Each reads an index already in the order it answers in and stops when the answer is full, so
its cost follows the answer, not the mind (`tables.query_pages` counts every item read):
- by-tag: the live tag copies of that tag only (with `include_expired`, the swept ones after);
- expiring (`memory.expiring_reads`): GSI `expiring` (pk, expires_at) between now and now + within.

Expired memories are skipped one by one only until the expiry sweep (`expiry`, `sweep`) takes them
out of these indexes, so what a read pays for them is what expired since the last sweep.
"""

from datetime import datetime
from typing import Any, NamedTuple

from synapse.core import clock, moments
from synapse.core.errors import BadRequest
from synapse.core.moments import Window
from synapse.memory import expiry
from synapse.memory.items import INVERTED_BASE, SUPERSEDED_TAG_MARK, memory_from_item
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


def window_clause(window: Window, path: str = "") -> tuple[str | None, dict[str, Any], dict[str, str]]:
    """after/before as a FilterExpression on an item's memory fields (`path`: `#m.` for a tag copy's
    `memory`): its occurred_at (a date: any of its day) where set, else its created_at. Both bounds
    are UTC timestamps; a date compares with them as its shorter text: equal to the bound's day, it
    overlaps it, which `size` = 10 tells apart from a timestamp of that day."""
    if not window.given:
        return None, {}, {}
    occurred, created = f"{path}#w_oc", f"{path}#w_cr"
    with_event: list[str] = []
    without_event: list[str] = []
    vals: dict[str, Any] = {}
    if window.after is not None:
        on_first_day = f"(size({occurred}) = :w_ten AND {occurred} = :w_lo_day)"
        with_event.append(f"({occurred} >= :w_lo OR {on_first_day})")
        without_event.append(f"{created} >= :w_lo")
        vals |= {"w_lo": window.after, "w_lo_day": window.after[: moments.DATE_LENGTH]}
        vals["w_ten"] = moments.DATE_LENGTH
    if window.before is not None:
        with_event.append(f"{occurred} <= :w_hi")
        without_event.append(f"{created} <= :w_hi")
        vals["w_hi"] = window.before
    clause = (
        f"((attribute_exists({occurred}) AND {' AND '.join(with_event)})"
        f" OR (attribute_not_exists({occurred}) AND {' AND '.join(without_event)}))"
    )
    return clause, vals, {"#w_oc": "occurred_at", "#w_cr": "created_at"}


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
    window, window_values, window_names = window_clause(query.window, "#m.")
    if window:
        clauses.append(window)
        vals.update(window_values)
        names.update(window_names)
    params: dict[str, Any] = {
        "TableName": tables.memories_table(),
        "KeyConditionExpression": key_condition,
        "ExpressionAttributeValues": tables.values(**vals),
    }
    if clauses:
        params["FilterExpression"] = " AND ".join(clauses)
        params["ExpressionAttributeNames"] = names
    return _page(mind_id, params, limit, query.scope(), ["pk", "sk"], after)


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
    With after/before, newest event first (`_in_window`); with updated_after, newest change first
    (`_changed_since`).

    A selective filter on a large mind could read on and on, so one request reads at most about
    LIST_READ_BUDGET items; it then answers what it found (maybe fewer than `limit`, maybe none)
    with a cursor where it stopped. Clients already follow `next_cursor` until it is null.
    """
    if filters.updated_after is not None:
        return _changed_since(mind_id, filters, limit, after)
    if filters.window.given:
        return _in_window(mind_id, filters, limit, after)
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


# ---------------------------------------------------------------- list by time: after/before, updated_after
#
# Each is a merge of a few index ranges, each already in the answer's order, so a page reads about
# what it returns (plus what the list's other filters leave out):
# - after/before: the sparse GSI `occurred` (pk, occurred_sk) for the memories with an occurred_at,
#   and `created` (pk, created_sk) over the same window for those without one (its memories with one
#   are read there and left out by the filter: what was stored in the window but is about another
#   time). Newest event first. A date counts as its whole day: the `occurred` range starts at the
#   first day's midnight, and a timestamp before `after` that day is left out by the filter.
# - updated_after: GSI `recall` (pk, recall_sk) holds, for each priority rank, the memories most
#   recently updated first (`items.recall_sk`): the four ranks' ranges down to `updated_after`,
#   merged, are what changed since, newest change first. An expired memory the sweep took out of
#   recall is not among them (`include_expired` cannot bring it back here).
#
# A cursor holds the merged position of the last memory shown (its sort key without the rank): each
# range goes on from it (inclusive, the memory itself skipped). A page stops reading at about
# LIST_READ_BUDGET items and answers with the position every range has read past.

_TOP = "~"  # after every id character: `<time>#~` closes a range at that time, ids included
_EARLIEST, _LATEST = "0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z"
_MERGED_POSITION = ("k",)


class _Range(NamedTuple):
    """One index range of a merged list: `params` without the sort key's bounds."""

    params: dict[str, Any]
    sort_key: str
    lower: str  # inclusive
    upper: str  # inclusive
    prefix: str  # what stands before the merged position in the sort key (the rank in recall_sk)

    def bounds(self, resume: str | None, descending: bool) -> tuple[str, str]:
        """The range left to read after the position `resume` (itself included, then skipped)."""
        if resume is None:
            return self.lower, self.upper
        at = self.prefix + resume
        return (self.lower, min(self.upper, at)) if descending else (max(self.lower, at), self.upper)

    def query(self, lower: str, upper: str, descending: bool, page: int) -> dict[str, Any]:
        values = {**self.params.get("ExpressionAttributeValues", {}), **tables.values(r_lo=lower, r_hi=upper)}
        return {
            **self.params,
            "KeyConditionExpression": f"pk = :mind AND {self.sort_key} BETWEEN :r_lo AND :r_hi",
            "ExpressionAttributeValues": values,
            "ScanIndexForward": not descending,
            "Limit": page,
        }


class _Reading:
    """A range being read page by page: what it found not yet shown, and how far it has read."""

    def __init__(self, part: _Range, resume: str | None, descending: bool) -> None:
        self.part, self.resume = part, resume
        lower, upper = part.bounds(resume, descending)
        self.done = lower > upper
        self.params = part.query(lower, upper, descending, 1)
        self.found: list[tuple[str, dict[str, Any]]] = []  # (position, item), in the merged order
        self.read_to: str | None = None  # the position of the last item read
        self.start: dict[str, Any] | None = None  # where the next page starts (ExclusiveStartKey)

    def next_page(self, wanted: int) -> None:
        """Read up to `wanted` more items: what the page still lacks, so a filter that leaves one
        out costs one more item, not another whole page."""
        params = {**self.params, "Limit": max(1, wanted)}
        if self.start is not None:
            params["ExclusiveStartKey"] = self.start
        items, last = next(tables.query_pages(**params))
        cut = len(self.part.prefix)
        found = ((str(item[self.part.sort_key])[cut:], item) for item in items)
        self.found += [pair for pair in found if pair[0] != self.resume]
        self.start = last
        if last:
            self.read_to = str(tables.load(last)[self.part.sort_key])[cut:]
        else:
            self.done = True


def _merged(
    mind_id: str, scope: str, parts: list[_Range], limit: int, after: str | None, descending: bool
) -> Page:
    """One page of the ranges merged in one order (positions descending or ascending)."""
    resume = str(cursor.decode(after, mind_id, scope, _MERGED_POSITION)["k"]) if after else None
    # The page and one more, from any range, says whether more exist (and the cursor's own memory,
    # read again where the range goes on from it and skipped).
    page = limit + 1 + (resume is not None)
    readings = [_Reading(part, resume, descending) for part in parts]
    shown: list[tuple[str, dict[str, Any]]] = []
    asked = 0  # items asked of DynamoDB: at most what it reads
    stopped_at: str | None = None
    while len(shown) <= limit:
        starved = [r for r in readings if not r.found and not r.done]
        if starved and asked >= LIST_READ_BUDGET:
            # Every range has read at least to the least advanced starved one: show what lies
            # before that position, and go on from it next time.
            ends = [r.read_to for r in starved if r.read_to is not None]
            stopped_at = (max(ends) if descending else min(ends)) if ends else resume
            break
        for reading in starved:
            wanted = page - len(shown)
            reading.next_page(wanted)
            asked += wanted
        if starved:
            continue
        ready = [r for r in readings if r.found]
        if not ready:
            break
        pick = (max if descending else min)(ready, key=lambda r: r.found[0][0])
        shown.append(pick.found.pop(0))
    if stopped_at is not None:
        bound = stopped_at
        held = [pair for r in readings for pair in r.found if (pair[0] > bound) == descending]
        shown += sorted(held, key=lambda pair: pair[0], reverse=descending)
    next_cursor = None
    if len(shown) > limit:
        next_cursor = cursor.encode(mind_id, scope, {"k": shown[limit - 1][0]})
    elif stopped_at is not None and stopped_at != resume:
        next_cursor = cursor.encode(mind_id, scope, {"k": stopped_at})
    return Page([memory_from_item(item) for _, item in shown[:limit]], next_cursor)


def _list_params(filters: ListFilters, index: str, extra: str | None = None) -> dict[str, Any]:
    """The query of one range of a list by time: the list's filters, the window's, and `extra`."""
    expression, vals, names = _filter_expression(filters, clock.to_iso(clock.now()))
    window, window_values, window_names = window_clause(filters.window)
    clauses = [c for c in (expression, window, extra) if c]
    params: dict[str, Any] = {
        "TableName": tables.memories_table(),
        "IndexName": index,
        "ExpressionAttributeValues": tables.values(**vals, **window_values),
    }
    if clauses:
        params["FilterExpression"] = " AND ".join(clauses)
    if names or window_names:
        params["ExpressionAttributeNames"] = {**names, **window_names}
    return params


def _in_window(mind_id: str, filters: ListFilters, limit: int, after: str | None) -> Page:
    """after/before: the memories whose time falls in the window, newest event first."""
    window = filters.window
    lower, upper = window.after or _EARLIEST, (window.before or _LATEST) + "#" + _TOP
    with_event = _list_params(filters, "occurred")
    without_event = _list_params(filters, "created", "attribute_not_exists(#w_oc)")
    without_event.setdefault("ExpressionAttributeNames", {})["#w_oc"] = "occurred_at"
    for params in (with_event, without_event):
        params["ExpressionAttributeValues"] |= tables.values(mind=mind_id)
    parts = [
        _Range(with_event, "occurred_sk", lower[: moments.DATE_LENGTH] + "T00:00:00.000Z", upper, ""),
        _Range(without_event, "created_sk", lower, upper, ""),
    ]
    return _merged(mind_id, filters.scope(), parts, limit, after, descending=True)


def _changed_since(mind_id: str, filters: ListFilters, limit: int, after: str | None) -> Page:
    """updated_after: what changed since, newest change first, from recall's index rank by rank."""
    assert filters.updated_after is not None
    since = clock.epoch_micros(clock.from_iso(moments.day_start(filters.updated_after)))
    # recall_sk's middle is 10^17 minus the update's microseconds: after `since` is below it
    upper = f"{INVERTED_BASE - since:017d}"
    parts = []
    for rank in range(4):
        params = _list_params(filters, "recall")
        params["ExpressionAttributeValues"] |= tables.values(mind=mind_id)
        parts.append(_Range(params, "recall_sk", f"{rank}#", f"{rank}#{upper}", f"{rank}#"))
    return _merged(mind_id, filters.scope(), parts, limit, after, descending=False)
