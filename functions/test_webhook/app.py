"""POST /minds/{mind_id}/webhooks/{webhook_id}/test — send a signed `ping` now; the outcome."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import delivery


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage webhooks")
    return Response.json(delivery.send_test(owner, request.path("mind_id"), request.path("webhook_id")))
