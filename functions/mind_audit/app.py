"""GET /minds/{mind_id}/audit — who changed the mind's credentials and settings, newest first."""

from synapse.api.http import Request, Response, endpoint
from synapse.minds import minds


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("read a mind's audit")
    page = minds.audit_events(owner, request.path("mind_id"), *request.page())
    return Response.json({"events": page.items, "next_cursor": page.next_cursor})
