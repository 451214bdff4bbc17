"""DELETE /minds/{mind_id}/webhooks/{webhook_id} — unsubscribe (queued events are dropped)."""

from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import subscriptions


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage webhooks")
    subscriptions.delete(owner, request.path("mind_id"), request.path("webhook_id"))
    return Response.empty()
