"""DELETE /minds/{mind_id}/webhooks/{webhook_id} — unsubscribe (queued events are dropped)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import subscriptions


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage webhooks")
    subscriptions.delete(owner, request.path("mind_id"), request.path("webhook_id"))
    return Response.empty()
