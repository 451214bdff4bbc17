"""What a recall asks for, as `api.queries` builds it from a request and `recall.reads` answers it,
and the budgets it may ask for (`recall.text` composes within them).

Apart from `recall.reads` and `recall.text` so that building one costs no import of the read path or
the text: the list, by-tag, expiring and search handlers, which parse their query strings in
`api.queries` too, never run it (issues 14, 35)."""

from datetime import datetime, tzinfo
from typing import NamedTuple

from synapse.core.moments import Window

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
# 400,000 characters keep the answer under Lambda's 6 MB response limit in any script.
MAX_CHARS = 400_000
# Room for the header with a 100-character mind name and both closing lines with large counts.
MIN_CHARS = 500
# Recall's `q` may be a whole user message; its first MAX_QUERY_CHARS (search's bound) are searched.
MAX_FOCUS_CHARS = 4_000
# How the reader finds what was left out, in the words of the surface that shows the text: REST names
# its route, MCP its tool (a model over MCP cannot call a route), the CLI its command. No other way on
# may be longer than the route's, so a client that names its own never pushes the text past max_chars.
SEARCH_HINT = "GET /memory/search"
MCP_SEARCH_HINT = "the search tool"


class RecallQuery(NamedTuple):
    categories: frozenset[str] | None = None
    tag: str | None = None
    limit: int = DEFAULT_LIMIT
    max_chars: int = MAX_CHARS
    as_json: bool = False
    q: str | None = None  # the user's message or the task: the memories relevant to it come first
    way_on: str = SEARCH_HINT  # what the left-out line names: REST's route, MCP's tool
    window: Window = Window()  # after/before: only memories whose time falls in it
    now: datetime | None = None  # `now=`: the moment time words and "Coming up" count from
    zone: tzinfo | None = None  # `tz=`: the asker's zone (UTC when None)
    include_superseded: bool = False  # also the memories a newer one replaced, after the rest
