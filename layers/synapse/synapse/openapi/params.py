"""The query and header parameters the routes share, for the OpenAPI document: each route's own
list (`LIST_FILTERS`, `RECALL`, `SEARCH`) names the parameters `api.routes.ROUTE_QUERIES` knows."""

from __future__ import annotations

from synapse.api import http, queries
from synapse.api.hooks import IDEMPOTENCY_KEY_MAX_CHARS
from synapse.core import validation
from synapse.memory.kinds import TAG_MAX_CHARS, Category, Priority, Source
from synapse.openapi.parts import BOOLEAN, STRING, TEXT_PRESENT, Param, enum, integer, query

CATEGORIES = query("category", {"type": "array", "items": enum(Category)}, "Repeatable, or comma-separated.")
TAG = query("tag", {**TEXT_PRESENT, "maxLength": TAG_MAX_CHARS}, "Case-insensitive.")
# A duration of at most MAX_WITHIN (365 days): up to 525600m, 8760h, 365d or 52w.
WITHIN = {
    "type": "string",
    "pattern": "^(?:"
    + "|".join(
        validation.whole_numbers_pattern(queries.MAX_WITHIN // length) + unit
        for unit, length in queries.WITHIN_UNITS.items()
    )
    + ")$",
}
INCLUDE_EXPIRED = query("include_expired", BOOLEAN, "Include expired memories.")
INCLUDE_SUPERSEDED = query(
    "include_superseded",
    BOOLEAN,
    "Include memories a newer one replaced (marked `superseded_by`); left out by default.",
)
# The asker's clock (docs/time.md): what time words ("next week") and recall's "Coming up" count from.
ASKER_CLOCK = (
    query(
        "now",
        {"type": "string", "maxLength": 40, "anyOf": [{"format": "date"}, {"format": "date-time"}]},
        "Read time words as of this moment (replaying an old conversation): a timestamp with its zone"
        " or a date. Default: now.",
    ),
    query("tz", {"type": "string", "minLength": 1, "maxLength": 64}, "The asker's IANA zone (default UTC)."),
)
IF_NONE_MATCH = Param("If-None-Match", "header", STRING, "The ETag you hold: 304 while it is current.")
IF_MATCH = Param(
    "If-Match",
    "header",
    {"type": "string", "pattern": "^" + http.IF_MATCH.pattern + "$"},
    'The memory\'s version (3, "3" or W/"3"): the update applies only to it (else 412).',
)
IDEMPOTENCY = Param(
    "Idempotency-Key",
    "header",
    {"type": "string", "pattern": f"^[\\x21-\\x7e]{{1,{IDEMPOTENCY_KEY_MAX_CHARS}}}$"},
    f"1-{IDEMPOTENCY_KEY_MAX_CHARS} visible ASCII characters; a replay within 24 h gets the first answer.",
)
MOMENT = {"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}]}  # core.moments
_ON = "on each memory's occurred_at, else created_at: a date (its whole day, UTC) or a timestamp with a zone"
WINDOW = (
    query("after", MOMENT, f"From this time on (inclusive), {_ON}. Later than `before`: 400."),
    query("before", MOMENT, f"Up to this time (inclusive), {_ON}."),
)
LIST_FILTERS = (
    query("category", enum(Category)),
    query("tag", STRING),
    query("priority", enum(Priority)),
    query("source", enum(Source)),
    query(
        "verified",
        BOOLEAN,
        "false: what waits for review, an app's private memories (app:private) left out unless `tag` asks.",
    ),
    INCLUDE_EXPIRED,
    INCLUDE_SUPERSEDED,
    *WINDOW,
    query("updated_after", MOMENT, "What changed since (a date: from its start, UTC), newest change first."),
)
RECALL = (
    CATEGORIES,
    TAG,
    query("limit", integer(1, 1000), "Entries in full plus keys named (default 100)."),
    query("max_chars", integer(500, 400_000), "The text never exceeds this (default 400000)."),
    query("format", {"type": "string", "enum": ["text", "json"]}, "json: the same selection as JSON."),
    query(
        "q",
        {"type": "string", "maxLength": 4_000},
        "The user's message or the task: the memories most relevant to it follow the critical ones.",
    ),
    *WINDOW,
    *ASKER_CLOCK,
    INCLUDE_SUPERSEDED,
)
# A query needs a letter or a digit to search for (else a 400): `[^\W_]` is str.isalnum() in Python's
# regex dialect, and ASCII letters and digits in ECMA's, a part of that.
SEARCHABLE = {"type": "string", "minLength": 1, "pattern": r"[^\W_]"}
SEARCH = (
    query(
        "q",
        {**SEARCHABLE, "maxLength": 1000},
        'A question or keywords (best match); exact: "phrase", prefix*, AND, OR, NOT, +word, ( ).'
        " docs/search.md.",
        required=True,
    ),
    query("tag", STRING),
    query("category", enum(Category)),
    query("priority", enum(Priority)),
    INCLUDE_EXPIRED,
    INCLUDE_SUPERSEDED,
    query(
        "mode",
        {"type": "string", "enum": ["hybrid", "lexical", "semantic"]},
        "hybrid (default): words and meaning fused; lexical: words only; semantic: meaning only. "
        "Explicit syntax is lexical.",
    ),
    *WINDOW,
    *ASKER_CLOCK,
)
