"""GET /minds/{mind_id}/keys — keys without secrets, paginated."""

from synapse.api.http import Request, Response, endpoint
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage Mind Keys")
    page = minds.list_keys(owner, request.path("mind_id"), *request.page())
    return Response.json({"keys": page.items, "next_cursor": page.next_cursor})
