"""GET /minds/{mind_id}/webhooks/{webhook_id}/deliveries — recent attempts, newest first."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, endpoint
from synapse.webhooks import delivery_log

LIMIT_DEFAULT, LIMIT_MAX = 50, 100


@endpoint
def handler(request: Request) -> Response:
    owner = request.principal.require_user("manage webhooks")
    limit = request.query_int("limit", LIMIT_DEFAULT, 1, LIMIT_MAX)
    found = delivery_log.list_deliveries(owner, request.path("mind_id"), request.path("webhook_id"), limit)
    return Response.json({"deliveries": found})
