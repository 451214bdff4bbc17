"""GET /minds/{mind_id}/webhooks — the mind's subscriptions, without secrets."""

from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import subscriptions


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage webhooks")
    found = subscriptions.list_owned(owner, request.path("mind_id"))
    return Response.json({"webhooks": found, "next_cursor": None})
