"""POST /minds/{mind_id}/webhooks — subscribe an HTTPS endpoint to the mind's events (secret shown once)."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import bodies, subscriptions


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage webhooks")
    mind_id = request.path("mind_id")
    created = subscriptions.create(owner, mind_id, request.body(bodies.WebhookWrite))
    return Response.json(created, 201, {"Location": f"/minds/{mind_id}/webhooks/{created['id']}"})
