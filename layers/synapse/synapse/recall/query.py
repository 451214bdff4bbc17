"""What a recall asks for, as `api.queries` builds it from a request and `recall.reads` answers it.

Apart from `recall.reads` so that building one costs no import of the read path: the search
handler, which parses its query strings in `api.queries` too, never runs it (issue 14)."""

from typing import NamedTuple

from synapse.recall import text


class RecallQuery(NamedTuple):
    categories: frozenset[str] | None = None
    tag: str | None = None
    limit: int = text.DEFAULT_LIMIT
    max_chars: int = text.MAX_CHARS
    as_json: bool = False
    q: str | None = None  # the user's message or the task: the memories relevant to it come first
    way_on: str = text.SEARCH_HINT  # what the left-out line names: REST's route, MCP's tool
