"""GET /minds/{mind_id}/hooks — the mind's inbound hooks, without secrets."""

from synapse.api.hooks import base_url
from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import hooks


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage hooks")
    listed = hooks.list_hooks(owner, request.path("mind_id"), base_url(request))
    return Response.json({"hooks": listed, "next_cursor": None})
