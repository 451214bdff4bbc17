"""PATCH /minds/{mind_id}/webhooks/{webhook_id} — change url, events or enabled."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import bodies, subscriptions


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage webhooks")
    patch = request.body(bodies.WebhookPatch)
    updated = subscriptions.update(owner, request.path("mind_id"), request.path("webhook_id"), patch)
    return Response.json(updated)
