"""GET /minds/{mind_id}/keys — keys without secrets."""

from synapse.api.http import Request, Response, endpoint
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage Mind Keys")
    return Response.json({"keys": minds.list_keys(owner, request.path("mind_id")), "next_cursor": None})
