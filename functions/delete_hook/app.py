"""DELETE /minds/{mind_id}/hooks/{hook_id} — revoke an inbound hook at once."""

from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import hooks


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage hooks")
    hooks.delete_hook(owner, request.path("mind_id"), request.path("hook_id"))
    return Response.empty()
