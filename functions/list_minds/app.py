"""GET /minds — the caller's minds, with memory counts."""

from synapse.api.http import Request, Response, endpoint
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("list minds")
    return Response.json({"minds": [m.public() for m in minds.list_minds(owner)], "next_cursor": None})
