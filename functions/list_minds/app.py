"""GET /minds — the caller's minds, with memory counts, oldest first, paginated."""

from synapse.api.http import Request, Response, endpoint
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("list minds")
    page = minds.list_minds(owner, *request.page())
    return Response.json({"minds": [m.public() for m in page.items], "next_cursor": page.next_cursor})
