"""Query strings → the typed values the read paths take. Every `?name=value` rule of SPEC lives
here (but the lists' `limit` and `cursor`: `http.Request.page`), so the feature packages never see a
request, and a bad parameter is a 400 naming it."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

from synapse.api.http import Request
from synapse.core import moments
from synapse.core.errors import BadRequest
from synapse.memory.kinds import TAG_MAX_CHARS, Category, Priority, Source
from synapse.memory.selections import ListFilters, TagQuery
from synapse.recall import query
from synapse.recall.query import RecallQuery
from synapse.search.filters import Mode, SearchFilters

_WITHIN = re.compile(r"([1-9][0-9]{0,6})([mhdw])")
WITHIN_UNITS = {
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
}
MAX_WITHIN = timedelta(days=365)
WITHIN_FORM = (
    "must be a whole number followed by m, h, d or w (minutes, hours, days, weeks), "
    "e.g. 30m, 24h, 7d or 2w; at most 365d"
)


def _bad(name: str, rule: str, message: str) -> BadRequest:
    return BadRequest(f"{name}: {message}", details=[{"field": name, "rule": rule, "message": message}])


def categories_of(request: Request) -> frozenset[str] | None:
    """`category`, repeatable (`?category=fact&category=project` or `?category=fact,project`)."""
    allowed = [c.value for c in Category]
    found = set()
    for raw in request.query_all("category"):
        for value in (part.strip() for part in raw.split(",")):
            if value not in allowed:
                raise _bad("category", "enum", f"must be one of {', '.join(allowed)}.")
            found.add(value)
    return frozenset(found) or None


def tag_of(request: Request, required: bool) -> str | None:
    """A tag as stored: trimmed and lowercased, so matching is case-insensitive."""
    raw = request.query_one("tag")
    if raw is None or not raw.strip():
        if required:
            raise _bad("tag", "required", "give the tag to look up, e.g. ?tag=docker.")
        if raw is None:
            return None
        raise _bad("tag", "length", f"must be 1-{TAG_MAX_CHARS} characters.")
    tag = raw.strip().lower()
    if len(tag) > TAG_MAX_CHARS:
        raise _bad("tag", "length", f"must be 1-{TAG_MAX_CHARS} characters.")
    return tag


def parse_within(raw: str | None) -> timedelta:
    if raw is None:
        return timedelta(days=7)
    found = _WITHIN.fullmatch(raw)
    if not found or int(found[1]) * WITHIN_UNITS[found[2]] > MAX_WITHIN:
        raise _bad("within", "duration", WITHIN_FORM + f" (got {raw[:40]!r}).")
    return int(found[1]) * WITHIN_UNITS[found[2]]


_OFFSET_AS_SPACE = re.compile(r"(T.*[0-9]) ([0-9]{2}(?::?[0-9]{2})?)")  # `+02:00` left unencoded: ` 02:00`


def moment_of(request: Request, name: str) -> str | None:
    """A date or a timestamp with a zone (a `+` offset sent unencoded reads as a space: taken back)."""
    raw = request.query_one(name)
    if raw is None:
        return None
    raw = raw.strip()
    raw = _OFFSET_AS_SPACE.sub(r"\1+\2", raw) if "T" in raw else raw
    try:
        return moments.parse(raw)
    except moments.NotAMoment as refused:
        raise _bad(name, refused.rule, f"{refused.message} (got {raw[:40]!r}).") from None


def window_of(request: Request) -> moments.Window:
    """`after` and `before`, inclusive: a date as `after` from its first moment (UTC), as `before`
    to its last. `after` later than `before` is a 400: no memory could match."""
    window = moments.Window.of(moment_of(request, "after"), moment_of(request, "before"))
    if window.after is not None and window.before is not None and window.after > window.before:
        raise _bad("after", "order", f"must not be later than before ({window.after} > {window.before}).")
    return window


def recall_query(request: Request) -> RecallQuery:
    shape = request.query_one("format") or "text"
    if shape not in {"text", "json"}:
        raise _bad("format", "enum", "must be text or json.")
    now, zone = asker_clock(request)
    return RecallQuery(
        categories=categories_of(request),
        tag=tag_of(request, required=False),
        limit=request.query_int("limit", query.DEFAULT_LIMIT, 1, query.MAX_LIMIT),
        max_chars=request.query_int("max_chars", query.MAX_CHARS, query.MIN_CHARS, query.MAX_CHARS),
        as_json=shape == "json",
        q=recall_focus(request),
        window=window_of(request),
        now=now,
        zone=zone,
        include_superseded=include_superseded(request),
    )


def asker_clock(request: Request) -> tuple[datetime | None, tzinfo | None]:
    """`now` (replaying another moment: a timestamp with its zone, or a date) and `tz` (the asker's
    IANA zone), which search and recall read time expressions by (docs/time.md)."""
    raw_now, raw_zone = request.query_one("now"), request.query_one("tz")
    if raw_now is None and raw_zone is None:
        return None, None
    from synapse.when import zones  # only where time is read, and only when asked

    try:
        zone = zones.zone_of(raw_zone)
        moment = zones.moment_of(raw_now, zone, default=None) if raw_now is not None else None
    except zones.BadClock as error:
        raise _bad(error.field, "time", str(error)) from None
    return moment, zone


def recall_focus(request: Request) -> str | None:
    """Recall's `q`: a user's message can be long; what is searched is its start (`recall.reads`)."""
    q = request.query_one("q")
    if q is not None and len(q) > query.MAX_FOCUS_CHARS:
        raise _bad("q", "length", f"at most {query.MAX_FOCUS_CHARS} characters (got {len(q)}).")
    return q if q and q.strip() else None


def tag_query(request: Request) -> TagQuery:
    tag = tag_of(request, required=True)
    assert tag is not None
    return TagQuery(
        tag,
        categories_of(request),
        bool(request.query_bool("include_expired", False)),
        include_superseded=include_superseded(request),
        window=window_of(request),
    )


def include_superseded(request: Request) -> bool:
    """`include_superseded`: also the memories a newer one replaced (marked `superseded_by`)."""
    return bool(request.query_bool("include_superseded", False))


def list_filters(request: Request) -> ListFilters:
    tag = request.query_one("tag")
    return ListFilters(
        category=request.query_choice("category", Category),
        tag=tag.strip().lower() if tag else None,
        priority=request.query_choice("priority", Priority),
        source=request.query_choice("source", Source),
        verified=request.query_bool("verified"),
        include_expired=bool(request.query_bool("include_expired", False)),
        window=window_of(request),
        updated_after=moment_of(request, "updated_after"),
        include_superseded=include_superseded(request) or None,
    )


def search_mode(request: Request) -> Mode:
    """`mode`: hybrid (default), lexical or semantic; explicit query syntax is lexical whatever it says."""
    return Mode(request.query_choice("mode", Mode) or Mode.HYBRID.value)


def search_filters(request: Request) -> SearchFilters:
    tag = request.query_one("tag")
    return SearchFilters(
        tag=tag.strip().lower() if tag and tag.strip() else None,
        category=request.query_choice("category", Category),
        priority=request.query_choice("priority", Priority),
        include_expired=bool(request.query_bool("include_expired", False)),
        window=window_of(request),
        include_superseded=include_superseded(request),
    )
