"""GET /memory — newest first, filtered, paginated."""

from synapse.api import queries
from synapse.api.http import Request, Response, endpoint
from synapse.memory import store


@endpoint
def handler(request: Request) -> Response:
    page = store.list_memories(
        request.mind_id(),
        queries.list_filters(request),
        request.query_int("limit", 20, 1, 100),
        request.query_one("cursor"),
    )
    return Response.json({"memories": [m.public() for m in page.memories], "next_cursor": page.next_cursor})
