"""GET /minds — the caller's minds, with memory counts."""

from synapse import minds
from synapse.http import Request, Response, endpoint


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("list minds")
    return Response.json({"minds": [m.public() for m in minds.list_minds(owner)], "next_cursor": None})
